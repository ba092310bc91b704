"""What every command group shares: the consoles and the one way to fail."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a user-facing error and exit (2: bad input)."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)  # messages name [tables]
    raise typer.Exit(code)


def lazy(name: str) -> ModuleType:
    """A module that is imported on first attribute access, so that
    `idlewave --help` does not load numpy, polars or scipy.

    It is imported the ordinary way, then: a Ctrl-C in the middle undoes the
    import (the stdlib's LazyLoader would leave a half-initialised module in
    sys.modules, and everything importing it later would meet "module
    'polars' has no attribute 'DataFrame'")."""
    if name in sys.modules:
        return sys.modules[name]
    return _Lazy(name)


class _Lazy(ModuleType):
    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self.__name__), attr)


def print_json(data, indent: int | None = 2, **kw) -> None:
    """Prints `data` as valid JSON on stdout: a NaN or an infinity is null,
    with a warning on stderr naming where (results.json_text)."""
    from idlewave.results import json_text

    print(json_text(data, indent, warn=lambda m: err.print(f"[yellow]warning:[/] {escape(m)}", highlight=False,
                                                          soft_wrap=True), **kw), flush=True)
