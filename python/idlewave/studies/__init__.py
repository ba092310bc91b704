"""The papers' studies run as published (`idlewave reproduce`) and the demo's headline studies (`idlewave demo`)."""
