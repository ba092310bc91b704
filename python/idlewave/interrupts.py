"""Ctrl-C at any moment of a command: exit code 130 and one line, never a
traceback or a panic.

A command goes through three stages, each with its own answer to SIGINT:

- loading (from the console script's first import of idlewave until
  `idlewave.cli.main` starts): nothing has been written, so the process
  ends at once (`exit_at_once`);
- running: Ctrl-C is Python's KeyboardInterrupt, which the engine's loops
  also raise (held back while the import machinery runs: `_interrupt`); the commands that keep something say what (sweep: the finished
  points), every other ends with exit code 130 (Typer's answer to an
  interrupt, with the line `main` adds);
- finishing (after the command's answer, while the interpreter shuts down
  Dask and flushes files): the process ends at once again.

Two things must never meet an interrupt half-way, because nothing could
clean up after them: a module's first import (a lazily loaded module left
half-initialised says "module 'polars' has no attribute 'DataFrame'" later:
`idlewave.cli.common.lazy` imports for real, which an interrupt undoes), and
the engine's first look-up of numpy's C API (Python code run from Rust, which
panics when it fails: `held` keeps Ctrl-C back while it happens, see
`idlewave.simulation`), and polars' first import, whose Rust start-up panics
on an interrupt too (`hold_during_import`, installed by the command line).

Only stdlib modules here: this runs before anything else is imported.
"""

from __future__ import annotations

# os and sys are loaded with the interpreter, and _signal is built in: this
# module takes no time to import (a Ctrl-C during an import of its own could
# not be answered)
import _signal
import os
import sys

#: What an interrupted command says (stderr), however it was interrupted.
MESSAGE = "error: interrupted"


def _exit_now(signum, frame) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a stream interrupted mid-write, or closed: the line below still goes out
            pass
    try:
        os.write(2, (MESSAGE + "\n").encode())
    finally:
        os._exit(128 + signum)  # 130 for Ctrl-C, 143 for SIGTERM


def _interrupt(signum, frame) -> None:
    """KeyboardInterrupt, as Python's own handler raises it, except inside
    the import machinery: there it can land in a weakref callback (a module
    lock's), which Python reports as "Exception ignored" with a traceback
    and then goes on as if Ctrl-C had never been pressed. There it is asked
    again a millisecond later (SIGALRM), until it is outside."""
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        _signal.signal(_signal.SIGALRM, _interrupt)
        _signal.setitimer(_signal.ITIMER_REAL, 0.001)
        return
    if signum == _signal.SIGALRM:
        _signal.signal(_signal.SIGALRM, _signal.SIG_DFL)
    raise KeyboardInterrupt


def _swap(expected: tuple, handler) -> None:
    """Installs `handler` for SIGINT if the current one is one of `expected`
    (never over a handler somebody else chose, nor over SIGINT ignored)."""
    try:
        if any(_signal.getsignal(_signal.SIGINT) is e for e in expected):
            _signal.signal(_signal.SIGINT, handler)
    except ValueError:  # not the main thread: signals are the main thread's business
        pass


def exit_at_once() -> None:
    """From now on Ctrl-C ends the process at once with exit code 130 and
    `MESSAGE`, and SIGTERM with 143."""
    _swap((_signal.default_int_handler, _interrupt), _exit_now)
    try:
        if _signal.getsignal(_signal.SIGTERM) in (_signal.SIG_DFL, _terminate):
            _signal.signal(_signal.SIGTERM, _exit_now)
    except ValueError:  # not the main thread
        pass


def end_interrupted() -> None:
    """Ends the process as `exit_at_once`'s handler would: for a Ctrl-C (or
    SIGTERM) raised as KeyboardInterrupt just before that handler was in
    place."""
    _exit_now(_signal.SIGTERM if terminated() else _signal.SIGINT, None)


