"""Mistakes derived from a right answer: its code with one thing changed.

mutants(function) parses the source of a plain right answer (engine.stand_ins), changes
one thing at one place, or at every place with the same text (one slip made twice, as in
K[k0:k0 + b] and V[k0:k0 + b]), and compiles each result into a function of the same
parameters. The changes are the slips learners make: a sign flipped, a term or a factor
left out, an axis swapped, keepdims or a transpose dropped, a bound off by one, a slice
that forgets its offset, a variable or a function mixed up, a factor on the wrong term, a
line left out. Each Mutant says what changed, in code (`np.exp(m_new - m)` for
`np.exp(m - m_new)`) and in words (a sign flipped).
"""
import ast
import functools
import inspect
import itertools
import textwrap
from dataclasses import dataclass
from typing import Callable

import numpy as np

SWAPPED_FUNCTIONS = {"max": ("min", "mean"), "min": ("max",), "sum": ("mean", "max"),
                     "mean": ("sum",), "maximum": ("minimum",), "minimum": ("maximum",),
                     "tril": ("triu",), "triu": ("tril",)}
UNWRAPPED = {"exp": "the exp left out", "sqrt": "the square root left out",
             "log": "the log left out", "abs": "the absolute value left out"}
AXES = (0, 1, -1, -2)


