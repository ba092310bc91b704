from idlewave.interrupts import exit_at_once

exit_at_once()  # until main() runs, as for the console script (idlewave.interrupts)

from idlewave.cli import main  # noqa: E402

main()
