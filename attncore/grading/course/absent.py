"""Stands in, inside a grading sandbox, for a package the sandbox leaves out (the grading
engine; libraries that would do a learner's work): importing it fails."""
raise ImportError(f"{__name__} is not available while your code is graded (in a sandbox)")
