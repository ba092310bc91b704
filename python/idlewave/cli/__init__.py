"""The `idlewave` command line: its command names and flags are a contract with users (add, never rename).

A command's module is imported only when the command runs (or when help lists
every command), so that `idlewave loggopsim FILE` does not load the others:
idlewave.cli.root has the table of commands and builds the app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

    app: typer.Typer


def main() -> None:
    from idlewave.cli.root import main as run

    run()


def __getattr__(name: str) -> Any:
    """`app`, every command registered (tests, the reference generator); `_show_warning`."""
    if name == "app":
        from idlewave.cli.root import build

        return build()
    if name == "_show_warning":
        from idlewave.cli.root import _show_warning

        return _show_warning
    raise AttributeError(f"module 'idlewave.cli' has no attribute {name!r}")
