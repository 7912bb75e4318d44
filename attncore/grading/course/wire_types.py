"""The library's own values that exercises pass to learners' functions: what course.wire
rebuilds on arrival besides plain data (None, numbers, strings, arrays, lists, tuples and
dicts of these). Nothing that is not listed here is ever rebuilt.

RECORDS: frozen dataclasses, sent field by field under their module and name.
NAMED: {kind: {name: value}}, fixed values that hold code (a feature map is a function),
sent by kind and name only.

An exercise that passes a new kind of value lists it here; the wire format stays as it is.
In a grading sandbox that leaves their module out (course.left_out), an exercise that
never passes them, they are not listed.
"""
from ... import bert, feature_maps

RECORDS = () if vars(bert).get("__left_out__") else (bert.AttentionWeights,)
NAMED = {} if vars(feature_maps).get("__left_out__") else {"feature map": feature_maps.BY_NAME}
