from idlewave.cli import main

main()
