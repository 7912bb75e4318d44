"""Read compiled loops: the innermost loops of a function's assembly and what they load and store.

Chapter 7 counts, for the tile product of each jit path, the FMAs, loads and stores of the
loop that runs once per step of the reduction. In the assembly a loop is the span from a
label to a backward jump to it; nested loops give nested spans, and an outer span contains
the inner loop's text as well as its own (the peeled first step, the stores of the result).
So the loop to count is an **innermost** one: a span that contains no other loop's span.
Among those, the one with the most FMAs is the product's reduction loop.
"""
import re

FMA = re.compile(r"\bv?fmadd\d*[ps][sd]\b|\bfmla\b")            # x86 FMA (packed or scalar), Arm fmla
MUL = re.compile(r"\bv?mulp[sd]\b|\bfmul\s+v")                   # packed multiplies (of an unfused step)
_JUMP = re.compile(r"j\w+\s+(\.?\w+)$|b\.?\w*\s+(\.?\w+)$")
_LABEL = re.compile(r"\.?\w+:")
_STORE = re.compile(r"v?mov\w*\s+%\w+,\s*-?\w*\(")               # AT&T: register source, memory destination


def _lines(asm):
    """The instructions and labels of the compiled functions, not of the wrappers that convert
    Python objects (cpython... and cfunc...)."""
    functions = re.split(r"^\s*\.type\s+", asm, flags=re.MULTILINE)
    kept = [f for f in functions if re.match(r"_ZN(?!7cpython)", f)]
    return [line.strip() for f in kept for line in f.splitlines()]


def loop_spans(asm):
    """(start, end, lines): every loop, from the line after its label to its backward jump."""
    lines = _lines(asm)
    labels = {line[:-1]: i for i, line in enumerate(lines) if _LABEL.fullmatch(line)}
    spans = []
    for i, line in enumerate(lines):
        jump = _JUMP.match(line)
        target = jump and (jump.group(1) or jump.group(2))
        if target in labels and labels[target] < i:
            spans.append((labels[target] + 1, i))
    return spans, lines


def _body(lines, start, end):
    return [x for x in lines[start:end + 1] if x and not x.startswith((".", "#")) and not _LABEL.fullmatch(x)]


def loop_bodies(asm):
    """The instruction lists of every loop, outer loops included (their inner loops' text too)."""
    spans, lines = loop_spans(asm)
    return [_body(lines, s, e) for s, e in spans]


def innermost_loops(asm):
    """The instruction lists of the loops that contain no other loop."""
    spans, lines = loop_spans(asm)
    inner = [(s, e) for s, e in spans
             if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in spans)]
    return [_body(lines, s, e) for s, e in inner]


def count(body, pattern=FMA):
    return sum(bool(pattern.search(x)) for x in body)


def reduction_loop(asm, pattern=FMA):
    """The innermost loop with the most instructions matching pattern (FMAs by default); [] if none."""
    return max(innermost_loops(asm), key=lambda body: count(body, pattern), default=[])


def multiply_adds(body):
    """FMAs plus packed multiplies: the multiply-adds of a loop where some are not fused."""
    return count(body) + count(body, MUL)


def memory_operations(body):
    """(FMAs, loads, stores) of a loop body in AT&T syntax: every instruction with a memory
    operand counts once (broadcasts and FMAs that read memory are loads), except address
    arithmetic (lea), prefetches and padding; a store moves a register to memory."""
    moves = [x for x in body if "(" in x and not x.startswith(("lea", "prefetch", "nop"))]
    stores = sum(bool(_STORE.match(x)) for x in moves)
    return count(body), len(moves) - stores, stores
