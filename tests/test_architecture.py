"""The shape of the code: attncore's import graph has no circle and no arrow up, and no
module outside tests/ is over the line budget.

The graph is read from the source (ast), not by importing: every `import` and `from ...
import` that names a module of attncore, at any depth (inside functions too, where an import
that would close a circle at load time is often hidden), resolved to the module file it
names. Importing a package's submodule also runs the package's __init__, which is not an
edge here: Python initialises the package first, so no circle comes from it.

The layers are DESIGN.md's, bottom to top: a module may import its own layer and the ones
below, never one above (grading uses invariants and attention, never the reverse; viz is
the book's; bench, the harness, sits on top).

The line budget, after tinygrad's: a module of more than MAX_LINES lines is a module to
split.
"""
import ast
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attncore"
MAX_LINES = 700
SOURCES = ("attncore", "benchmarks", "book")  # every .py outside tests/, with the files at the top

# attncore's layers, bottom to top, by the first name under attncore ("" is the package's
# own __init__, the public face: `import attncore`).
LAYERS = (
    {"_checks"},
    {"softmax", "masks", "bfloat16", "feature_maps", "legibility"},
    {"attention", "flash", "invariants"},
    {"", "bert", "jit"},
    {"viz"},
    {"grading"},
    {"bench"},
)


def module_files(package=PACKAGE):
    """{dotted module name: its file} for every module of package."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports(name, path, modules):
    """The modules of `modules` that the module `name` (its file: path) imports, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from a import b` imports the module a.b when there is one, else a name of a
            found.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                         for alias in node.names)
    return {module for module in found if module in modules and module != name}


def import_graph(package=PACKAGE):
    """{module: the modules it imports} for every module of package."""
    modules = module_files(package)
    return {name: imports(name, path, modules) for name, path in modules.items()}


class Circle(NamedTuple):
    """Modules that import each other round in a circle: one round (from the first module by
    name, the shortest, back to it) and every module of the group."""

    round: list
    modules: list

    def __str__(self):
        return " -> ".join(self.round) + (f" (the circle holds {', '.join(self.modules)})"
                                          if len(self.modules) + 1 > len(self.round) else "")


def circles(graph):
    """Every circle of imports, one per strongly connected group of modules (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted((Circle(_round(graph, group), sorted(group)) for group in groups), key=lambda c: c.modules)


def _round(graph, group):
    """A shortest path from the group's first module back to it, through the group only."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & group):
                if target == start:
                    return paths[node] + [start]
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{sorted(group)} is not a circle")


def layer(module):
    """The index in LAYERS of an attncore module."""
    top = module.split(".")[1] if "." in module else ""
    for number, names in enumerate(LAYERS):
        if top in names:
            return number
    raise KeyError(f"{module} is in no layer: add {top!r} to LAYERS in tests/test_architecture.py "
                   "(and to DESIGN.md's layers)")


def test_the_graph_sees_imports_at_any_depth(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .a import f\n")
    (package / "a.py").write_text("def f():\n    from .sub import b\n    return b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("import pkg.a\nfrom ..a import f\nfrom pkg import sub\n")
    graph = import_graph(package)
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub": set(),
                     "pkg.sub.b": {"pkg.a", "pkg.sub"}}
    assert circles(graph) == [(["pkg.a", "pkg.sub.b", "pkg.a"], ["pkg.a", "pkg.sub.b"])]


def test_circles_are_found_and_named_from_their_first_module():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"c", "e"}, "e": set(), "f": {"g"}, "g": {"f"}}
    found = circles(graph)
    assert found == [(["a", "b", "c", "a"], ["a", "b", "c", "d"]), (["f", "g", "f"], ["f", "g"])]
    assert str(found[0]) == "a -> b -> c -> a (the circle holds a, b, c, d)"
    assert str(found[1]) == "f -> g -> f"
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_circle_of_imports_in_attncore():
    found = circles(import_graph())
    assert found == [], "circles of imports in attncore/:\n" + "\n".join(map(str, found))


def upward(graph):
    """Every import of a module from a higher layer, as a sentence."""
    return sorted(f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
                  for module, targets in graph.items() for target in targets if layer(target) > layer(module))


def test_an_arrow_up_is_named():
    graph = {"attncore.softmax": {"attncore._checks", "attncore.grading.engine"}, "attncore.grading.engine": set(),
             "attncore.viz": {"attncore.invariants"}, "attncore._checks": set(), "attncore.invariants": set()}
    assert upward(graph) == ["attncore.softmax (layer 1) imports attncore.grading.engine (layer 5)"]


def test_no_module_imports_a_higher_layer():
    graph = import_graph()
    assert {"attncore.softmax", "attncore.grading.engine.probe", "attncore.jit.flash"} <= set(graph)
    found = upward(graph)
    assert found == [], "\n".join(found)


def test_no_module_outside_the_tests_is_over_the_line_budget():
    files = [*ROOT.glob("*.py"), *(path for folder in SOURCES for path in (ROOT / folder).rglob("*.py"))]
    assert any(path.name == "flash.py" for path in files)  # the scan sees the library
    sizes = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines()) for path in files}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
