"""The clock the cores run at, measured, and whether the CPU's hardware counters can be read.

A chain of dependent integer adds, each waiting for the result of the one before, takes one
cycle per add on current x86-64 and Arm cores (the latency of an integer add). The chain is
emitted as inline assembly through llvmlite, so no optimiser can fold it into a multiply, and
its result is checked: cycles = adds, and adds / CPU seconds is the clock. CPU seconds of the
calling thread, not wall seconds: a thread the system takes off its core stops counting.
On another architecture nothing is measured (None).

perf_counters asks `perf stat` whether the hardware counters exist here (in many virtual
machines they do not: perf prints "<not supported>"), and never invents a count.
"""
import ctypes
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

ADDS_PER_STEP = 100
_ASM = {"x86_64": "addq $2, $0", "amd64": "addq $2, $0", "aarch64": "add $0, $0, $2", "arm64": "add $0, $0, $2"}
_engine = {}


def _add_chain():
    """chain(steps, x) -> x + steps * ADDS_PER_STEP * x, one dependent add at a time, or None
    on an architecture without an add template here."""
    template = _ASM.get(platform.machine().lower())
    if template is None:
        return None
    if "chain" not in _engine:
        from llvmlite import binding, ir

        i64 = ir.IntType(64)
        module = ir.Module(name="clock")
        function = ir.Function(module, ir.FunctionType(i64, [i64, i64]), name="add_chain")
        steps, x0 = function.args
        entry, loop, done = (function.append_basic_block(name) for name in ("entry", "loop", "done"))
        builder = ir.IRBuilder(entry)
        builder.branch(loop)
        builder.position_at_end(loop)
        i, x = builder.phi(i64), builder.phi(i64)
        adds = ir.InlineAsm(ir.FunctionType(i64, [i64, i64]), "\n".join([template] * ADDS_PER_STEP), "=r,0,r",
                            side_effect=True)
        y = builder.call(adds, [x, x0])
        i_next = builder.add(i, ir.Constant(i64, 1))
        builder.cbranch(builder.icmp_unsigned("<", i_next, steps), loop, done)
        i.add_incoming(ir.Constant(i64, 0), entry)
        i.add_incoming(i_next, loop)
        x.add_incoming(x0, entry)
        x.add_incoming(y, loop)
        builder.position_at_end(done)
        builder.ret(y)
        binding.initialize_native_target()
        binding.initialize_native_asmprinter()
        binding.initialize_native_asmparser()  # the inline assembly is parsed by LLVM
        machine = binding.Target.from_default_triple().create_target_machine()
        engine = binding.create_mcjit_compiler(binding.parse_assembly(str(module)), machine)
        engine.finalize_object()
        _engine["engine"] = engine  # the machine code lives as long as the engine
        _engine["chain"] = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64)(
            engine.get_function_address("add_chain"))
    return _engine["chain"]


def _chain_rate(chain, steps, repeats, out):
    """Appends the adds per CPU second of each repeat of one chain, on this thread."""
    for _ in range(repeats):
        start = time.thread_time()
        result = chain(steps, 3)  # ctypes releases the GIL: threads run their chains at once
        seconds = time.thread_time() - start
        if result != (3 + steps * ADDS_PER_STEP * 3) % 2**64:
            raise RuntimeError(f"the add chain returned {result}: its adds did not all run")
        out.append(steps * ADDS_PER_STEP / seconds)


def measured_clock(threads: int = 1, adds: int = 2 * 10**8, repeats: int = 5) -> dict | None:
    """{"ghz", "runs_ghz", "threads", "adds", "method"}: the clock from `threads` chains run at
    once (one per thread; more threads than one show the clock with every core busy), the
    fastest repeat of the slowest thread (a disturbance only ever lowers a rate); None where
    the chain cannot be built."""
    chain = _add_chain()
    if chain is None:
        return None
    steps = max(1, adds // ADDS_PER_STEP)
    chain(1000, 3)  # warm the code and the core
    rates = [[] for _ in range(threads)]
    workers = [threading.Thread(target=_chain_rate, args=(chain, steps, repeats, rates[t])) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    per_repeat = [min(r[i] for r in rates) / 1e9 for i in range(repeats)]
    return {"ghz": max(per_repeat), "runs_ghz": per_repeat, "threads": threads, "adds": steps * ADDS_PER_STEP,
            "method": "a chain of dependent integer adds (inline assembly, one cycle each), adds per CPU second"}


def peak_at(theory: dict, ghz: float) -> float:
    """The theoretical peak (bench.theoretical_peak's dict) recomputed at another clock, GFLOP/s."""
    return theory["cores"] * theory["fma_pipes"] * theory["lanes"] * 2 * ghz


def parse_perf_stat(text: str) -> dict[str, float | None]:
    """{event: count or None} from `perf stat -x ,` output: None where perf printed
    "<not supported>" or "<not counted>" instead of a number."""
    counts = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3 or not fields[2]:
            continue
        value, event = fields[0], fields[2].split(":")[0]
        try:
            counts[event] = float(value)
        except ValueError:
            counts[event] = None
    return counts


def perf_counters(command: Sequence[str] = ("true",), events: Sequence[str] = ("cycles", "instructions")) -> dict:
    """{"available", "reason", "counts"}: whether `perf stat` reads these hardware counters here,
    from one run of `command`; counts only where every event was counted."""
    perf = shutil.which("perf")
    if perf is None:
        return {"available": False, "reason": "perf is not installed", "counts": None}
    try:
        run = subprocess.run([perf, "stat", "-x", ",", "-e", ",".join(events), "--", *command],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"available": False, "reason": f"perf stat failed: {error}", "counts": None}
    counts = parse_perf_stat(run.stderr)
    missing = [e for e in events if counts.get(e) is None]
    if run.returncode and not counts:
        first = next((line for line in run.stderr.splitlines() if line.strip()), "no output")
        return {"available": False, "counts": None, "reason": f"perf stat failed: {first.strip()}"}
    if missing:
        said = "not supported" if "<not supported>" in run.stderr else "not counted"
        return {"available": False, "counts": None, "reason": f"perf stat reports {', '.join(missing)} as {said}"}
    return {"available": True, "reason": "perf stat counted every event", "counts": counts}


CHAIN_COMMAND = "from attncore.bench import clock; clock._add_chain()({steps}, 3)"


def cycles_per_add(adds: int = 2 * 10**8) -> float | None:
    """Cycles per add of the chain counted by perf (the difference of two runs, adds and twice
    as many, so that Python's start-up cancels), or None where the counters cannot be read."""
    counted = []
    for n in (adds, 2 * adds):
        command = (sys.executable, "-c", CHAIN_COMMAND.format(steps=n // ADDS_PER_STEP))
        result = perf_counters(command, events=("cycles",))
        if not result["available"]:
            return None
        counted.append(result["counts"]["cycles"])
    return (counted[1] - counted[0]) / adds
