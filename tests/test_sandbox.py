"""The sandbox: what a submission's code can see and do while it is graded (issue 20).

Three layers of checks:
- what the code sees inside the sandbox (its user, its files, its environment, its
  limits), asked of a real worker;
- tampering through a real `nbgrader autograde` of a course where honest students are
  graded before and after the attackers: every attacker scores 0 for the function it
  attacks, every honest student gets exactly the score of a clean run, the course's
  files are unchanged, no process outlives the run, and the run finishes;
- the same attempts through the self-check, where they apply.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

import attncore
from attncore.grading.course import sandbox
from attncore.grading.course.layout import WORK
from attncore.grading.course.runner import Worker
from attncore.grading.engine import SPECS, Outcome, run_suite

from .gradekit import ROOT, Course, points_by_function, submission

# Without bubblewrap these are skipped locally, and fail under CI (which installs it).
pytestmark = pytest.mark.skipif(sandbox.available() is not None and not os.environ.get("CI"),
                                reason=f"no sandbox here: {sandbox.available()}")
MARKER = "attncore-tamper-marker"  # in the command line of every process an attack starts
PACKAGE = Path(attncore.__file__).resolve().parent


def ask(source, sealed=""):
    """What `source` (a cell that sets `seen`) found inside a fresh sandboxed worker, and
    what `sealed` (the body of a function that adds to `seen`) found once it was sealed."""
    worker = Worker(".", 60, sandboxed=True)
    body = "".join(f"    {line}\n" for line in sealed.splitlines())
    try:
        reply = worker.exec("probe", source + f"\ndef probe():\n{body}"
                                              f"    return __import__('json').dumps(seen)\n")
        assert not reply["raised"], reply
        worker.seal((), ())
        outcome = worker.call("probe", {}, False)
        assert outcome.stopped is None and outcome.raised is None, outcome
        return json.loads(outcome.returned)
    finally:
        worker.close()


# ---------------------------------------------------------------- what the sandbox sees

@pytest.mark.slow
@pytest.mark.pipeline
def test_the_sandbox_has_its_own_user_pid_folder_and_environment():
    seen = ask("""
import os
seen = {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd(), "home": os.listdir("."),
        "root": sorted(os.listdir("/")), "env": sorted(os.environ),
        "processes": sorted(p for p in os.listdir("/proc") if p.isdigit())}
""")
    assert seen["uid"] == sandbox.UID and seen["pid"] == 1
    assert seen["cwd"] == sandbox.HOME and set(seen["home"]) <= {".ipython"}  # IPython's profile
    assert not any(name.startswith("NBGRADER") for name in seen["env"]), seen["env"]
    assert set(seen["env"]) <= {*sandbox._environment(0), "PWD"}, seen["env"]  # PWD: bwrap's
    assert seen["processes"] == ["1"], "the grader's processes must not be visible"


@pytest.mark.slow
@pytest.mark.pipeline
def test_the_course_the_engine_and_the_libraries_that_do_the_work_are_not_there():
    seen = ask(f"""
import importlib, importlib.util, os
seen = {{}}
for path in {[str(ROOT / "solutions"), str(ROOT / "nbgrader_config.py"), str(PACKAGE)]!r}:
    seen[path] = os.path.exists(path)
for module in {LEFT_OUT!r}:
    try:
        importlib.import_module(module)
        seen[module] = "imported"
    except ImportError as error:
        seen[module] = type(error).__name__
import attncore, numpy, IPython.display, matplotlib.pyplot
seen["attncore"] = attncore.__file__
seen["numba"] = importlib.util.find_spec("numba") is not None
""")
    for path in (ROOT / "solutions", ROOT / "nbgrader_config.py", PACKAGE):
        assert seen[str(path)] is False, path
    for module in LEFT_OUT:
        assert seen[module] != "imported", module
    assert seen["attncore"].startswith(sandbox.LIBRARY) and seen["numba"]


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("route", ["sandbox", "no sandbox, links", "no sandbox, copies"])
def test_a_graded_notebook_sees_only_the_modules_its_exercise_allows(route, monkeypatch):
    """Second red team #16-#18: in-process tripwires can be reached (a replaced seal, code
    objects taken with gc, a compiled Numba kernel). A graded notebook's sandbox leaves
    out every attncore module but those its exercise allows and what they import: each
    left-out module is a stand-in whose names raise ForbiddenCall, with no compiled copy
    beside it, and `import attncore` still works; what the exercise allows works. Without
    a sandbox (#30: the self-check, sandbox=none) the worker's path starts with the same
    library, made of links, or of copies where no link can be made."""
    from attncore.grading.course.allowed import ALLOWED, kept_modules, library_modules

    if route.endswith("copies"):
        monkeypatch.setattr(os, "symlink", _no_links)
    for assignment, allowed in ALLOWED.items():
        kept = kept_modules(allowed)
        worker = Worker(".", 60, sandboxed=route == "sandbox", library=kept)
        try:
            reply = worker.exec("probe", f"""
import importlib, os, numpy as np, attncore
seen = {{}}
for module in {sorted(library_modules())!r}:
    seen[module] = bool(vars(importlib.import_module("attncore." + module)).get("__left_out__"))
compiled = os.path.join(os.path.dirname(attncore.__file__), "__pycache__")
seen["compiled"] = os.listdir(compiled) if os.path.isdir(compiled) else []
try:
    attncore.flash_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))
