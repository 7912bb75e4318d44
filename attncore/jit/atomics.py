"""What the kernels' threads share: the queue of tasks (_take_next) and pack-once flags
(_packing, _publish) for an operand that the first thread to need it lays out for all.

A flag is an int64: 0 nobody has claimed it, 1 a thread is writing it, 2 written. The flags
are LLVM atomics (compare-and-swap with acquire-release, loads with acquire, the store
with release), so the compiler neither keeps a flag in a register while a thread waits nor
moves the writes of the packing past the flag that says they are done. A thread that waits
spins with a pause instruction (x86's pause: the core lends its pipeline to its sibling
thread and does not flood the memory bus with reads of the flag), and after SPINS spins
gives its time slice away (sched_yield): with more threads than cores the packer may be
waiting for this very core.
"""
import os
import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .compiling import _jit

_I64 = ir.IntType(64)
UNCLAIMED, WRITING, WRITTEN = 0, 1, 2
SPINS = 256  # pauses before a waiting thread yields its time slice, then one yield per check


def _is_counter(x):
    return isinstance(x, types.Array) and x.dtype == types.int64 and x.ndim == 1


def _on_flag(returns, emit):
    """The typer of an intrinsic (flags, i) -> returns on flags[i] (flags 1-D int64): emit(builder,
    pointer to flags[i]) writes the atomic operation and gives its value (ignored when void)."""

    def typer(typingctx, flags, i):
        if not (_is_counter(flags) and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            value = emit(builder, builder.gep(data, [context.cast(builder, args[1], signature.args[1], types.intp)]))
            return context.get_dummy_value() if returns is types.void else value

        return returns(flags, i), codegen

    return typer


@intrinsic
def _take_next(typingctx, counter):
    """Atomically add 1 to counter[0] and return its old value: a shared queue of task numbers."""
    if not _is_counter(counter):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", data, ir.Constant(_I64, 1), "monotonic")

    return types.int64(counter), codegen


# flags[i] from UNCLAIMED to WRITING if it is UNCLAIMED, atomically; returns what it was
_claim = intrinsic(_on_flag(types.int64, lambda builder, pointer: builder.extract_value(
    builder.cmpxchg(pointer, ir.Constant(_I64, UNCLAIMED), ir.Constant(_I64, WRITING), "acq_rel", "acquire"), 0)))
# flags[i], read with acquire (what the writer wrote before WRITTEN is visible after it)
_flag = intrinsic(_on_flag(types.int64, lambda builder, pointer: builder.load_atomic(pointer, "acquire", 8)))
# flags[i] = WRITTEN, with release: the writes before it are visible to whoever reads it
_publish = intrinsic(_on_flag(types.void, lambda builder, pointer: builder.store_atomic(
    ir.Constant(_I64, WRITTEN), pointer, "release", 8)))


@intrinsic
def _pause(typingctx):
    """x86's pause instruction (llvm.x86.sse2.pause), a spin-wait hint; nothing elsewhere."""

    def codegen(context, builder, signature, args):
        if platform.machine().lower() in ("x86_64", "amd64"):
            pause = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                   "llvm.x86.sse2.pause")
            builder.call(pause, [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _yield(typingctx):
    """sched_yield(): give the rest of this thread's time slice away (POSIX; nothing elsewhere)."""

    def codegen(context, builder, signature, args):
        if os.name == "posix":
            sched_yield = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []),
                                                         "sched_yield")
            builder.call(sched_yield, [])
        return context.get_dummy_value()

    return types.void(), codegen


@_jit
def _packing(flags, i):
    """True if the calling thread is to write operand i now (then _publish(flags, i) when done);
    False once another thread has written it (waiting while that thread writes: SPINS pauses,
    then a yield of its time slice between checks)."""
    if _claim(flags, i) == UNCLAIMED:
        return True
    spins = 0
    while _flag(flags, i) != WRITTEN:
        if spins < SPINS:
            _pause()
            spins += 1
        else:
            _yield()
    return False
