"""The course layout and the grade-id convention, in one place (standard library only).

solutions/<assignment>/<assignment>.ipynb is nbgrader's source; exercises/ its release;
everything nbgrader writes per student (submitted, autograded, feedback, gradebook,
exported grades, downloaded zips) lives under .nbgrader/, which git ignores.

A test cell's grade id is "<function>-<suite>": the graded function and the suite of
attncore.grading that the cell runs. The grader reads the suite from the id, never from
the cell's source.
"""
SOURCE = "solutions"
RELEASE = "exercises"
WORK = ".nbgrader"
# The key of a graded test cell's metadata in an autograded notebook where the grader
# writes its verdict (function, suite, passed, misconception, seed) for the class report.
VERDICT_KEY = "attncore"


def grade_id(function, suite):
    """The grade id of the test cell that runs `suite` on `function`."""
    return f"{function}-{suite}"


def parse_grade_id(grade_id):
    """(function, suite) of a test cell's grade id, or None when it has no suite part."""
    function, dash, suite = str(grade_id).rpartition("-")
    return (function, suite) if dash and function and suite else None


def function_of(grade_id):
    """The graded function a cell belongs to: its test cells' ids start with its name."""
    parsed = parse_grade_id(grade_id)
    return parsed[0] if parsed else grade_id


def by_function(items, functions, grade_id_of=lambda item: item[0]):
    """{function: [the items of its cells]} for each of functions, in their order; an
    item's grade id is grade_id_of(item) (default: its first element)."""
    return {function: [item for item in items if function_of(grade_id_of(item)) == function]
            for function in functions}
