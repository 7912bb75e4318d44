"""The course around the engine: layout, the out-of-process runner and its worker, the
nbgrader preprocessor and configuration, and the self-check command.

Only config.py, preprocessors.py and contain.py import nbgrader or nbconvert; the runner,
the worker and the self-check need the standard library and NumPy.
"""