@dataclass(frozen=True)
class Mutant:
    """A right answer with one change: what it was, what it became, and where."""

    kind: str  # the kind of change, in a learner's words: "a sign flipped"
    was: str  # the right code at the place that changed
    now: str  # the code there after the change ("" for a line left out)
    line: str  # the right line (or loop header) it is in
    line_now: str  # that line after the change
    places: int  # how many places of the same code changed (one slip made at each)
    run: Callable

    @property
    def headline(self):
        shown = self.now or self.was
        return f"{self.kind}: {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _int(node):
    """The int a node writes (1, -1), or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    return None


def _number(value):
    return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _plus(node, delta):
    value = _int(node)
    if value is not None:
        return _number(value + delta)
    return ast.BinOp(node, ast.Add() if delta > 0 else ast.Sub(), ast.Constant(abs(delta)))


def _code(node):
    return ast.unparse(node) if node is not None else ""


def _is_np(node, names=None):
    """Is node np.<name> (a name of names, when given)?"""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "np" and (names is None or node.attr in names))


def _binary(node):
    """Sign flips, terms and factors left out, operators mixed up, operands swapped."""
    if not isinstance(node, ast.BinOp):
        return
    left, op, right = node.left, node.op, node.right
    if isinstance(op, ast.Sub):
        yield "a sign flipped", ast.BinOp(right, ast.Sub(), left)
        yield "a sign flipped", ast.BinOp(left, ast.Add(), right)
        yield "a term left out", left
    if isinstance(op, ast.Add):
        yield "a sign flipped", ast.BinOp(left, ast.Sub(), right)
        yield "a term left out", left
        yield "a term left out", right
        yield from _factor_moved(node)
    if isinstance(op, ast.Mult):
        yield "a factor left out", left
        yield "a factor left out", right
        yield "divided where it should multiply", ast.BinOp(left, ast.Div(), right)
    if isinstance(op, ast.Div):
        yield "a division left out", left
        yield "multiplied where it should divide", ast.BinOp(left, ast.Mult(), right)
        yield "divided the other way round", ast.BinOp(right, ast.Div(), left)
    if isinstance(op, ast.FloorDiv):
        yield "a division left out", left
        yield "true division / for integer division //", ast.BinOp(left, ast.Div(), right)
        yield "the remainder % (modulo) for integer division //", ast.BinOp(left, ast.Mod(), right)
        yield "divided the other way round", ast.BinOp(right, ast.FloorDiv(), left)
    if isinstance(op, ast.MatMult):
        yield "an elementwise * for the matrix product @", ast.BinOp(left, ast.Mult(), right)
        yield "the operands of @ swapped", ast.BinOp(right, ast.MatMult(), left)
        yield from _transposes(node)


def _factor_moved(node):
    """a * f + b -> a + b * f: a factor (a correction) applied to the wrong term."""
    for term, other, term_first in ((node.left, node.right, True), (node.right, node.left, False)):
        if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
            for factor, rest in ((term.left, term.right), (term.right, term.left)):
                moved = ast.BinOp(other, ast.Mult(), factor)
                yield (f"the factor {_code(factor)} on the wrong term",
                       ast.BinOp(rest, ast.Add(), moved) if term_first
                       else ast.BinOp(moved, ast.Add(), rest))


def _transposes(node):
    """A transpose added to an operand of @, or moved to the other one."""
    left, right = node.left, node.right
    is_t = [isinstance(side, ast.Attribute) and side.attr == "T" for side in (left, right)]
    if not is_t[0]:
        yield "a transpose where none belongs", ast.BinOp(ast.Attribute(left, "T", ast.Load()), ast.MatMult(), right)
    if not is_t[1]:
        yield "a transpose where none belongs", ast.BinOp(left, ast.MatMult(), ast.Attribute(right, "T", ast.Load()))
    if is_t[1] and not is_t[0]:
        yield "the transpose on the wrong matrix", ast.BinOp(ast.Attribute(left, "T", ast.Load()),
                                                              ast.MatMult(), right.value)


def _compare(node):
    """< for <= (a bound off by one), or the comparison reversed."""
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return
    by_one = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
    reverse = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
    op = type(node.ops[0])
    if op in by_one:
        yield "a bound off by one", ast.Compare(node.left, [by_one[op]()], node.comparators)
        yield "a comparison reversed", ast.Compare(node.left, [reverse[op]()], node.comparators)


def _calls(node):
    """Axes swapped, keepdims dropped, functions mixed up or left out, np.where's branches
    swapped, transposes dropped or reordered."""
    if not isinstance(node, ast.Call):
        return
    for index, keyword in enumerate(node.keywords):
        rest = node.keywords[:index] + node.keywords[index + 1:]
        value = _int(keyword.value)
        if keyword.arg == "axis" and value is not None:
            for other in AXES:
                if other != value:
                    moved = list(node.keywords)
                    moved[index] = ast.keyword("axis", _number(other))
                    yield "the wrong axis", ast.Call(node.func, node.args, moved)
            yield ("the axis left out: one value for the whole array, not one per row",
                   ast.Call(node.func, node.args, rest))
        if keyword.arg == "keepdims":
            yield "keepdims=True left out", ast.Call(node.func, node.args, rest)
    func = node.func
    if isinstance(func, ast.Attribute):
        for other in SWAPPED_FUNCTIONS.get(func.attr, ()):
            yield f"{other} for {func.attr}", ast.Call(ast.Attribute(func.value, other, ast.Load()),
                                                       node.args, node.keywords)
        if func.attr == "transpose" and node.args and all(_int(a) is not None for a in node.args):
            order = tuple(_int(a) for a in node.args)
            for other in itertools.permutations(range(len(order))):
                if other != order:
                    yield "the axes in the wrong order", ast.Call(
                        func, [ast.Constant(a) for a in other], [])
            yield "the transpose left out", func.value
    if _is_np(func, UNWRAPPED) and len(node.args) == 1:
        yield UNWRAPPED[func.attr], node.args[0]
    if _is_np(func, ("swapaxes",)) and node.args:
        yield "the transpose left out", node.args[0]
    if _is_np(func, ("where",)) and len(node.args) == 3:
        yield "the branches of np.where swapped", ast.Call(
            func, [node.args[0], node.args[2], node.args[1]], node.keywords)


def _subscripts(node):
    """A new axis (None) left out; a slice that forgets its offset."""
    if isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        nones = [i for i, part in enumerate(parts) if isinstance(part, ast.Constant)
                 and part.value is None]
        plain = all(isinstance(p, (ast.Slice, ast.Constant)) and not (
            isinstance(p, ast.Slice) and (p.lower or p.upper or p.step)) for p in parts)
        if nones and plain:
            yield "a new axis (None) left out", node.value
        if len(parts) > 1:
            for i in nones:
                kept = parts[:i] + parts[i + 1:]
                yield "a new axis (None) too few", ast.Subscript(
                    node.value, ast.Tuple(kept, ast.Load()) if len(kept) > 1 else kept[0], node.ctx)
    if (isinstance(node, ast.Slice) and node.lower is not None
            and isinstance(node.upper, ast.BinOp) and isinstance(node.upper.op, ast.Add)
            and _code(node.upper.left) == _code(node.lower)):
        yield f"a slice that forgets its offset {_code(node.lower)}", ast.Slice(None, node.upper.right)


def _transpose_attribute(node):
    if isinstance(node, ast.Attribute) and node.attr == "T":
        yield "the transpose .T left out", node.value


def _bounds(node, bound):
    """A bound (of a slice, a range, an arange) or an integer constant off by one."""
    if bound or (_int(node) is not None):
        for delta in (1, -1):
            yield "off by one", _plus(node, delta)


def _variables(node, similar, siblings):
    """A variable, or an attribute of the same object, in place of another: one with a
    similar name (m and m_new, t_q and t_k, Q and K) or one it was computed from (scores
    for x = np.where(mask, scores, -np.inf))."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        for other in similar.get(node.id, ()):
            yield "the wrong variable", ast.Name(other, ast.Load())
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and isinstance(node.ctx, ast.Load) and node.attr in siblings.get(node.value.id, ())):
        for other in siblings[node.value.id]:
            if other != node.attr and other[0] == node.attr[0]:
                yield "the wrong attribute", ast.Attribute(node.value, other, ast.Load())


