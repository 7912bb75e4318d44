"""course.wire carries the library values listed in course.wire_types, and nothing else.

The list lives in course/, not in the suites, because the worker reads it and must not
import the engine; what the suites pass is checked against it here instead: every
argument of every case arrives as itself.

wire.py names no exercise type: every listed record (a frozen dataclass) and every listed
named value round-trips here from the list alone, a record type added to the list travels
without a change to wire.py, and what a worker sends that is not listed (another type, a
module path, a name outside its table, fields that are not the type's) arrives as Opaque
without anything being imported.
"""
import dataclasses
import json
import sys

import numpy as np
import pytest

from attncore.grading.course import wire, wire_types
from attncore.grading.engine import SPECS


def example(kind):
    """An instance of a listed record type, every field filled from its annotation:
    an array (4, 4) for an array, 2 for an int."""
    values = {f.name: 2 if f.type in (int, "int") else np.arange(16.0).reshape(4, 4)
              for f in dataclasses.fields(kind)}
    return kind(**values)


def same_record(a, b):
    return type(a) is type(b) and all(
        np.array_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))


def over_the_wire(value, place=None, shared=None):
    """value encoded, sent as JSON text (as between the processes), decoded."""
    return wire.decode(json.loads(json.dumps(wire.encode(value, place))), shared)


@pytest.mark.parametrize("kind", wire_types.RECORDS, ids=lambda kind: kind.__name__)
def test_every_listed_record_round_trips_field_by_field(kind):
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen
    value = example(kind)
    assert same_record(value, over_the_wire(value))
    assert same_record(value, over_the_wire([value, {"x": value}])[1]["x"])


@pytest.mark.parametrize("kind", wire_types.RECORDS, ids=lambda kind: kind.__name__)
def test_a_listed_record_lends_its_arrays_by_place(kind):
    lent = {}

    def place(array):
        lent[len(lent)] = array
        return len(lent) - 1

    value = example(kind)
    back = over_the_wire(value, place, shared=lent.__getitem__)
    assert lent and same_record(value, back)


@pytest.mark.parametrize("kind", wire_types.NAMED)
def test_every_listed_named_value_arrives_as_itself(kind):
    for value in wire_types.NAMED[kind].values():
        assert over_the_wire(value) is value
        assert over_the_wire((value,))[0] is value


@dataclasses.dataclass(frozen=True)
class Pair:
    left: np.ndarray
    right: int


def test_a_record_type_travels_once_listed_with_no_change_to_the_wire(monkeypatch):
    value = Pair(np.array([1.5, 2.5]), 3)
    assert over_the_wire(value) == wire.Opaque("a value of type Pair")
    monkeypatch.setattr(wire_types, "RECORDS", (*wire_types.RECORDS, Pair))
    back = over_the_wire(value)
    assert type(back) is Pair and back.right == 3 and back.left.tolist() == [1.5, 2.5]


def test_what_is_not_listed_arrives_opaque_and_imports_nothing():
    kind = wire_types.RECORDS[0]
    fields = wire.encode(example(kind))["fields"]
    name = wire._record_name(kind)
    loaded = set(sys.modules)
    for data in (
        {"record": "os._wrap_close", "fields": {}},
        {"record": "antigravity.Fly", "fields": {}},  # a module not loaded stays unloaded
        {"record": f"{name}Extra", "fields": fields},
        {"record": name, "fields": {**fields, "extra": 1}},
        {"record": name, "fields": dict(list(fields.items())[:-1])},
        {"record": name, "fields": [1, 2]},
        {"record": [name], "fields": fields},
        {"named": "feature map", "name": "print"},
        {"named": "builtins", "name": "eval"},
        {"named": ["feature map"], "name": "exp(x)"},
        {"named": "feature map", "name": ["exp(x)"]},
    ):
        assert isinstance(wire.decode(data), wire.Opaque), data
    assert set(sys.modules) == loaded


def arrives_as_itself(value, back):
    """back is value: the same arrays, records of the same type field by field, the same
    named values (the very object), containers of such."""
    if isinstance(value, np.ndarray):
        return isinstance(back, np.ndarray) and back.dtype == value.dtype and np.array_equal(
            value, back, equal_nan=True)
    if isinstance(value, (list, tuple)):
        return type(back) is type(value) and len(back) == len(value) and all(
            map(arrives_as_itself, value, back))
    if isinstance(value, dict):
        return isinstance(back, dict) and back.keys() == value.keys() and all(
            arrives_as_itself(value[k], back[k]) for k in value)
    if dataclasses.is_dataclass(value):
        return type(back) is type(value) and all(
            arrives_as_itself(getattr(value, f.name), getattr(back, f.name))
            for f in dataclasses.fields(value))
    return back is value if callable(value) else (type(back) is type(value) and back == value)


@pytest.mark.parametrize("function", list(SPECS))
def test_every_argument_a_suite_passes_arrives_as_itself(function):
    """The suites declare, by what their cases pass, which library values must travel."""
    for suite, cases in SPECS[function].suites.items():
        for case in cases:
            arguments = case.make()
            assert arrives_as_itself(arguments, over_the_wire(arguments)), (suite, case.description)
