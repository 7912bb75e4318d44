"""The assignments, their graded functions in notebook order, and every FunctionSpec."""
from .suites import convention, flash, heads, masking, simplex, variants

_MODULES = [convention, simplex, masking, heads, flash, variants]

ASSIGNMENTS = {module.ASSIGNMENT: [spec.name for spec in module.SPECS] for module in _MODULES}
SPECS = {spec.name: spec for module in _MODULES for spec in module.SPECS}
assert len(SPECS) == sum(map(len, ASSIGNMENTS.values())), "a graded function name is used twice"


def assignment_of(function_name):
    """The assignment whose notebook asks for function_name."""
    return next(a for a, names in ASSIGNMENTS.items() if function_name in names)
