"""The messages between the grader and its worker: JSON frames, arrays as .npy bytes.

Nothing is unpickled: arrays travel through np.save/np.load with allow_pickle=False, and
every other value must be None, a bool, an int, a float, a string, a feature map of
attncore.feature_maps (sent by its name), the weights of a layer (attncore.bert's
AttentionWeights, sent field by field), or a list, tuple or dict of these. A value of
any other type arrives as Opaque(its type name), so a worker can never make the grader
run code by what it sends. Arrays of other than numbers or booleans (timedelta, structured,
object) and arrays whose bytes do not match their header arrive as Opaque too.

The grader's array arguments may travel by place instead (course.arena): encode(value,
place) sends {"shared": place(array)}, and decode(data, shared) turns it back into an array.
"""
import base64
import io
import json
import struct
from dataclasses import fields

import numpy as np

from ...bert import AttentionWeights
from ...feature_maps import BY_NAME, FeatureMap

_LENGTH = struct.Struct(">Q")
_LAYER = fields(AttentionWeights)
MAX_FRAME = 32 << 20  # bytes: far above any case's result, far below a grader's memory
NUMERIC = "biufc"  # dtype kinds a graded function may return


class Opaque:
    """A value that cannot travel (a function, an object array, ...): only its type is known."""

    def __init__(self, type_name):
        self.type_name = type_name

    def __repr__(self):
        return f"<{self.type_name}: not an array of numbers>"

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.type_name == self.type_name

    __hash__ = None


def encode(value, place=None):
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
    if isinstance(value, FeatureMap) and BY_NAME.get(value.name) is value:
        return {"feature_map": value.name}
    if type(value) is AttentionWeights:
        return {"attention_weights": {f.name: encode(getattr(value, f.name), place)
                                         for f in _LAYER}}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, place) for k, v in value.items()}}
    return {"opaque": f"a value of type {type(value).__name__}"}


def decode(data, shared=None):
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
    if data.get("feature_map") in BY_NAME:
        return BY_NAME[data["feature_map"]]
    layer = data.get("attention_weights")
    if isinstance(layer, dict) and set(layer) == {f.name for f in _LAYER}:
        return AttentionWeights(**{name: decode(v, shared) for name, v in layer.items()})
    if "dict" in data and isinstance(data["dict"], dict):
        return {k: decode(v, shared) for k, v in data["dict"].items()}
    return Opaque(str(data.get("opaque", "unknown")))


def send(stream, message):
    """Write one message (a dict of JSON-ready values) as a length-prefixed frame."""
    body = json.dumps(message).encode()
    stream.write(_LENGTH.pack(len(body)) + body)
    stream.flush()


def receive(stream):
    """Read one frame; None at end of stream."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"a message of {length} bytes is larger than {MAX_FRAME}")
    body = stream.read(length)
    return json.loads(body) if len(body) == length else None


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
