"""Every public function of the core library says what it takes and returns (review 3.6.1).

Public: defined in the module (not imported into it), name without a leading underscore.
The hints must also resolve (typing.get_type_hints), so a misspelt name in a string
annotation fails here rather than in a reader's type checker.
"""
import importlib
import inspect
import typing

import pytest

MODULES = [
    "attncore._checks",
    "attncore.attention",
    "attncore.bert",
    "attncore.bfloat16",
    "attncore.feature_maps",
    "attncore.flash",
    "attncore.invariants",
    "attncore.masks",
    "attncore.softmax",
    "attncore.viz",
]


def _public_functions(module):
    """name -> function for the public functions and public methods of public classes."""
    found = {}
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            found[name] = obj
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if inspect.isfunction(function) and (not attr.startswith("_") or attr in ("__init__", "__call__")):
                    if function.__qualname__.startswith(obj.__qualname__ + "."):  # not a generated one
                        found[f"{name}.{attr}"] = function
    return found


def _without_hints(functions):
    """The signatures of functions ({qualname: function}) that lack a hint; every hint must resolve."""
    missing = []
    for qualname, function in functions.items():
        signature = inspect.signature(function)
        unannotated = [p.name for p in signature.parameters.values()
                       if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")]
        if unannotated or signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{qualname}{signature}")
        typing.get_type_hints(function)  # every annotation names something that exists
    return missing


@pytest.mark.parametrize("name", MODULES)
def test_public_functions_are_annotated(name):
    module = importlib.import_module(name)
    functions = _public_functions(module)
    assert functions, f"{name} has no public functions?"
    missing = _without_hints(functions)
    assert not missing, f"{name}: without full type hints: {missing}"


def test_jits_public_functions_are_annotated():
    """The same for attncore.jit's __all__ (Numba optional): precision and path as Literal types,
    and the tuple that return_lse=True gives known to a type checker (typing.overload)."""
    jit = pytest.importorskip("attncore.jit")
    functions = {}
    for name in jit.__all__:
        obj = getattr(jit, name)
        if inspect.isfunction(obj):
            functions[name] = obj
        elif inspect.isclass(obj):
            functions.update({qualname: function for qualname, function in
                              _public_functions(inspect.getmodule(obj)).items() if qualname.startswith(f"{name}.")})
    assert "flash_attention" in functions and "TileShape.nr" in functions
    missing = _without_hints(functions)
    assert not missing, f"attncore.jit: without full type hints: {missing}"
    for name in ("flash_attention", "decode_attention"):
        hints = typing.get_type_hints(getattr(jit, name))
        assert typing.get_args(hints["precision" if name == "flash_attention" else "path"])
        returns = [typing.get_type_hints(overload)["return"] for overload in typing.get_overloads(getattr(jit, name))]
        assert len(returns) == 2 and typing.get_origin(returns[1]) is tuple
