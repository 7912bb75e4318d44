"""System calls the grading worker gives up, with a seccomp filter it installs on itself.

One filter, built here as classic BPF (ctypes only, no new dependency) and installed by
the worker with seccomp(2) on all its threads as the first thing it does, before any
learner code runs (course.worker); a filter can never be removed, every thread started
later inherits it, and no_new_privs keeps anything the worker runs from gaining what the
filter takes away. It refuses:

- the calls a notebook never needs and a sandbox escape starts from (EPERM): ptrace,
  keyctl, bpf, perf_event_open, userfaultfd, io_uring, mount and its relatives, unshare,
  setns, clone into new namespaces, loading kernel modules;
- every new process (EPERM): fork, vfork, execve, execveat and a clone that is not a
  thread, so that no child process does the work, holds the memory or escapes the
  limits of a graded call; loading a notebook's cells needs none. clone3 fails with
  ENOSYS, so the C library falls back to clone, whose flags the filter can read.

The grader believes none of this on the worker's word: before each call it reads from
/proc that every thread of the worker carries the filter (unfiltered()).
Only on x86-64 Linux (the tables below); elsewhere install() does nothing and says so,
and unfiltered() asks for nothing.
"""
import ctypes
import errno
import os
import platform
import struct
import sys

AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000  # x32 system calls: refused whole
SYSCALLS = {  # x86-64 numbers (asm/unistd_64.h)
    "clone": 56, "fork": 57, "vfork": 58, "execve": 59, "ptrace": 101, "syslog": 103,
    "uselib": 134, "pivot_root": 155, "chroot": 161, "acct": 163, "mount": 165, "umount2": 166,
    "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173,
    "init_module": 175, "delete_module": 176, "quotactl": 179, "kexec_load": 246,
    "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
    "execveat": 322, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435, "mount_setattr": 442,
}
SECCOMP_SYSCALL = 317
REFUSED = ("ptrace", "syslog", "uselib", "pivot_root", "chroot", "acct", "mount", "umount2",
           "swapon", "swapoff", "reboot", "iopl", "ioperm", "init_module", "delete_module",
           "quotactl", "kexec_load", "add_key", "request_key", "keyctl", "unshare",
           "perf_event_open", "name_to_handle_at", "open_by_handle_at", "setns",
           "process_vm_readv", "process_vm_writev", "finit_module", "kexec_file_load", "bpf",
           "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
           "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
           "mount_setattr", "fork", "vfork", "execve", "execveat")
CLONE_THREAD = 0x00010000
CLONE_NEW_NAMESPACES = 0x7E020000  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
FILTERS = 1  # the filters every thread of the worker carries (/proc/PID/status: Seccomp_filters)
_FILTER_MODE = "2"  # /proc/PID/status: Seccomp (0: none, 1: strict, 2: filter)

# classic BPF
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little endian)
_PR_SET_NO_NEW_PRIVS, _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 38, 1, 1


def supported() -> bool:
    """Whether this machine can take the filters (x86-64 Linux)."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def program() -> bytes:
    """The worker's filter: REFUSED fail with EPERM, clone3 with ENOSYS, and clone with
    EPERM unless it starts a thread in the worker's own namespaces."""
    clone = [_load(_ARG0_LOW),
             _jump(_JSET_K, CLONE_NEW_NAMESPACES, 0, 1), _ret(_RET_ERRNO | errno.EPERM),
             _jump(_JSET_K, CLONE_THREAD, 1, 0), _ret(_RET_ERRNO | errno.EPERM),
             _ret(_RET_ALLOW)]
    actions = {**{name: [_ret(_RET_ERRNO | errno.EPERM)] for name in REFUSED},
               "clone3": [_ret(_RET_ERRNO | errno.ENOSYS)], "clone": clone}
    head = [
        _load(_ARCH),
        _jump(_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        _ret(_RET_KILL_PROCESS),
        _load(_NR),
        _jump(_JGE_K, X32_BIT, 0, 1),
        _ret(_RET_ERRNO | errno.EPERM),
    ]
    body = []
    for name, action in actions.items():
        # nr == this call: its action, every path of which returns; else skip over it
        body += [_jump(_JEQ_K, SYSCALLS[name], 0, len(action)), *action]
    return b"".join(head + body + [_ret(_RET_ALLOW)])


def install() -> str | None:
    """Install the worker's filter on every thread of this process; None, or why it could
    not be."""
    if not supported():
        return f"no seccomp filter on {sys.platform} {platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    code = program()
    filters = ctypes.create_string_buffer(code, len(code))

    class FProg(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = FProg(len(code) // 8, ctypes.cast(filters, ctypes.c_void_p))
    result = libc.syscall(SECCOMP_SYSCALL, _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC,
                          ctypes.byref(fprog))
    if result != 0:  # > 0: a thread that could not be synchronised
        return f"seccomp(2) failed ({result}: {os.strerror(ctypes.get_errno())})"
    return None


def unfiltered(pid: int) -> str | None:
    """Why some thread of process pid is not held to the worker's filter (read from /proc,
    from outside), or None when every thread carries it (or this machine takes none)."""
    if not supported():
        return None
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
            except (FileNotFoundError, ProcessLookupError):  # the thread ended since listed
                continue
            mode, count = fields["Seccomp"].strip(), int(fields["Seccomp_filters"])
            if mode != _FILTER_MODE or count < FILTERS:
                return (f"its thread {task} carries {count} seccomp filter(s), not the "
                        f"{FILTERS} that refuses new processes")
    except (OSError, KeyError, ValueError) as error:
        return f"its threads could not be read ({type(error).__name__})"
    return None


def _load(offset):
    return struct.pack("<HBBI", _LD_W_ABS, 0, 0, offset)


def _jump(op, k, true, false):
    return struct.pack("<HBBI", op, true, false, k)


def _ret(value):
    return struct.pack("<HBBI", _RET_K, 0, 0, value)
