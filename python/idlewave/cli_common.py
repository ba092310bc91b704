"""What every command group shares: the consoles and the one way to fail."""

from __future__ import annotations

import importlib.util
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
    """A module that is imported on first attribute access (the stdlib's
    LazyLoader recipe), so that `idlewave --help` does not load numpy,
    polars or scipy."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, name
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
