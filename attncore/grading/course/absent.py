"""Stands in, inside a grading sandbox, for the grading engine, which the sandbox leaves
out of the learner's attncore: importing it fails."""
raise ImportError(f"{__name__} is not available while your code is graded (in a sandbox)")