except Exception as error:
    seen["flash_attention"] = type(error).__name__
if "softmax" in {sorted(kept)!r}:
    seen["softmax()"] = attncore.softmax(np.array([0.0, 0.0])).tolist()
""")
            assert reply["raised"] is None, (assignment, reply)
            worker.exec("result", "import json\ndef result():\n    return json.dumps(seen)\n")
            seen = json.loads(worker.call("result", {}, False).returned)
        finally:
            worker.close()
        assert {module for module in library_modules() if seen[module]} == library_modules() - kept
        assert seen["flash_attention"] == "ForbiddenCall", assignment
        assert seen.get("softmax()", [0.5, 0.5]) == [0.5, 0.5], assignment
        if route == "sandbox":  # elsewhere the worker compiles into its own copy's folder
            assert seen["compiled"] == [], assignment


def _no_links(*args, **kwargs):
    raise OSError("no links on this system")


# The grading engine, libraries that would do the work, and what the grader has installed
# for itself (nbgrader, jinja2, hypothesis): none is among the allowed distributions.
LEFT_OUT = ("attncore.grading.engine", "torch", "scipy.special", "jax", "nbgrader", "jinja2",
            "hypothesis")


@pytest.mark.slow
@pytest.mark.pipeline
def test_nothing_inside_can_be_written_outside_its_folder_or_limits_raised():
    seen = ask(f"TMP_BYTES = {sandbox.TMP_BYTES}\n" + """
import os, resource
seen = {}
for path in ("/proc/self/clear_refs", "/sandbox/lib/attncore/__init__.py", "/usr/x", "/etc/x"):
    try:
        with open(path, "a") as f:
            f.write("5")
        seen[path] = "written"
    except OSError as error:
        seen[path] = error.errno
