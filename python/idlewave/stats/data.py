"""Timing data T[p, k] (rank × iteration) from Parquet, CSV or NumPy, long
(rank, iteration, time) or wide (one row per rank), or an idlewave result
directory; checked for what the statistics need."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from idlewave.inputs import describe_columns


class DataError(ValueError):
    """Timing data that cannot be analysed; the message says why."""


def check(T: np.ndarray, source: str = "data") -> np.ndarray:
    if np.iscomplexobj(T):
        raise DataError(f"{source}: expected real times, got an array of {np.asarray(T).dtype}")
    try:
        T = np.asarray(T, dtype=float)
    except (ValueError, TypeError):
        raise DataError(f"{source}: expected numbers, got an array of {np.asarray(T).dtype}") from None
    if T.ndim == 1:
        T = T[None, :]
    if T.ndim != 2 or T.size == 0:
        raise DataError(f"{source}: expected a ranks × iterations matrix, got shape {T.shape}")
    bad = np.argwhere(~np.isfinite(T))
    if bad.size:
        p, k = bad[0]
        raise DataError(f"{source}: {len(bad)} missing or non-finite time(s), first at rank {p}, iteration {k}")
    neg = np.argwhere(T < 0)
    if neg.size:
        p, k = neg[0]
        raise DataError(f"{source}: negative time {float(T[p, k]):g} at rank {p}, iteration {k}")
    return T


def from_long(frame: pl.DataFrame, source: str, time: str = "time") -> np.ndarray:
    for c in ("rank", "iteration", time):
        if c not in frame.columns:
            raise DataError(f"{source}: missing column {c!r} ({describe_columns(frame.columns)})")
    for c in ("rank", "iteration", time):
        missing = frame[c].is_null().arg_true()
        if missing.len():
            raise DataError(f"{source}: data row {missing[0] + 1} has no {c!r} ({missing.len()} row(s) without one)")
    ranks = frame["rank"].n_unique()
    iters = frame["iteration"].n_unique()
    if frame.height != ranks * iters or frame.select(["rank", "iteration"]).is_duplicated().any():
        raise DataError(f"{source}: ragged data: {frame.height} rows for {ranks} ranks × {iters} iterations "
                        "(every rank needs every iteration exactly once)")
    frame = frame.sort(["rank", "iteration"])
    return check(frame[time].to_numpy().reshape(ranks, iters), source)


def _read_csv(p: Path) -> pl.DataFrame:
    """A CSV; when every column name is a number, the file has no header and
    its first line is data (polars would take it for the header), unless
    the names count the columns (0, 1, 2, … or 1, 2, 3, …: iteration numbers)."""
    frame = pl.read_csv(p, comment_prefix="#", glob=False)
    names = frame.columns
    counted = names in ([str(k) for k in range(len(names))], [str(k + 1) for k in range(len(names))])
    if names and not counted and all(_is_number(c) for c in names):
        frame = pl.read_csv(p, comment_prefix="#", has_header=False, glob=False)
    return _without_trailing_blank_lines(frame)


def _without_trailing_blank_lines(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame without the all-empty rows at its end (blank lines an
    editor leaves, which polars reads as rows of nulls)."""
    if not frame.width:
        return frame
    filled = (~pl.all_horizontal(pl.all().is_null())).arg_true()
    last = frame.select(filled).to_series()
    return frame.head(int(last[-1]) + 1 if last.len() else 0)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


#: The largest NumPy array of timings read (float64: 134 million samples, far
#: past what the regime fit handles in reasonable time).
MAX_NPY_BYTES = 1 << 30