def raise_interrupts() -> None:
    """From now on Ctrl-C raises KeyboardInterrupt (undoes `exit_at_once`),
    and SIGTERM is answered as Ctrl-C is (`terminated`)."""
    _swap((_exit_now,), _interrupt)
    try:
        if _signal.getsignal(_signal.SIGTERM) in (_signal.SIG_DFL, _exit_now):
            _signal.signal(_signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        pass


#: Whether the command was sent SIGTERM (`kill`, `timeout`, a batch system's end of job).
_terminated = False


def _terminate(signum, frame) -> None:
    """SIGTERM as Ctrl-C: the command cleans up (a result half written, an
    MPI job it started) and ends with exit code 143 (`terminated`); a second
    SIGTERM ends it at once, as by default."""
    global _terminated
    _terminated = True
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    handler = _signal.getsignal(_signal.SIGINT)
    if callable(handler):  # Ctrl-C's own answer (or `held`'s, which gives it once its block ends)
        handler(_signal.SIGINT, frame)
    else:
        # Ctrl-C ignored (a command a script started with `&`, or a CI job's): SIGTERM is answered
        # all the same (sweep workers, which ignore Ctrl-C for their command, never install this)
        _interrupt(signum, frame)


def terminated() -> bool:
    """Whether an interrupt was SIGTERM: its exit code is 143, not 130."""
    return _terminated


def ignore_interrupts() -> None:
    """From now on this process ignores Ctrl-C (a worker the command started:
    a Ctrl-C at the terminal signals every process of the command, and the
    command itself answers it, stopping its workers)."""
    _swap((_signal.default_int_handler, _interrupt), _signal.SIG_IGN)


class held:
    """`with held():` Ctrl-C and SIGTERM held back while the block runs, and
    each acted on (by its handler in place before) as soon as it ends: a
    SIGTERM as SIGTERM, so that it is answered also where Ctrl-C is ignored
    (a command started with `&` by a script, a batch job). An ignored signal
    stays ignored, and both handlers are as before once the block ends, even
    if the block set its own (polars' import does). Outside the main thread,
    nothing changes."""

    def __enter__(self) -> None:
        self.pending: set[int] = set()
        self.before: dict[int, object] = {}
        for signum in (_signal.SIGINT, _signal.SIGTERM):
            try:
                self.before[signum] = _signal.getsignal(signum)
                if self.before[signum] is not _signal.SIG_IGN:
                    _signal.signal(signum, lambda s, frame: self.pending.add(s))
            except ValueError:  # not the main thread
                self.before.clear()
                return

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.before.items():
            _signal.signal(signum, _signal.SIG_DFL if handler is None else handler)
        for signum in (_signal.SIGTERM, _signal.SIGINT):  # SIGTERM's answer (exit 143) first
            if signum in self.pending:
                _signal.raise_signal(signum)  # the handler before answers it now
                return


class Signalled(BaseException):
    """SIGTERM or SIGHUP while a command runs a job it launched (an MPI job),
    raised as Ctrl-C is (`signals_end_the_job`): the command ends the job and
    leaves its output as it was on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class signals_end_the_job:
    """`with signals_end_the_job():` while the block runs, SIGTERM and SIGHUP
    (a closed terminal, which no longer reaches a launcher in its process
    group of its own) raise `Signalled`, once (a second one, while the job is
    being ended, is ignored; SIGKILL is not): the command ends the job it
    started, whether or not Ctrl-C is ignored (a command started with `&`
    from a script ignores it, and SIGTERM is answered as Ctrl-C only where
    Ctrl-C is answered). A signal that is ignored (nohup) stays ignored."""

    def __enter__(self) -> None:
        self.raised: list[int] = []
        self.before: dict[int, object] = {}
        try:
            for s in (_signal.SIGTERM, _signal.SIGHUP):
                if _signal.getsignal(s) is not _signal.SIG_IGN:
                    self.before[s] = _signal.signal(s, self._raise)
        except ValueError:  # not the main thread: signals are the main thread's business
            pass

    def _raise(self, signum, frame) -> None:
        if not self.raised:
            self.raised.append(signum)
            raise Signalled(signum)

    def __exit__(self, *exc: object) -> None:
        for s, h in self.before.items():
            _signal.signal(s, h)

def hold_during_import(*names: str) -> None:
    """From now on Ctrl-C is held back (`held`) while a module of `names` is
    first imported: polars' start-up, Rust code calling back into Python,
    panics when an interrupt arrives in the middle of it."""
    import importlib.abc
    import importlib.machinery

    class Loader(importlib.abc.Loader):
        def __init__(self, inner) -> None:
            self.inner = inner

        def create_module(self, spec):
            return self.inner.create_module(spec)

        def exec_module(self, module) -> None:
            with held():
                self.inner.exec_module(module)

        def __getattr__(self, attr: str):  # resources, source: the real loader's
            return getattr(self.inner, attr)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in names:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = Loader(spec.loader)
            return spec

    sys.meta_path.insert(0, Finder())


__all__ = ["MESSAGE", "exit_at_once", "raise_interrupts", "ignore_interrupts", "held", "hold_during_import",
           "Signalled", "signals_end_the_job"]