for name in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_CPU"):
    kind = getattr(resource, name)
    try:
        resource.setrlimit(kind, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        seen[name] = "raised"
    except (ValueError, OSError):
        seen[name] = resource.getrlimit(kind)
with open("mine.txt", "w") as f:
    seen["home"] = f.write("a learner's scratch file")
try:
    with open("/tmp/big", "wb") as f:
        f.write(b"x" * (TMP_BYTES + (1 << 20)))
    seen["tmp"] = "written"
except OSError as error:
    seen["tmp"] = error.errno
import socket
try:
    socket.create_connection(("127.0.0.1", 22), timeout=2)
    seen["network"] = "connected"
except OSError as error:
    seen["network"] = error.errno
""")
    assert all(seen[path] != "written" for path in ("/proc/self/clear_refs",
               "/sandbox/lib/attncore/__init__.py", "/usr/x", "/etc/x")), seen
    assert all(isinstance(seen[name], list) and seen[name][0] == seen[name][1]
               for name in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_CPU")), seen
    assert seen["home"] > 0 and seen["network"] != "connected" and seen["tmp"] == 28  # ENOSPC


TRY = """
def tried(name, call):
    try:
        call()
        seen[name] = "allowed"
    except OSError as error:
        seen[name] = error.errno
"""


@pytest.mark.slow
@pytest.mark.pipeline
def test_no_namespace_mount_trace_kernel_keyring_or_process_inside_from_the_start():
    """Code review N2, red team a06, second red team #16 and #21: a nested user namespace,
    mount, ptrace, keyctl, bpf, io_uring and every new process (fork, subprocess, exec,
    from the main thread or one the notebook started) are refused from the worker's start,
    before the first cell; a thread is not. A notebook that replaces the worker's own seal
    changes none of it, and the grader reads from outside that every thread carries the
    filter."""
    from attncore.grading.course import seccomp

    from .test_red_team import FAKE_SEAL

    worker = Worker(".", 60, sandboxed=True)
    try:
        reply = worker.exec("probe", TRY + FAKE_SEAL + """
import ctypes, os, subprocess, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
seen = {}
def syscall(*args):
    if libc.syscall(*args) != 0:
        raise OSError(ctypes.get_errno(), "refused")
status = open("/proc/self/status").read()
seen["filters"] = int(status.split("Seccomp_filters:")[1].split()[0])
tried("unshare a user namespace", lambda: syscall(272, 0x10000000))
tried("mount", lambda: syscall(165, b"none", b"/tmp", b"tmpfs", 0, None))
tried("ptrace", lambda: syscall(101, 16, 1, 0, 0))
tried("keyctl", lambda: syscall(250, 0, 0, 0))
tried("bpf", lambda: syscall(321, 0, 0, 0))
tried("io_uring_setup", lambda: syscall(425, 1, 0))
tried("fork while loading", os.fork)
tried("subprocess while loading", lambda: subprocess.run(["true"], check=True))
asked = threading.Event()
def early():  # a thread started while loading, which forks when a call asks it to
    asked.wait()
    tried("fork from a thread started while loading", os.fork)
threading.Thread(target=early).start()
def probe():
    tried("fork in a call", os.fork)
    tried("subprocess in a call", lambda: subprocess.run([sys.executable, "-c", "pass"]))
    tried("exec in a call", lambda: os.execv("/bin/true", ["true"]))
    asked.set()
    thread = threading.Thread(target=lambda: seen.update(thread="ran"))
    thread.start()
    thread.join()
    while "fork from a thread started while loading" not in seen:
        time.sleep(0.01)
    return __import__("json").dumps(seen)
""")
        assert not reply["raised"], reply
        worker.seal((), ())  # the notebook's own seal: it replaced it
        assert seccomp.unfiltered(worker.pid) is None
        seen = json.loads(worker.call("probe", {}, False).returned)
    finally:
        worker.close()
    assert seen.pop("filters") == seccomp.FILTERS and seen.pop("thread") == "ran"
    assert seen == {name: 1 for name in seen}, seen  # every one: EPERM


@pytest.mark.slow
@pytest.mark.pipeline
def test_the_in_memory_folders_and_files_hold_what_they_say():
    """Red team a10: /dev/shm was half the host's memory; now it holds SHM_BYTES, the home
    folder SCRATCH_BYTES, and no file grows past RLIMIT_FSIZE (a15)."""
    from attncore.grading.course.worker import HARD_LIMITS

    sizes = {"/dev/shm/big": sandbox.SHM_BYTES, "big": sandbox.SCRATCH_BYTES,
             "file": HARD_LIMITS["RLIMIT_FSIZE"]}
    seen = ask(f"SIZES = {sizes!r}\n" + TRY + """
import os
seen = {}
def fill(path, size, per_file=64):  # MiB in files of per_file MiB each
    for mib in range(size // (1 << 20) + 2):
        with open(f"{path}.{mib // per_file}", "ab") as f:
            f.write(b"x" * (1 << 20))
for path in ("/dev/shm/big", "big"):
    tried(path, lambda: fill(path, SIZES[path]))
    for name in os.listdir(os.path.dirname(path) or "."):
        if name.startswith(os.path.basename(path) + "."):
            os.remove(os.path.join(os.path.dirname(path), name))
tried("a file past the size limit", lambda: fill("file", SIZES["file"], per_file=1 << 20))
""")
    assert seen == {"/dev/shm/big": 28, "big": 28, "a file past the size limit": 27}  # ENOSPC, EFBIG


@pytest.mark.slow
@pytest.mark.pipeline
def test_the_process_cap_binds_whoever_the_grader_is():
    """Red team a16: 400 forks all succeeded when the grader was root. No process starts
    in the sandbox now, and its control group (or, without one, its unprivileged user)
    caps its threads."""
    seen = ask("""
import threading
seen = {"started": 0}
stop = threading.Event()
for _ in range(3 * 64):
    try:
        threading.Thread(target=stop.wait, daemon=True).start()
    except RuntimeError:
        break
    seen["started"] += 1
stop.set()
""")
    assert 0 < seen["started"] < sandbox.TASKS, seen


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.skipif(os.geteuid() != 0 and os.environ.get("ATTNCORE_CGROUP") is None,
                    reason="a control group for the sandbox needs root or ATTNCORE_CGROUP")
def test_the_memory_cap_binds_the_whole_sandbox(monkeypatch):
    """Code review N2: the sandbox's memory together, its worker's and its in-memory files',
    is held to its cap (here lowered to 256 MiB, so that trying to exceed it stays cheap):
    150 MiB written to a file of its home fit, 150 MiB more in the worker do not, and the
    worker is stopped with feedback that says why."""
    from attncore.grading.course.process import WorkerStopped

    monkeypatch.setattr(sandbox, "MEMORY_BYTES", 256 << 20)
    worker = Worker(".", 60, sandboxed=True)
    try:
        assert worker.group is not None, "no control group was made for the sandbox"
        reply = worker.exec("file", "with open('ballast', 'wb') as f:\n"
                                    "    for _ in range(150):\n        f.write(b'x' * (1 << 20))\n")
        assert not reply["raised"], reply
        with pytest.raises(WorkerStopped, match="more than the 0.25 GiB of memory its sandbox may use"):
            worker.exec("more", "block = bytearray(150 << 20)\nblock[::4096] = b'x' * len(block[::4096])")
        assert worker.group is None  # closed with the worker
    finally:
        worker.close()


@pytest.mark.slow
@pytest.mark.pipeline
def test_a_calls_memory_is_the_sandboxs_tmpfs_files_included():
    """Red team a03/a14: the memory of a call is the sandbox's, measured outside: 40 MB
    written to a file of the sandbox's own (in memory) count, which the worker process's
    own figures would not show."""
    worker = Worker(".", 60, sandboxed=True)
    try:
        worker.exec("cell", "def to_file(n):\n    with open('scratch', 'wb') as f:\n"
                            "        f.write(b'x' * n)\n    return n\n")
        worker.seal((), ())
        outcome = worker.call("to_file", {"n": 40_000_000}, True)
    finally:
        worker.close()
    assert outcome.peak_bytes is not None and outcome.peak_bytes > 38e6, outcome


@pytest.mark.slow
@pytest.mark.pipeline
def test_memory_is_measured_from_outside_and_inputs_read_back_from_the_arena():
    worker = Worker(".", 60, sandboxed=True)
    try:
        worker.exec("cell", """
import numpy as np
def grow(x):
    big = np.ones((4096, 1024))   # 32 MiB, touched
    x[0] = big.sum()
    return x
""")
        outcome = worker.call("grow", {"x": np.zeros(3)}, True)
    finally:
        worker.close()
    assert 30e6 < outcome.peak_bytes < 60e6, outcome.peak_bytes
    assert outcome.arguments_after["x"][0] == 4096 * 1024


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("group", [True, False], ids=["control group", "no control group"])
def test_files_dropped_when_the_call_starts_count_as_the_calls(monkeypatch, group):
    """Second red team #9: 40 MB written to /dev/shm at load and unlinked when the call
    starts hid the score matrix; with or without a control group, the memory case now
    fails as for the matrix built in plain sight."""
    from attncore.grading.course import process
    from attncore.grading.engine import SPECS

    from .test_red_team import FLASH_SHM

    if not group:
        monkeypatch.setattr(process.Group, "create", staticmethod(lambda *limits: None))
    case = SPECS["flash_attention"].suites["memory"][0]
    arguments = case.make()
    worker = Worker(".", 60, sandboxed=True)
    try:
        assert (worker.group is not None) is group or not group and worker.group is None
        assert worker.exec("cell", "import numpy as np\n" + FLASH_SHM)["raised"] is None
        outcome = worker.call("flash_attention", arguments, True)
    finally:
        worker.close()
    assert outcome.peak_bytes > 1.5 * case.max_extra_bytes(arguments), outcome.peak_bytes


ZOMBIE_LEADER = """
import ctypes, os, threading, time
time.sleep(0.5)  # the grader puts the sandbox in its group first
if os.fork() == 0:
    def beat():
        while True:
            time.sleep(0.05)
    threading.Thread(target=beat).start()
    ctypes.CDLL(None).pthread_exit(None)
time.sleep(60)
"""


@pytest.mark.slow
@pytest.mark.pipeline
def test_every_process_of_the_sandbox_is_killed_a_zombie_leader_too():
    """Second red team #2, #11, #19: a process whose main thread ended (its leader shows Z)
    while a thread of it runs was taken for dead and survived. The grader now kills by
    membership: every process of the sandbox's control group, or of its PID namespace,
    but its PID 1, whatever its state. (Here the sandbox runs Python without the worker's
    filter, so that the process can start at all.)"""
    from attncore.grading.course.cgroups import Group

    info_read, info_write = os.pipe()
    bwrap = subprocess.Popen(sandbox.command(["-c", ZOMBIE_LEADER], info_fd=info_write),
                             pass_fds=[info_write], **sandbox.launch_options())
    os.close(info_write)
    group = Group.create(sandbox.MEMORY_BYTES, sandbox.TASKS)
    try:
        with os.fdopen(info_read) as info:
            leader = sandbox.read_child_pid(info)
        for pid in (bwrap.pid, leader) if group is not None else ():
            group.add(pid)

        def others():  # as the grader lists them: live members but PID 1
            return [pid for pid in sandbox.namespace_members(leader)
                    if pid != leader and sandbox.alive(pid)]

        for _ in range(100):  # until the child has forked and ended its main thread
            child = others()
            if child and open(f"/proc/{child[0]}/stat").read().rpartition(")")[2].split()[0] == "Z":
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the child never showed as a zombie leader")
        assert len(os.listdir(f"/proc/{child[0]}/task")) == 2  # its leader and the live thread
        if group is not None:
            assert set(group.processes()) == {bwrap.pid, leader, *child}
        sandbox.end_processes(others)
        for _ in range(100):
            if not others():
                break
            time.sleep(0.02)
        assert not others(), "a process of the sandbox survived"
    finally:
        bwrap.kill()
        bwrap.wait()
        if group is not None:
            group.close()


# ---------------------------------------------------------------- tampering, through nbgrader

ASSIGNMENT = "03-masking"
FUNCTION = "masked_softmax"
WRONG = "def masked_softmax(scores, mask):\n    return scores.copy()\n"
IN_PLACE = """def masked_softmax(scores, mask):
    scores[~mask] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    s = e.sum(axis=-1, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)
"""
# A process that outlives its notebook: it double-forks, keeps MARKER in its command line,
# and for a minute kills every grading worker it can see.
KILLER = f"""
import os, signal, subprocess, sys
code = '''
import os, signal, time
end = time.time() + 60
while time.time() < end:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"course.worker" in open(f"/proc/{{pid}}/cmdline", "rb").read():
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
'''
if os.fork() == 0:
    os.setsid()
    subprocess.Popen([sys.executable, "-c", code, "{MARKER}"], start_new_session=True)
    os._exit(0)
"""


def attacks(course):
    """{name: the solution cell}: a wrong masked_softmax and an attempt to gain points with
    it, or to change other students' grades, or to outlive the notebook."""
    root = str(course.root)
    table = repr(_hidden_case_table())
    return {
        "rewrite the installed package": f"""
import attncore, os
for base in {{os.path.dirname(attncore.__file__), {str(PACKAGE)!r}}}:
    for part in ("grading/course/worker.py", "grading/engine/probe.py", "grading/observe.py"):
        try:
            with open(os.path.join(base, part), "a") as f:
                f.write("\\nsame = lambda *a, **k: True\\n")
        except OSError:
            pass
""" + WRONG,
        "append to nbgrader_config.py": f"""
for path in ({root + '/nbgrader_config.py'!r}, "../nbgrader_config.py", "nbgrader_config.py"):
    try:
        with open(path, "a") as f:
            f.write("\\nraise SystemExit('tampered')\\n")
    except OSError:
        pass
""" + WRONG,
        "write the gradebook": f"""
import sqlite3
try:
    db = sqlite3.connect({root + '/' + WORK + '/gradebook.db'!r})
    db.execute("UPDATE grade SET manual_score = 100, extra_credit = 100")
    db.commit()
except Exception:
    pass
""" + WRONG,
        "lock the gradebook": f"""
import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import sqlite3, time; "
                  "db = sqlite3.connect({root + '/' + WORK + '/gradebook.db'!r}, timeout=1); "
                  "db.execute('BEGIN EXCLUSIVE'); time.sleep(60)", "{MARKER}"],
                 start_new_session=True)
""" + WRONG,
        "rewrite other submissions": f"""
import glob
for path in glob.glob({root + '/' + WORK + '/submitted/*/*/*.ipynb'!r}):
    try:
        with open(path, "w") as f:
            f.write("{{}}")
    except OSError:
        pass
""" + WRONG,
        "read the instructor's solutions": f"""
import json
try:
    notebook = json.load(open({root + '/solutions/' + ASSIGNMENT + '/' + ASSIGNMENT + '.ipynb'!r}))
    for cell in notebook["cells"]:
        if "def masked_softmax" in "".join(cell["source"]):
            exec("".join(cell["source"]))
except OSError:
""" + "".join("    " + line + "\n" for line in WRONG.splitlines()),
        "trace the grader through /proc": """
import os, signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) != os.getpid():
        try:
            open(f"/proc/{pid}/mem", "rb").read(1)
            os.kill(int(pid), signal.SIGSTOP)
        except OSError:
            pass
try:
    import ctypes
    ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)   # PTRACE_ATTACH the parent
except Exception:
    pass
""" + WRONG,
        "a double fork that kills later workers": KILLER + WRONG,
        "leave sleepers behind": f"""
import os
for _ in range(5):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "600", "{MARKER}"])
        os._exit(0)
""" + WRONG,
        "the library through a default argument": """
import attncore
def masked_softmax(scores, mask, _softmax=attncore.softmax):
    return _softmax(scores, mask=mask)
""",
        "the library through sys.modules": """
import sys
def masked_softmax(scores, mask):
    return sys.modules["attncore.softmax"].softmax(scores, mask=mask)
""",
        "the library reloaded with importlib": """
import importlib, sys
def masked_softmax(scores, mask):
    fresh = importlib.reload(sys.modules["attncore.softmax"])
    return fresh.softmax(scores, mask=mask)
""",
        "the private core of the library's softmax": """
import sys
def masked_softmax(scores, mask):
    module = sys.modules["attncore.softmax"]
    core = [f for name, f in vars(module).items() if name.startswith("_") and "softmax" in name]
    return core[0](scores, mask=mask)
""",
        "the library's code copied into a new function": """
import types, attncore
try:
    mine = types.FunctionType(attncore.softmax.__code__, attncore.softmax.__globals__, None,
                              attncore.softmax.__defaults__)
    mine.__kwdefaults__ = attncore.softmax.__kwdefaults__  # axis and mask are keyword-only
except Exception:
    mine = None
def masked_softmax(scores, mask):
    return mine(scores, mask=mask) if mine else scores.copy()
""",
        "detect the grader, then call the library": """
import os, sys
def masked_softmax(scores, mask):
    if os.environ.get("NBGRADER_EXECUTION") or "worker" in " ".join(sys.argv):
        import attncore
        return attncore.softmax(scores, mask=mask)
    return scores.copy()
""",
        "a lookup table from the installed suites": """
try:
    from attncore.grading.engine import SPECS
    TABLE = [(c.make(), SPECS["masked_softmax"].reference) for s in SPECS["masked_softmax"].suites.values() for c in s]
except ImportError:
    TABLE = []
def masked_softmax(scores, mask):
    for arguments, reference in TABLE:
        if arguments["scores"].shape == scores.shape and (arguments["scores"] == scores).all():
            return reference(scores, mask)
    return scores.copy()
""",
        "a hard-coded table of the hidden cases": f"""
import numpy as np
TABLE = {table}
def masked_softmax(scores, mask):
    key = scores.tobytes().hex() + mask.tobytes().hex()
    return np.array(TABLE[key][0], dtype=TABLE[key][1]).reshape(scores.shape) if key in TABLE \\
        else scores.copy()
""",
        "forge the reply with the library's answer": """
import sys
from attncore.grading.course import wire
_send = wire.send
def send(stream, message):
    try:
        import attncore
        frame = sys._getframe(1)
        request = frame.f_locals.get("request") or {}
        arguments = {k: wire.decode(v) for k, v in request.get("arguments", {}).items()}
        message["returned"] = wire.encode(attncore.softmax(arguments["scores"], mask=arguments["mask"]))
    except Exception:
        pass
    return _send(stream, message)
wire.send = send
""" + WRONG,
        "forge a frame on the reply descriptor": """
import json, os, struct, sys
def masked_softmax(scores, mask):
    body = json.dumps({"returned": None, "raised": None, "arguments_after": {}, "peak_bytes": 0,
                       "notes": []}).encode()
    os.write(int(sys.argv[2]), struct.pack(">Q", len(body)) + body)
    return scores.copy()
""",
        "hide an in-place change": """
from attncore.grading.course import wire
_send = wire.send
def send(stream, message):
    message.pop("arguments_after", None)
    return _send(stream, message)
wire.send = send
""" + IN_PLACE,
        "return timedelta64": """
import numpy as np
def masked_softmax(scores, mask):
    return np.zeros(scores.shape, dtype="m8[s]")
""",
        "return a structured array": """
import numpy as np
def masked_softmax(scores, mask):
    return np.zeros(scores.shape, dtype=[("a", "f8"), ("b", "f8")])
""",
        "10 000 notes in every reply": """
from attncore.grading.course import wire
_send = wire.send
def send(stream, message):
    if "notes" in message:
        message["notes"] = [f"note {i}" for i in range(10_000)]
    return _send(stream, message)
wire.send = send
""" + WRONG,
        "a 64 MiB reply": """
from attncore.grading.course import wire
_send = wire.send
def send(stream, message):
    if "notes" in message:
        message["notes"] = [0] * (32 << 20)
    return _send(stream, message)
wire.send = send
""" + WRONG,
        "a reply nested 100 000 deep": """
from attncore.grading.course import wire
def send(stream, message):
    body = ("[" * 100_000 + "]" * 100_000).encode()
    stream.write(len(body).to_bytes(8, "big") + body)
    stream.flush()
wire.send = send
""" + WRONG,
        "raise the memory limit and allocate 20 GB": """
import resource
try:
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
except (ValueError, OSError):
    pass
def masked_softmax(scores, mask):
    waste = np.ones(20 << 27)
    return scores.copy()
""",
        "kill every process it can see": """
import os, signal
def masked_softmax(scores, mask):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) != os.getpid():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    os.kill(0, signal.SIGKILL)
""",
    }


# (importlib.reload is not tried here: in this process it would replace the library's
# functions for every later test.)
LIBRARY_ROUTES = ("the library through a default argument", "the library through sys.modules",
                  "the private core of the library's softmax",
                  "the library's code copied into a new function")


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("name", LIBRARY_ROUTES)
def test_each_route_to_the_library_works_until_the_exercise_forbids_it(tmp_path, name):
    """Not a vacuous attack: with nothing forbidden, the route gives the right answer;
    with what 03-masking forbids, it raises ForbiddenCall (or is refused outright)."""
    from attncore.grading.engine.suites.masking import FORBIDDEN
    from attncore.grading.observe import observe

    namespace = {}
    exec(attacks(Course(tmp_path, [ASSIGNMENT]))[name], namespace)
    spec = SPECS[FUNCTION]
    arguments = spec.suites["basic"][0].make()
    free = observe(namespace[FUNCTION], dict(arguments), ())
    assert free["raised"] is None, free["raised"]
    np.testing.assert_allclose(free["returned"], spec.reference(*arguments.values()))
    assert observe(namespace[FUNCTION], dict(arguments), FORBIDDEN)["raised"][0] == "ForbiddenCall"


def _hidden_case_table():
    """{inputs as hex: (the right answer, dtype)} for every fixed case of every hidden suite:
    what a learner could build from the public repository."""
    spec = SPECS[FUNCTION]
    table = {}
    for suite in spec.suites:
        if suite == "basic":
            continue

        def remember(arguments, _):
            expected = spec.reference(*arguments.values())
            key = arguments["scores"].tobytes().hex() + arguments["mask"].tobytes().hex()
            table[key] = (expected.ravel().tolist(), str(expected.dtype))
            return Outcome(returned=expected, arguments_after=arguments)

        run_suite(spec, suite, remember)
    return table


def _hashes(paths):
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def _survivors():
    """Processes on this machine whose command line carries MARKER."""
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if MARKER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(pid)
        except OSError:
            pass
    return alive


HONEST = {"right": None, "wrong": WRONG, "in place": IN_PLACE}


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.xdist_group("sandbox-tamper")
def test_attackers_score_zero_and_honest_students_keep_their_grades_through_nbgrader(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    students = {}
    for order in ("a", "z"):  # graded before and after every attacker (nbgrader sorts them)
        for k, (name, source) in enumerate(HONEST.items()):
            students[f"{order}{k}-honest"] = (name, source)
    for k, (name, source) in enumerate(attacks(course).items()):
        students[f"m{k:02d}-attacker"] = (name, source)
    for student, (_, source) in students.items():
        course.submit(ASSIGNMENT, student,
                      submission(ASSIGNMENT, None if source is None else {FUNCTION: source}))
    watched = [*PACKAGE.rglob("*.py"), course.root / "nbgrader_config.py",
               *(course.root / "solutions").rglob("*.ipynb"),
               *(course.root / WORK / "submitted").rglob("*.ipynb")]
    before = _hashes(watched)

    course.autograde(ASSIGNMENT)  # raises if nbgrader fails

    assert _hashes(watched) == before, "a submission changed a file outside its sandbox"
    assert not _survivors(), "processes started by a submission outlived its grading"
    points = {student: points_by_function(course.grades(ASSIGNMENT, student), ASSIGNMENT)
              for student in students}
    full = {f: most for f, (_, most, _) in points["a0-honest"].items()}
    expected = {"right": full, "wrong": {**full, FUNCTION: 0}, "in place": {**full, FUNCTION: 0}}
    for student, (name, _) in students.items():
        got = {f: score for f, (score, _, _) in points[student].items()}
        if student.endswith("honest"):
            assert got == expected[name], (student, name, got)
        else:
            assert got[FUNCTION] == 0, f"{name}: {FUNCTION} got {got[FUNCTION]} points"
            assert got == expected["wrong"], (name, got)
    for student in students:
        size = course.autograded(ASSIGNMENT, student).stat().st_size
        assert size < 1 << 20, f"{students[student][0]}: autograded notebook of {size} bytes"

    # The instructor's next run: nothing a submission did carries over.
    course.autograde(ASSIGNMENT)
    for student in (s for s in students if "honest" in s):
        again = points_by_function(course.grades(ASSIGNMENT, student), ASSIGNMENT)
        assert {f: p[:2] for f, p in again.items()} == \
               {f: p[:2] for f, p in points[student].items()}, student
    assert not _survivors()


# The memory cell of 05-flash: a flash_attention that builds the whole score matrix, and
# ways to hide its peak that the grader's own measurement (from outside) must not believe.
MEMORY = "flash_attention-memory"
MATERIALISE = """
def flash_attention(Q, K, V, block_size):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
"""
HIDE_THE_PEAK = {
    "report a peak of 0": """
from attncore.grading.course import wire
_send = wire.send
def send(stream, message):
    if "peak_bytes" in message:
        message["peak_bytes"] = 0
    return _send(stream, message)
wire.send = send
""" + MATERIALISE,
    "patch the grader's tracemalloc": """
from attncore.grading import observe
observe._REAL["get_traced_memory"] = lambda: (0, 0)
observe._REAL["reset_peak"] = lambda: None
""" + MATERIALISE,
    "the matrix in an mmap buffer": """
import mmap
def flash_attention(Q, K, V, block_size):
    buffer = mmap.mmap(-1, Q.shape[0] * K.shape[0] * 8)
    S = np.ndarray((Q.shape[0], K.shape[0]), buffer=buffer)
    np.matmul(Q, K.T / np.sqrt(Q.shape[1]), out=S)
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    return S @ V
""",
}


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.xdist_group("sandbox-tamper")
def test_a_materialised_matrix_loses_the_memory_point_however_it_hides_through_nbgrader(tmp_path):
    course = Course(tmp_path, ["05-flash"])
    course.generate("05-flash")
    students = {"a-tiled": None, "b-materialised": MATERIALISE,
                **{f"m{k}-{name}": source for k, (name, source) in enumerate(HIDE_THE_PEAK.items())}}
    for student, source in students.items():
        course.submit("05-flash", student,
                      submission("05-flash", None if source is None else {"flash_attention": source}))
    course.autograde("05-flash")
    for student in students:
        grades = {g.grade_id: g for g in course.grades("05-flash", student) if not g.manual}
        lost = {gid for gid, g in grades.items() if g.score < g.max_score}
        assert lost == (set() if student == "a-tiled" else {MEMORY}), (student, lost)
        if student != "a-tiled":
            assert "materialised" in grades[MEMORY].message, grades[MEMORY].message


def test_the_feedback_says_it_was_sandboxed_and_gives_the_seed(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    course.submit(ASSIGNMENT, "student", submission(ASSIGNMENT))
    course.autograde(ASSIGNMENT, "--GradeOutOfProcess.seed=12345")
    outputs = [g.output for g in course.grades(ASSIGNMENT, "student") if not g.manual]
    assert all("graded in a bubblewrap sandbox; hidden cases drawn with seed 12345" in o
               for o in outputs), outputs[0]


@pytest.mark.slow
@pytest.mark.pipeline
def test_without_a_sandbox_autograde_refuses_unless_told_and_then_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCORE_BWRAP", str(tmp_path / "no-bwrap-here"))
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    course.submit(ASSIGNMENT, "student", submission(ASSIGNMENT))
    with pytest.raises(RuntimeError, match="cannot grade in a sandbox"):
        course.autograde(ASSIGNMENT)
    course.autograde(ASSIGNMENT, "--GradeOutOfProcess.sandbox=none")
    grades = [g for g in course.grades(ASSIGNMENT, "student") if not g.manual]
    assert all(g.score == g.max_score for g in grades)
    assert all("not sandboxed" in g.output for g in grades), grades[0].output


# ---------------------------------------------------------------- the self-check side

SELF_CHECKED = ("rewrite the installed package", "the library through a default argument",
                "the library through sys.modules", "forge the reply with the library's answer",
                "a hard-coded table of the hidden cases", "a double fork that kills later workers",
                "return timedelta64")


@pytest.mark.slow
@pytest.mark.pipeline
def test_attempts_score_zero_through_the_self_check(tmp_path):
    (tmp_path / "course").mkdir()
    course = Course(tmp_path / "course", [ASSIGNMENT])
    chosen = attacks(course)
    before = _hashes(list(PACKAGE.rglob("*.py")))
    for k, name in enumerate(SELF_CHECKED):
        path = tmp_path / f"attempt{k}" / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir()
        nbformat.write(submission(ASSIGNMENT, {FUNCTION: chosen[name]}), path)
        result = subprocess.run([sys.executable, "-m", "attncore.grading", "check", str(path)],
                                cwd=path.parent, capture_output=True, text=True, timeout=300)
        assert result.returncode == 1, (name, result.stdout, result.stderr)
        row = re.search(rf"^{FUNCTION}\s+(\S+) / (\S+)", result.stdout, re.M)
        assert row and float(row[1]) == 0, (name, result.stdout)
        assert "graded in a bubblewrap sandbox" in result.stdout
    assert _hashes(list(PACKAGE.rglob("*.py"))) == before
    assert not _survivors()
