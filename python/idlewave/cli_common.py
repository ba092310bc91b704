"""What every command group shares: the consoles and the one way to fail."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a user-facing error and exit (2: bad input)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
