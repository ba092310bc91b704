"""Writing results so that nothing already written is lost.

Every file is written under a temporary name in its final directory and then
renamed into place (an atomic replace on POSIX). A result directory is
written whole (:func:`write_dir`): its files go into a temporary sibling
directory, which then takes the final name, so a reader finds the old
complete set, the new complete set or (for an instant) none, never a mix of
two runs; temporary names are cleaned up on failure. Only an empty directory
or an earlier result is replaced, and a file only by a file, never a device.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class ResultsError(OSError):
    """A result that cannot be written; the message says where and why."""


class RefusedOutput(ResultsError):
    """An output idlewave will not write in place of what is there (a user's
    directory, a device, a directory where a file goes): a refusal, exit 2,
    where a write that failed is exit 1 (`exit_code`)."""


def exit_code(e: OSError) -> int:
    """The command line's exit code for an output that was not written: 2 for
    a refusal, 1 for a write that failed (a read-only or full disk)."""
    return 2 if isinstance(e, RefusedOutput) else 1


class UnreadableResult(ResultsError):
    """A result file that exists but cannot be read (truncated, not JSON or
    Parquet, not what this package writes); the message names the file. The
    command line reports it as an error with exit code 1, never a traceback."""


def read_json(path: Path) -> dict:
    """A result's JSON object (summary.json, scenario.json, explain.json, …).
    A missing file is FileNotFoundError (the caller knows whether it is
    optional); anything else wrong is UnreadableResult naming the file."""
    from idlewave.inputs import read_bytes

    try:
        data = json.loads(read_bytes(path, "result file"))
    except FileNotFoundError:
        raise
    except OSError as e:  # read_bytes' own messages name the file already
        raise UnreadableResult(str(e) if e.strerror is None else f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:  # position only: messages never quote a file's contents
        raise UnreadableResult(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}); "
                               "the file is damaged or was not written by idlewave") from None
    except ValueError:  # not UTF-8
        raise UnreadableResult(f"{path}: not valid JSON (not UTF-8 text)") from None
    if not isinstance(data, dict):
        raise UnreadableResult(f"{path}: holds a JSON {type(data).__name__}, not the object idlewave writes")
    return data


def read_parquet(path: Path, columns: list[str] | None = None):
    """A result's Parquet table as a polars DataFrame. A missing file is
    FileNotFoundError; a truncated or foreign one UnreadableResult naming it."""
    import polars as pl

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if not path.is_file():  # polars would read a directory's files, or wait on a FIFO
        raise UnreadableResult(f"{path}: not a regular file")
    try:
        return pl.read_parquet(path, columns=columns, glob=False)  # a path is a name, never a pattern
    except OSError as e:
        raise UnreadableResult(f"{path}: cannot read: {e.strerror or e}") from None
    except pl.exceptions.PolarsError as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnreadableResult(f"{path}: not a readable Parquet table ({reason})") from None


def cannot_write(path: Path, e: OSError, what: str = "cannot write") -> ResultsError:
    """The one error for a write that failed (a read-only or full disk, a
    missing permission): `path: what: reason`, with the reason (strerror)
    kept as the error's strerror for callers that wrap it."""
    if isinstance(e, ResultsError) and e.strerror is None:
        return e  # already says what and where
    reason = e.strerror or str(e) or type(e).__name__
    error = ResultsError(f"{path}: {what}: {reason}")
    error.strerror = reason
    return error


def _makedirs(d: Path) -> list[Path]:
    """Creates `d` and its missing parents; returns those it created, deepest first."""
    missing = []
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    created: list[Path] = []
    try:
        for m in reversed(missing):
            m.mkdir(exist_ok=True)
            created.insert(0, m)
    except BaseException:
        _remove_empty(created)
        raise
    return created


def _remove_empty(dirs: list[Path]) -> None:
    for d in dirs:  # deepest first: only what this write created, and only while empty
        try:
            d.rmdir()
        except OSError:
            break


