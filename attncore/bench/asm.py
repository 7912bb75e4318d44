"""Read compiled loops: the innermost loops of a function's assembly and what they load and store.

Chapter 7 counts, for the tile product of each jit path, the FMAs, loads and stores of the
loop that runs once per step of the reduction. In the assembly a loop is the span from a
label to a backward jump to it; nested loops give nested spans, and an outer span contains
the inner loop's text as well as its own (the peeled first step, the stores of the result).
So the loop to count is an **innermost** one: a span that contains no other loop's span.
Among those, the product's reduction loop is the one with the most FMA *lanes*: a scalar
remainder loop can hold more FMA instructions than the vector loop (one lane each, against
8 or 16), and it is the vector loop that runs once per step.
"""
import re

FMA = re.compile(r"\bv?fmadd\d*[ps][sd]\b|\bfmla\b")            # x86 FMA (packed or scalar), Arm fmla
MUL = re.compile(r"\bv?mul[ps][sd]\b|\bfmul\s+[vsd]")            # multiplies (of an unfused step), packed or scalar
_JUMP = re.compile(r"j\w+\s+(\.?\w+)$|b\.?\w*\s+(\.?\w+)$")
_LABEL = re.compile(r"\.?\w+:")
_STORE = re.compile(r"v?mov\w*\s+%\w+,\s*-?\w*\(")               # AT&T: register source, memory destination
_REGISTER_BYTES = {"zmm": 64, "ymm": 32, "xmm": 16}
_ARM_LANES = re.compile(r"\bv\d+\.(\d+)[sd]\b")                  # fmla v0.4s: 4 lanes


def _lines(asm: str) -> list[str]:
    """The instructions and labels of the compiled functions, not of the wrappers that convert
    Python objects (cpython... and cfunc...)."""
    functions = re.split(r"^\s*\.type\s+", asm, flags=re.MULTILINE)
    kept = [f for f in functions if re.match(r"_ZN(?!7cpython)", f)]
    return [line.strip() for f in kept for line in f.splitlines()]


def loop_spans(asm: str) -> tuple[list[tuple[int, int]], list[str]]:
    """(start, end) of every loop, from the line after its label to its backward jump; and the lines."""
    lines = _lines(asm)
    labels = {line[:-1]: i for i, line in enumerate(lines) if _LABEL.fullmatch(line)}
    spans = []
    for i, line in enumerate(lines):
        jump = _JUMP.match(line)
        target = jump and (jump.group(1) or jump.group(2))
        if target in labels and labels[target] < i:
            spans.append((labels[target] + 1, i))
    return spans, lines


def _body(lines: list[str], start: int, end: int) -> list[str]:
    return [x for x in lines[start:end + 1] if x and not x.startswith((".", "#")) and not _LABEL.fullmatch(x)]


def loop_bodies(asm: str) -> list[list[str]]:
    """The instruction lists of every loop, outer loops included (their inner loops' text too)."""
    spans, lines = loop_spans(asm)
    return [_body(lines, s, e) for s, e in spans]


def innermost_loops(asm: str) -> list[list[str]]:
    """The instruction lists of the loops that contain no other loop."""
    spans, lines = loop_spans(asm)
    inner = [(s, e) for s, e in spans
             if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in spans)]
    return [_body(lines, s, e) for s, e in inner]


def count(body: list[str], pattern: re.Pattern = FMA) -> int:
    """How many instructions of body match pattern."""
    return sum(bool(pattern.search(x)) for x in body)


def lanes(instruction: str) -> int:
    """How many numbers one arithmetic instruction computes: 1 for a scalar one (ss, sd), the
    register's width over the element's for a packed x86 one (zmm: 16 floats), the lanes
    named by an Arm vector operand (v0.4s: 4)."""
    arm = _ARM_LANES.search(instruction)
    if arm:
        return int(arm.group(1))
    packed = re.search(r"p([sd])\b", instruction.split()[0])
    if not packed:
        return 1
    register = re.search(r"%(zmm|ymm|xmm)", instruction)
    width = _REGISTER_BYTES[register.group(1)] if register else 16
    return width // (4 if packed.group(1) == "s" else 8)


def fma_lanes(body: list[str]) -> int:
    """Multiply-adds per pass of a loop body: the lanes of its FMA instructions."""
    return sum(lanes(x) for x in body if FMA.search(x))


def reduction_loop(asm: str) -> list[str]:
    """The innermost loop with the most FMA lanes (the vector loop, not a scalar remainder); [] if none."""
    loops = [body for body in innermost_loops(asm) if count(body)]
    return max(loops, key=fma_lanes, default=[])


def multiply_adds(body: list[str]) -> int:
    """FMA instructions plus multiplies (packed or scalar): the multiply-adds of a loop where
    some steps are not fused, counted in instructions as the loads and stores are."""
    return count(body) + count(body, MUL)


def memory_operations(body: list[str]) -> tuple[int, int, int]:
    """(FMAs, loads, stores) of a loop body in AT&T syntax: every instruction with a memory
    operand counts once (broadcasts and FMAs that read memory are loads), except address
    arithmetic (lea), prefetches and padding; a store moves a register to memory."""
    moves = [x for x in body if "(" in x and not x.startswith(("lea", "prefetch", "nop"))]
    stores = sum(bool(_STORE.match(x)) for x in moves)
    return count(body), len(moves) - stores, stores
