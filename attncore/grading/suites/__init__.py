"""One module per assignment: the FunctionSpecs of the functions learners write."""