def check_writable(path: Path) -> None:
    """Raises the ResultsError a write to `path` would end in when its
    nearest existing directory refuses new entries or bytes (a read-only or
    full disk, no permission), writing and removing a one-byte probe there:
    for commands that would otherwise find out after a long run or only
    inside workers."""
    d = Path(path).parent
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".idlewave-probe.", dir=d)
        try:
            os.write(fd, b"\0")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise cannot_write(Path(path), e) from None


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Lets `write` fill a temporary file beside `path`, then renames it into
    place. Any OSError (a read-only or full disk) becomes a ResultsError
    naming `path`, with nothing left behind: neither the temporary file nor
    the directories created for it."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            # renaming over a device, FIFO or directory would replace it with a file
            raise RefusedOutput(f"{path}: exists and is not a regular file; it is not replaced")
        created = _makedirs(path.parent)
    except OSError as e:
        raise cannot_write(path, e) from None
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 is for the temporary name only
        os.replace(tmp, path)
        note_in_manifest(path)
    except BaseException as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        _remove_empty(created)
        if isinstance(e, OSError):
            raise cannot_write(path, e) from None
        raise


def write_file(path: Path, write: Callable[[Path], None]) -> None:
    """Lets `write` fill a temporary file, then renames it to `path`."""
    _atomic(path, write)


# One look for every figure: set when the first figure module asks for pyplot.
FIGURE_STYLE = {
    "font.size": 9,
    "axes.titlesize": "medium",
    "axes.labelsize": "medium",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "legend.fontsize": "small",
    "xtick.labelsize": "small",
    "ytick.labelsize": "small",
    "figure.constrained_layout.use": False,
    "text.usetex": False,  # a user's matplotlibrc must not send names through LaTeX
}


#: The colours of series, in the order they are handed out (Tableau 10: told
#: apart in colour-blind vision and in greyscale print, mostly).
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")

#: Series this package names itself, each with its colour in every figure:
#: what bounds a run (explain's causes; the timeline's noise detours are
#: the "noise" cause) and what ended a wait.
FIXED_SERIES = {
    "compute": "#4e79a7", "cpu_overhead": "#f28e2b", "nic_gap": "#76b7b2", "wire_latency": "#59a14f",
    "penalty": "#9c755f", "noise": "#b07aa1", "memory_contention": "#ff9da7",
    "late_sender": "#e15759", "late_receiver": "#edc948", "collective": "#4b4b8f", "other": "#bab0ac",
}

_series: dict[str, str] = {}


def series_colour(name) -> str:
    """The one colour of the series `name` (a strategy, a run, a dataset, a
    regime, a cause) in every figure this process draws: a name of the
    package's own (FIXED_SERIES) has its colour; any other name takes the
    next colour of PALETTE the first time it is drawn and keeps it (after
    ten names the colours repeat, for other names only)."""
    name = str(name)
    if name in FIXED_SERIES:
        return FIXED_SERIES[name]
    if name not in _series:
        _series[name] = PALETTE[len(_series) % len(PALETTE)]
    return _series[name]


