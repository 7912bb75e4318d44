"""The messages between the grader and its worker: JSON frames, arrays as .npy bytes.

Nothing is unpickled: arrays travel through np.save/np.load with allow_pickle=False, and
every other value must be None, a bool, an int, a float, a string, a list, tuple or dict
of these, or one of the library's own values that exercises pass to learners' functions,
listed in course.wire_types: a frozen dataclass (sent field by field, as
{"record": "module.Name", "fields": {...}}) or a fixed value that holds code (a feature
map, sent as {"named": kind, "name": name}). Only those are rebuilt on arrival, looked up
in that list: no name that arrives is imported or searched for. A value of any other type
arrives as Opaque(its type name), so a worker can never make the grader run code by what
it sends. Arrays of other than numbers or booleans (timedelta, structured, object), arrays
whose bytes do not match their header, and records or names not in the list arrive as
Opaque too.

The grader's array arguments may travel by place instead (course.arena): encode(value,
place) sends {"shared": place(array)}, and decode(data, shared) turns it back into an array.
"""
from __future__ import annotations

import base64
import io
import json
import struct
from dataclasses import fields
from typing import IO, Any, Callable

import numpy as np

from . import wire_types

_LENGTH = struct.Struct(">Q")
MAX_FRAME = 32 << 20  # bytes: far above any case's result, far below a grader's memory
NUMERIC = "biufc"  # dtype kinds a graded function may return


class Opaque:
    """A value that cannot travel (a function, an object array, ...): only its type is known."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self):
        return f"<{self.type_name}: not an array of numbers>"

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.type_name == self.type_name

    __hash__ = None


def encode(value: Any, place: Callable[[np.ndarray], Any] | None = None) -> Any:
    """A JSON-ready form of value; place(array), when given, lends arrays by place."""
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        return {"npy": _npy(np.asarray(value)), "scalar": True}
    if isinstance(value, np.ndarray) and value.dtype != object:
        where = place(value) if place is not None else None
        return {"npy": _npy(value)} if where is None else {"shared": where}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": repr(value)}  # keeps nan and inf, which JSON lacks
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v, place) for v in value]}
    if type(value) in wire_types.RECORDS:
        return {"record": _record_name(type(value)),
                "fields": {f.name: encode(getattr(value, f.name), place) for f in fields(value)}}
    for kind, table in wire_types.NAMED.items():
        for name, known in table.items():
            if known is value:
                return {"named": kind, "name": name}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, place) for k, v in value.items()}}
    return {"opaque": f"a value of type {type(value).__name__}"}


def decode(data: Any, shared: Callable[[Any], np.ndarray] | None = None) -> Any:
    """The value encode(value) stood for; shared(place) gives the arrays lent by place."""
    if not isinstance(data, dict):
        return data if data is None or isinstance(data, (bool, int, str)) else \
            Opaque(f"a value of type {type(data).__name__}")
    if "npy" in data:
        array = _array(data["npy"])
        return array[()] if data.get("scalar") and isinstance(array, np.ndarray) else array
    if "shared" in data and shared is not None:
        return shared(data["shared"])
    if "float" in data:
        return float(data["float"])
    if "list" in data:
        return [decode(v, shared) for v in data["list"]]
    if "tuple" in data:
        return tuple(decode(v, shared) for v in data["tuple"])
    if "record" in data:
        return _record(data, shared)
    if "named" in data:
        return _named(data)
    if "dict" in data and isinstance(data["dict"], dict):
        return {k: decode(v, shared) for k, v in data["dict"].items()}
    return Opaque(str(data.get("opaque", "unknown")))


def frame(message: dict) -> bytes:
    """One message (a dict of JSON-ready values) as a length-prefixed frame."""
    body = json.dumps(message).encode()
    return _LENGTH.pack(len(body)) + body


def send(stream: IO[bytes], message: dict) -> None:
    """Write one message as a frame (the worker's way; the grader writes with a deadline)."""
    stream.write(frame(message))
    stream.flush()


def receive(stream: IO[bytes]) -> dict | None:
    """Read one frame; None at end of stream."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"a message of {length} bytes is larger than {MAX_FRAME}")
    body = stream.read(length)
    return json.loads(body) if len(body) == length else None


def _record_name(kind):
    """'attncore.bert.AttentionWeights': how a record type is named on the wire."""
    return f"{kind.__module__}.{kind.__qualname__}"


def _record(data, shared):
    """The listed record type that data names, built from its decoded fields; Opaque when
    the type is not listed or the fields are not exactly its fields."""
    listed = {_record_name(kind): kind for kind in wire_types.RECORDS}
    kind = listed.get(data["record"]) if isinstance(data["record"], str) else None
    values = data.get("fields")
    if kind is None or not isinstance(values, dict) \
            or set(values) != {f.name for f in fields(kind)}:
        return Opaque("a record of a type not listed in course.wire_types")
    return kind(**{name: decode(v, shared) for name, v in values.items()})


def _named(data):
    """The listed value of that kind and name; Opaque when there is none."""
    kind, name = data["named"], data.get("name")
    table = wire_types.NAMED.get(kind) if isinstance(kind, str) else None
    if table is None or not isinstance(name, str) or name not in table:
        return Opaque("a named value not listed in course.wire_types")
    return table[name]


def _array(text):
    """The array in .npy bytes, or Opaque when they are malformed or hold no numbers."""
    try:
        array = np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)
    except Exception:  # a header that lies about the data, a truncated body, ...
        return Opaque("an array whose bytes do not match its header")
    if array.dtype.kind not in NUMERIC:
        return Opaque(f"an array of dtype {array.dtype}")
    return array


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
