"""The course around the engine: layout, the out-of-process runner and its worker, the
nbgrader preprocessors and configuration, the self-check command, and the instructor's
commands (instructor.py): LMS downloads read as they come (downloads.py, collect.py), each
student's draw from the course secret (secret.py), grading on several cores (parallel.py),
the class report (report.py, report_page.py), the export to the LMS (export.py) and the
feedback page (feedback_page.py).

Only config.py, preprocessors.py, contain.py, collect.py, feedback_page.py and the
instructor's commands import nbgrader or nbconvert; the runner, the worker and the
self-check need the standard library and NumPy.
"""