def pyplot():
    """matplotlib.pyplot on the file backend, with FIGURE_STYLE."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(FIGURE_STYLE)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, dpi: int = 150, also: tuple[str, ...] = ()) -> Path:
    """Writes a matplotlib figure as PNG (and in the formats `also`, beside
    it) under unpredictable temporary names, renames each into place and
    closes the figure."""
    literal_text(fig)
    write_file(path, functools.partial(_savefig, fig, "png", dpi))
    for fmt in also:
        write_file(path.with_suffix(f".{fmt}"), functools.partial(_savefig, fig, fmt, dpi))
    _close(fig, str(path))
    return path


def literal_text(fig) -> None:
    """Every text a figure shows from words (titles, axis labels, legends,
    notes, names on ticks: run directories, --name labels, strategies) is
    drawn as written, never parsed as mathtext, where `$x^$` would end the
    figure in a ParseFatalException and `$x$` turn into math. Numbers a tick
    formatter writes (10^-3 on a log axis, an offset) keep their math. No
    figure of this package asks for mathtext in words."""
    from matplotlib.text import Text
    from matplotlib.ticker import EngFormatter, LogFormatter, PercentFormatter, ScalarFormatter

    numeric = (ScalarFormatter, LogFormatter, EngFormatter, PercentFormatter)  # names given as tick labels are words
    formatted = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatted.add(id(axis.get_offset_text()))
            for ticks, formatter in ((axis.get_major_ticks(), axis.get_major_formatter()),
                                     (axis.get_minor_ticks(), axis.get_minor_formatter())):
                if isinstance(formatter, numeric):
                    formatted.update(id(t) for tick in ticks for t in (tick.label1, tick.label2))
    for text in fig.findobj(Text):
        if id(text) not in formatted:
            text.set_parse_math(False)


def _savefig(fig, fmt: str, dpi: int, path: Path) -> None:
    fig.savefig(path, dpi=dpi, format=fmt)


def figure_png(fig, dpi: int = 100) -> bytes:
    """A figure as PNG bytes (for pages that embed it); closes the figure."""
    import io

    literal_text(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    _close(fig, "embedded figure " + repr(fig.axes[0].get_title() if fig.axes else ""))
    return buf.getvalue()


def figure_svg(fig) -> str:
    """A figure as an SVG document (for pages that show it inline, e.g. the
    report); closes the figure. Its text is drawn as paths (the page looks
    the same without matplotlib's fonts) and it carries no date, so the same
    figure is the same text."""
    import io

    import matplotlib

    literal_text(fig)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "idlewave"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    _close(fig, "embedded figure " + repr(fig.axes[0].get_title() if fig.axes else ""))
    return buf.getvalue()


def _close(fig, name: str) -> None:
    """Closes a written figure, first checking it when IDLEWAVE_CHECK_FIGURES
    is set (see figure_check)."""
    import matplotlib.pyplot as plt

    if os.environ.get("IDLEWAVE_CHECK_FIGURES"):
        from idlewave import figure_check

        for line in figure_check.problems(fig) or ["ok"]:
            print(f"figure check: {name}: {line}", file=sys.stderr)
    plt.close(fig)


def time_unit(seconds: float) -> tuple[float, str]:
    """The scale and unit (s, ms, µs or ns) in which `seconds`, the largest
    value of an axis, reads with one to three digits before the point."""
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if seconds * scale >= 1:
            return scale, unit
    return 1e9, "ns"


def seconds(value: float, digits: int = 3) -> str:
    """A duration with an SI prefix: 1.23 ms, 845 µs, −2.1 s (`digits`
    significant); the command line's one formatter, idlewave.units.fmt_time."""
    from idlewave.units import fmt_time

    return fmt_time(value, digits)


def finite(data):
    """`data` with every NaN or infinity replaced by None (JSON has no such numbers)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def not_finite(data, where: str = "") -> list[str]:
    """Where `data` holds a NaN or an infinity (a dotted path per value), which
    `finite` turns into null."""
    if isinstance(data, float):
        return [] if math.isfinite(data) else [where or "(the value)"]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in not_finite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(data, (list, tuple)):
        return [p for i, v in enumerate(data) for p in not_finite(v, f"{where}[{i}]")]
    return []


class NonFiniteWarning(UserWarning):
    """A result held a NaN or an infinity (an overflow or an undefined
    result), written as null: JSON has no such numbers."""


def _non_finite_message(bad: list[str]) -> str:
    more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
    return f"not a finite number (an overflow or an undefined result), given as null: {', '.join(bad[:5])}{more}"


def json_text(data, indent: int | None = None, warn: Callable[[str], None] | None = None, **kw) -> str:
    """`data` as valid JSON (RFC 8259 has no NaN or Infinity): every
    non-finite number is null, and `warn` is told which ones."""
    bad = not_finite(data)
    if bad and warn is not None:
        warn(_non_finite_message(bad))
    return json.dumps(finite(data), indent=indent, allow_nan=False, **kw)


def write_json(path: Path, data: dict) -> None:
    """Writes `data` atomically as valid JSON; a NaN or an infinity is
    written as null and said, with the file and its keys, as a
    NonFiniteWarning (the command line prints it)."""
    bad = not_finite(data)
    if bad:
        warnings.warn(NonFiniteWarning(f"{path}: {_non_finite_message(bad)}"), stacklevel=2)

    def write(tmp: Path) -> None:
        with open(tmp, "w") as f:
            json.dump(finite(data), f, indent=2, sort_keys=True, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())

    _atomic(path, write)


def write_parquet(path: Path, frame) -> None:
    """Writes a polars DataFrame atomically."""

    def write(tmp: Path) -> None:
        try:
            frame.write_parquet(tmp)
        except OSError:
            raise
        except Exception as e:  # polars reports a failed write (a full disk) as its own error
            code = re.search(r"\(os error (\d+)\)", str(e))
            if code is None:
                raise
            raise OSError(int(code[1]), os.strerror(int(code[1]))) from None

    _atomic(path, write)


def write_text(path: Path, text: str) -> None:
    def write(tmp: Path) -> None:
        tmp.write_text(text)

    _atomic(path, write)


#: Files that mark a directory as a result this package wrote (a run's
#: summary, a failed sweep point's error): only such a directory, or an
#: empty one, is replaced by a new result.
RESULT_MARKERS = ("summary.json", "error.json", "validate.json")


#: A result directory's list of what idlewave wrote into it, one name per
#: line (`write_dir` writes it, a file written beside them later, such as
#: explain.json or report.html, is added): a new result replaces the
#: directory only while it holds nothing else, so that a file a user put
#: there, or a result written inside it, is never deleted with it.
MANIFEST = ".idlewave-result"


def _manifest(d: Path) -> set[str] | None:
    try:
        return set((d / MANIFEST).read_text().split("\n")) - {""}
    except OSError:  # a result written before there were manifests, or none
        return None


def note_in_manifest(path: Path) -> None:
    """`path`, just written into a result directory, added to its manifest."""
    names = _manifest(path.parent)
    if names is not None and path.name not in names:
        with open(path.parent / MANIFEST, "a") as f:
            f.write(path.name + "\n")


def unreplaceable(out: Path) -> str | None:
    """Why a new result may not take the place of `out`, or None: it must be
    absent, an empty directory or a result written before that holds only
    what idlewave wrote there (`MANIFEST`), so that nothing else a user keeps
    there is ever deleted."""
    out = Path(out)
    if not out.exists():
        return None
    if not out.is_dir():
        return f"{out}: exists and is not a directory"
    if any((out / m).is_file() for m in RESULT_MARKERS):
        ours = _manifest(out)
        theirs = [] if ours is None else sorted(p.name for p in out.iterdir() if p.name not in ours | {MANIFEST})
        if theirs:
            return (f"{out}: is a result that also holds {theirs[0]!r}{' among others' if len(theirs) > 1 else ''}, "
                    "which idlewave did not write there, and a result replaces its directory whole: move it out, or "
                    "choose another directory")
        return None
    other = next(out.iterdir(), None)
    if other is None:
        return None
    return (f"{out}: is not an idlewave result directory (it holds {other.name!r}, among others) and a result "
            "replaces its directory whole; choose a new or empty directory")


def write_dir(out: Path, fill: Callable[[Path], None]) -> Path:
    """Lets `fill` write a result directory's files into a fresh temporary
    directory beside `out`, then puts it in place of `out` (replacing a
    previous result or an empty directory; see `unreplaceable`)."""
    out = Path(out)
    if (why := unreplaceable(out)) is not None:
        raise RefusedOutput(why)
    created: list[Path] = []
    try:
        created = _makedirs(out.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    except OSError as e:
        _remove_empty(created)
        raise cannot_write(out, e, "cannot create the result directory") from None
    old = None
    try:
        fill(tmp)
        (tmp / MANIFEST).write_text("".join(f"{n}\n" for n in sorted(p.name for p in tmp.iterdir())))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 is for the temporary name only
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.replace(out, old / "previous")
        os.replace(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not out.exists():
            os.replace(old / "previous", out)  # put the previous result back
        if not out.exists():
            _remove_empty(created)
        raise cannot_write(out, e, "cannot write results") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return out
