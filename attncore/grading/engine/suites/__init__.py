"""One module per assignment (MODULES, in course order): the FunctionSpecs of the functions
learners write.

ASSIGNMENTS maps each assignment to its graded functions in notebook order; SPECS maps
each graded function to its FunctionSpec.
"""
from . import convention, flash, heads, masking, real_model, simplex, variants

MODULES = [convention, simplex, masking, heads, flash, variants, real_model]

ASSIGNMENTS = {module.ASSIGNMENT: [spec.name for spec in module.SPECS] for module in MODULES}
SPECS = {spec.name: spec for module in MODULES for spec in module.SPECS}
assert len(SPECS) == sum(map(len, ASSIGNMENTS.values())), "a graded function name is used twice"
