"""Each implementation timed in a process of its own, the others stopped meanwhile.

In one process the thread pools of the implementations meet: two OpenMP runtimes (torch's
and Numba's) slow each other, and the setting that keeps them apart (OMP_WAIT_POLICY=PASSIVE,
attncore.bench.THREAD_ENV) puts every OpenMP worker to sleep between the untimed and the
timed call, so a short timed call can start on fewer threads than it asked for while the
others wake (benchmarks/NOTES.md has the measurements).

So each implementation gets a worker process, spawned with OMP_WAIT_POLICY=ACTIVE
(WORKER_ENV): OpenMP's workers spin between calls, as the pools of TBB (OpenVINO) and ONNX
Runtime do by default, and no call pays a wake-up. A spinning pool must not take a core
from another implementation's call, so every worker is stopped (SIGSTOP) except while it
prepares or times its own call. The harness still orders the rounds
(attncore.bench.stopwatch.rounds): it wakes one worker at a time for a timed call (the pause,
the untimed warm-up calls and the timed call, all in the worker).

A worker is stopped most of the time, and a stopped process ignores the SIGTERM that ends
a daemon process: so on Linux each worker asks the kernel for SIGKILL when the harness
ends, however it ends (Ctrl-C, kill, a crash), instead of staying stopped with its arrays.
"""
import atexit
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DESCRIPTION = ("each implementation timed in a worker process of its own, the others stopped meanwhile "
               "(attncore.bench.isolated)")
WORKER_ENV = {"OMP_WAIT_POLICY": "ACTIVE"}  # the workers' environment, over the caller's
_WORKERS = {}  # implementation name -> _Worker


class Failed(Exception):
    """make(*args) raised in the worker; description: the exception's type and message."""

    def __init__(self, description):
        super().__init__(description)
        self.description = description


def describe(error: BaseException) -> str:
    """'Type: message' of an exception, the worker's own for Failed."""
    return error.description if isinstance(error, Failed) else f"{type(error).__name__}: {error}"


class Call:
    """A prepared call in a worker: result() (computed once, at preparation), details, and
    timed_in_worker(pause, warmup) -> (seconds, CPU seconds of the worker process) of one timed
    call (stopwatch.timed, run in the worker). The CPU seconds count the pool's spinning too:
    with OMP_WAIT_POLICY=ACTIVE
    an OpenMP pool shows about its thread count over the wall time even when one thread did
    the work."""

    def __init__(self, worker, out, details):
        self._worker, self._out, self.details = worker, out, details

    def result(self) -> "np.ndarray":
        return self._out

    def timed_in_worker(self, pause: float, warmup: float) -> tuple[float, float]:
        return self._worker.ask("time", pause, warmup)


def prepare(name: str, make, *args) -> Call:
    """make(*args) -> a peers.Call, run in the worker process of implementation `name` (started
    on first use): a Call that times it there. Raises Failed if make or the call raises."""
    if name not in _WORKERS:
        _WORKERS[name] = _Worker()
    worker = _WORKERS[name]
    out, details = worker.ask("prepare", make, args)
    return Call(worker, out, details)


def close() -> None:
    """End every worker process (the harness calls it at the end; atexit too)."""
    while _WORKERS:
        _WORKERS.popitem()[1].close()


atexit.register(close)


class _Worker:
    def __init__(self):
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no pool of ours inherited
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, os.getpid()), daemon=True)
        with _environment(WORKER_ENV):  # read by the runtimes as the worker loads them
            self._process.start()
        child.close()

    def ask(self, *message):
        """Send message, wait for the reply; the worker runs only meanwhile."""
        self._signal(signal.SIGCONT)
        try:
            self._connection.send(message)
            status, *reply = self._connection.recv()
        finally:
            self._stop()
        if status == "failed":
            raise Failed(reply[0])
        return reply[0] if len(reply) == 1 else tuple(reply)

    def close(self) -> None:
        self._signal(signal.SIGCONT)
        try:
            self._connection.send(None)
        except OSError:  # the worker is gone already (it died, or never started)
            pass
        self._process.join(timeout=10)
        self._connection.close()

    def _signal(self, number):
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._process.pid, number)

    def _stop(self):
        """SIGSTOP, and wait until every thread of the worker has stopped (not when it is gone)."""
        if self._process.is_alive():
            self._signal(signal.SIGSTOP)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._process.pid, os.WUNTRACED)


@contextlib.contextmanager
def _environment(values):
    """os.environ with values set, for the processes started inside (then as it was)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _numpy_owned(args):
    """args with each array copied into memory NumPy allocates, as the caller's arrays are.

    An array unpickled from the pipe wraps a buffer that Python allocated. Linux backs
    NumPy's large allocations with huge pages (NumPy asks with madvise where transparent
    huge pages are set to "madvise") but not that buffer, and a kernel streaming such an
    array runs slower than on the caller's own copy."""
    import numpy as np

    return tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent ends


def _die_with_parent(parent):
    """On Linux, SIGKILL this process when the process that started it (pid `parent`) ends:
    SIGKILL ends a stopped process too. (Linux sends it when the starting thread ends: the
    harness starts its workers from its main thread.) Elsewhere nothing: close() and atexit
    end the workers."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # libc, already loaded in the process
    if os.getppid() != parent:  # the parent ended before the request: nobody is left to stop us
        os._exit(1)


def _serve(connection, parent):
    """The worker's loop: ("prepare", make, args) keeps make(*args) as the call and replies
    with its result and details; ("time", pause, warmup) replies with the seconds and CPU seconds
    of one timed call (stopwatch.timed); None ends it. parent: the harness's pid (_die_with_parent)."""
    from . import stopwatch

    _die_with_parent(parent)
    call = None
    while (message := connection.recv()) is not None:
        operation, *arguments = message
        try:
            if operation == "prepare":
                make, args = arguments
                call = None  # the previous call and its arrays go before the next is prepared
                call = make(*_numpy_owned(args))
                reply = ("ok", call.result(), call.details)
            else:
                cpu = []
                pause, warmup = arguments
                reply = ("ok", stopwatch.timed(call, pause, cpu=cpu, warmup=warmup), cpu[0])
        except Exception as error:  # reported where the harness makes a row of it
            reply = ("failed", f"{type(error).__name__}: {error}")
        connection.send(reply)