def _statement(node, last, defined):
    """A line left out: an update of a name that already has a value (m = m_new in a loop,
    a repair such as m = np.where(...)); leaving out the line that first defines a name is
    no slip, just a NameError."""
    if not isinstance(node, (ast.Assign, ast.AugAssign)) or node is last:
        return
    targets = [n.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
               for n in ast.walk(t) if isinstance(n, ast.Name)]
    if targets and all(defined.get(name, node.lineno) < node.lineno for name in targets):
        yield "a line left out", None


def _header(statement):
    """The line a learner sees for a statement: the whole simple statement, or the header
    of a loop or a condition."""
    if isinstance(statement, ast.For):
        return f"for {_code(statement.target)} in {_code(statement.iter)}:"
    if isinstance(statement, (ast.If, ast.While)):
        return f"{'if' if isinstance(statement, ast.If) else 'while'} {_code(statement.test)}:"
    return _code(statement)


class _Source:
    """A plain right answer, parsed: its nodes in walk order and what each one is in."""

    def __init__(self, function):
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        self.definition = tree.body[0]
        body = self.definition.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            self.definition.body = body[1:]  # the docstring says nothing about mistakes
        self.nodes = list(ast.walk(self.definition))
        self.parent, self.line = {}, {}
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
        for statement in (n for n in self.nodes if isinstance(n, ast.stmt)):
            for sub in ast.walk(statement):
                self.line[id(sub)] = statement  # the innermost statement wins (walked last)
        arguments = [a.arg for a in self.definition.args.args]
        stored = [n.id for n in self.nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        names = list(dict.fromkeys(arguments + stored))
        self.defined = {a: 0 for a in arguments}  # the first line that gives each name a value
        for n in self.nodes:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                self.defined[n.id] = min(self.defined.get(n.id, n.lineno), n.lineno)
        sources = {}
        for statement in (n for n in self.nodes if isinstance(n, ast.Assign)):
            used = [n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)]
            for target in (n for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                sources.setdefault(target.id, []).extend(u for u in used if u in names)
        self.similar = {name: [other for other in names if other != name and (
            other[0].lower() == name[0].lower() or other in sources.get(name, ())
            or (name in arguments and other in arguments))] for name in names}
        self.siblings = {}
        for n in self.nodes:
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id != "np":
                self.siblings.setdefault(n.value.id, []).append(n.attr)
        self.siblings = {k: list(dict.fromkeys(v)) for k, v in self.siblings.items()}

    def is_bound(self, node):
        """Is node a bound of a slice, or an argument of range or np.arange?"""
        parent = self.parent.get(id(node))
        if isinstance(parent, ast.Slice) and node in (parent.lower, parent.upper):
            return True
        return isinstance(parent, ast.Call) and node in parent.args and (
            (isinstance(parent.func, ast.Name) and parent.func.id == "range")
            or _is_np(parent.func, ("arange",)))

    def changes(self):
        """(node index, kind, new node or None) for every change at every place."""
        last = self.definition.body[-1]
        for index, node in enumerate(self.nodes[1:], start=1):
            parent = self.parent.get(id(node))
            if isinstance(parent, ast.keyword) or (
                    isinstance(parent, ast.UnaryOp) and _int(parent) is not None):
                continue  # axis=-1 is changed as an axis; the 1 of -1 as the whole -1
            operators = (_binary(node), _compare(node), _calls(node), _subscripts(node),
                         _transpose_attribute(node), _bounds(node, self.is_bound(node)),
                         _variables(node, self.similar, self.siblings),
                         _statement(node, last, self.defined))
            for kind, new in itertools.chain(*operators):
                yield index, kind, new

    def build(self, replacements):
        """(the function with the nodes at these indices replaced (None: a line removed), the
        first changed line as it reads then). The nodes are swapped in place for the compile
        and put back after it."""
        undo = []
        try:
            for index, new in replacements.items():
                node = self.nodes[index]
                undo.append(_swap(self.parent[id(node)], node, new))
            module = ast.fix_missing_locations(ast.Module([self.definition], []))
            namespace = {"np": np}
            exec(compile(module, "<derived mistake>", "exec"), namespace)
            first = self.nodes[next(iter(replacements))]
            line = self.line.get(id(first), self.definition)
            return namespace[self.definition.name], "" if line is first else _header(line)
        finally:
            for restore in reversed(undo):
                restore()


def _swap(parent, node, new):
    """Put new where node is in parent (None: remove node from its list); return the undo."""
    for field, value in ast.iter_fields(parent):
        if value is node:
            setattr(parent, field, new)
            return lambda: setattr(parent, field, node)
        if isinstance(value, list) and any(item is node for item in value):
            position = next(i for i, item in enumerate(value) if item is node)
            if new is None:
                del value[position]
                return lambda: value.insert(position, node)
            value[position] = new
            return lambda: value.__setitem__(position, node)
    raise ValueError("node not found in its parent")


@functools.lru_cache(maxsize=None)
def mutants(function):
    """Every one-change variant of a plain right answer, in a fixed order: each place on
    its own, then each change made at every place with the same code."""
    source = _Source(function)
    found, sites = [], {}
    for index, kind, new in source.changes():
        node = source.nodes[index]
        key = (kind, _code(node), _code(new))
        sites.setdefault(key, []).append((index, new))
    for (kind, was, now), places in sites.items():
        groups = [[place] for place in places] + ([places] if len(places) > 1 else [])
        for group in groups:
            try:
                run, line_now = source.build(dict(group))
            except (SyntaxError, ValueError, TypeError):  # an empty body, say: no function
                continue
            line = _header(source.line.get(id(source.nodes[group[0][0]]), source.definition))
            found.append(Mutant(kind, was, now, line, line_now, len(group), run))
    return tuple(found)
