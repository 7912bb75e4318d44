"""The harness's worker processes (attncore.bench.isolated): each implementation prepared,
checked and timed in a process of its own, with the same results as in the harness's own
process. No test asserts a wall-clock time."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from attncore.bench import impls, isolated, peers, stopwatch, timing


def where_it_runs(value):
    """A call that returns value, with the process it was prepared in and its OpenMP wait
    policy as its details."""
    return peers.Call(lambda: np.float32(value), lambda out: out,
                      {"pid": os.getpid(), "wait_policy": os.environ.get("OMP_WAIT_POLICY")})


def counting_call(path):
    """A call that appends a line to the file at path each time it runs."""
    def run():
        with open(path, "a") as log:
            log.write("ran\n")
    return peers.Call(run, lambda out: np.float32(0), {})


def test_the_worker_warms_up_for_the_warmup_it_is_sent(workers, tmp_path):
    log = tmp_path / "runs"
    call = workers.prepare("here", counting_call, str(log))  # result() ran it once
    stopwatch.timed(call, pause=0, warmup=0)
    assert log.read_text().count("ran") == 1 + 2  # one untimed call, then the timed one
    stopwatch.timed(call, pause=0, warmup=0.05)
    assert log.read_text().count("ran") > 3 + 2  # 50 ms of calls of a few microseconds, then the timed one


def state(pid):
    """The process's state letter in /proc (R running, S sleeping, T stopped)."""
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]


def running(pid):
    """Whether the process exists and has not ended (a zombie has ended, its parent gone)."""
    try:
        return state(pid) != "Z"
    except FileNotFoundError:
        return False


def owners(*arrays):
    """A call whose details say, for each array the worker was given, whether NumPy allocated its memory."""
    return peers.Call(lambda: np.float32(0), lambda out: out, {"own_data": [a.flags.owndata for a in arrays]})


def refuses(why):
    raise ValueError(why)


@pytest.fixture
def workers():
    yield isolated
    isolated.close()


def test_a_call_is_prepared_and_timed_in_its_own_process(workers):
    first = workers.prepare("here", where_it_runs, 2.5)
    assert first.result() == np.float32(2.5) and first.details["pid"] != os.getpid()
    second = workers.prepare("here", where_it_runs, 3.0)  # the same worker, the next call
    assert second.details["pid"] == first.details["pid"] and second.result() == np.float32(3.0)
    assert workers.prepare("there", where_it_runs, 0).details["pid"] not in (os.getpid(), first.details["pid"])
    cpu = []
    seconds = stopwatch.timed(second, pause=0.01, cpu=cpu)  # the pause, untimed calls and timed call, there
    assert seconds > 0 and len(cpu) == 1 and cpu[0] >= 0


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="no /proc here: the stopped state not checked")
def test_workers_spin_between_calls_and_are_stopped_while_another_is_timed(workers):
    """OpenMP's pools spin in the workers (ACTIVE), so each worker runs only while it prepares
    or times its own call; the harness's environment is left as it was."""
    before = os.environ.get("OMP_WAIT_POLICY")
    call = workers.prepare("here", where_it_runs, 1.0)
    other = workers.prepare("there", where_it_runs, 2.0)
    assert call.details["wait_policy"] == isolated.WORKER_ENV["OMP_WAIT_POLICY"] == "ACTIVE"
    assert os.environ.get("OMP_WAIT_POLICY") == before
    stopwatch.timed(call, pause=0)
    assert state(call.details["pid"]) == state(other.details["pid"]) == "T"


def test_the_worker_works_on_arrays_numpy_allocated_as_the_caller_does(workers):
    """Unpickled arrays wrap a buffer Python allocated (no huge pages for a large one); the worker
    copies them, so a kernel streams memory as it would in the caller's process."""
    arrays = (np.ones((1, 8, 4096, 128), np.float32), np.arange(5.0)[::2], np.zeros(3, np.int64))
    assert all(a.flags.owndata for a in arrays[::2])
    assert workers.prepare("here", owners, *arrays).details["own_data"] == [True, True, True]


def test_a_failure_in_the_worker_is_reported_with_its_type_and_message(workers):
    with pytest.raises(isolated.Failed) as failure:
        workers.prepare("here", refuses, "no kernel for this CPU")
    assert isolated.describe(failure.value) == "ValueError: no kernel for this CPU"
    assert workers.prepare("here", where_it_runs, 1.0).result() == np.float32(1.0)  # the worker lives on


def test_isolated_run_gives_the_rows_of_an_in_process_run(workers):
    rows = {isolate: timing.run([24], repeats=2, rss=False, names=["numpy_flash", "textbook"], pause=0, isolate=isolate)
            for isolate in (False, True)}
    for here, there in zip(rows[False], rows[True], strict=True):
        assert (here["n"], here["causal"], here["impl"]) == (there["n"], there["causal"], there["impl"])
        assert there["note"] is None and there["max_error"] == here["max_error"] < 1e-6
        assert len(there["repeat_seconds"]) == len(there["repeat_cpu_seconds"]) == 2
    q, k, v = impls.inputs(24)
    call = workers.prepare("numpy_flash", impls.prepare, "numpy_flash", q, k, v, True, 1)
    assert np.array_equal(call.result(), impls.numpy_flash(q, k, v, True))


HARNESS_THAT_DIES = """
import os
from attncore.bench import isolated
from tests.test_bench_isolated import where_it_runs
print(isolated.prepare("here", where_it_runs, 1.0).details["pid"], flush=True)
os.kill(os.getpid(), {signal})
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the workers die with the harness on Linux")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_stopped_worker_ends_when_the_harness_is_killed(how, tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    printed, errors = tmp_path / "stdout", tmp_path / "stderr"  # files: a worker left behind holds pipes open
    with printed.open("w") as stdout, errors.open("w") as stderr:
        harness = subprocess.run([sys.executable, "-c", HARNESS_THAT_DIES.format(signal=int(how))], cwd=root,
                                 stdout=stdout, stderr=stderr, timeout=120)
    assert harness.returncode == -how, errors.read_text()
    worker = int(printed.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and running(worker):
        time.sleep(0.05)
    alive = running(worker)
    if alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive, f"worker {worker} outlived the harness ({how.name}), stopped"