def _check_npy_size(p: Path, src: str) -> None:
    """Refuses, from its header alone, a .npy file whose array would be more
    than MAX_NPY_BYTES, or that holds fewer bytes than its header says (cut
    short, or sparse: reading it would take the memory and give zeros)."""
    with open(p, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read_header(f, max_header_size=10_000)
        except (ValueError, OSError, EOFError) as e:
            raise DataError(f"{src}: not a readable NumPy array of numbers ({type(e).__name__})") from None
        start = f.tell()
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    dims = " × ".join(map(str, shape)) or "a scalar"
    if need > MAX_NPY_BYTES:
        raise DataError(f"{src}: its header says {dims} values of {dtype.itemsize} bytes, {need / 2**30:.3g} GiB; at most "
                        f"{MAX_NPY_BYTES >> 30} GiB of timings are read")
    if p.stat().st_size - start < need:
        raise DataError(f"{src}: cut short: its header says {dims} values ({need} bytes) and the file holds "
                        f"{p.stat().st_size - start}")


def load(path: str | Path, timer: str | None = None) -> np.ndarray:
    """T[p, k] from a file or a result directory: its `timer` (which must
    exist when given), else `matvec` if it has one, else `iteration`."""
    p = Path(path)
    src = str(p)
    if p.is_dir():
        f = p / "timers.parquet"
        if not f.exists():
            raise DataError(f"{src}: not a result directory (no timers.parquet)")
        frame = pl.read_parquet(f, glob=False)
        timers = [c[:-2] for c in frame.columns if c.endswith("_s")]
        if timer is None:
            timer = "matvec" if "matvec" in timers else "iteration"
        if timer not in timers:
            raise DataError(f"{src}: no timer {timer!r} in the results (it has: {', '.join(timers) or 'none'})")
        col = f"{timer}_s"
        return from_long(frame, src, col)
    if not p.exists():
        raise DataError(f"{src}: no such file")
    if not p.is_file():  # a FIFO would be waited on forever
        raise DataError(f"{src}: timings must be a regular file or a result directory")
    if timer is not None and p.suffix == ".npy":
        raise DataError(f"{src}: --timer {timer!r} applies to result directories and long tables with a '{timer}_s' column")
    if p.suffix == ".npy":
        _check_npy_size(p, src)
        try:  # never unpickle what a file says
            array = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise DataError(f"{src}: not a readable NumPy array of numbers ({type(e).__name__})") from None
        except MemoryError:
            raise DataError(f"{src}: {p.stat().st_size / 2**30:.3g} GiB, too large to load into memory") from None
        return check(array, src)
    try:
        frame = pl.read_parquet(p, glob=False) if p.suffix == ".parquet" else _read_csv(p)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise DataError(f"{src}: cannot read it as {'Parquet' if p.suffix == '.parquet' else 'CSV'} ({type(e).__name__})") from None
    except BaseException as e:  # polars raises a PanicException (a BaseException) on some corrupt files
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise DataError(f"{src}: cannot read it ({type(e).__name__})") from None
    if {"rank", "sample", "ns"} <= set(frame.columns) and "iteration" not in frame.columns:
        # `measure noise`'s fwq.parquet: FWQ samples per rank, in nanoseconds
        frame = frame.rename({"sample": "iteration"}).with_columns((pl.col("ns") * 1e-9).alias("time"))
    if timer is not None and f"{timer}_s" not in frame.columns:
        raise DataError(f"{src}: no column '{timer}_s' for --timer {timer!r} (columns: {', '.join(frame.columns)})")
    if {"rank", "iteration"} <= set(frame.columns):
        names = (f"{timer}_s",) if timer is not None else ("time", "time_s", "matvec_s")
        time = next((c for c in names if c in frame.columns), None)
        if time is None:
            timers = [c[:-2] for c in frame.columns if c.endswith("_s")]
            hint = f", or --timer naming one of its timers ({', '.join(timers)})" if timers else ""
            raise DataError(f"{src}: a long table needs a 'time' column{hint}")
        return from_long(frame, src, time)
    if "rank" in frame.columns:
        # wide with the rank ids in a column: rows in rank order, the ids not times
        if frame["rank"].n_unique() != frame.height:
            raise DataError(f"{src}: a wide table's 'rank' column must name each rank once")
        frame = frame.sort("rank").drop("rank")
    # wide: every column numeric, one row per rank
    try:
        return check(frame.to_numpy().astype(float), src)
    except (ValueError, TypeError):
        raise DataError(f"{src}: expected numbers in every column of a wide table (one row per rank)") from None
