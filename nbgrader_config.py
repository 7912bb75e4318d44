"""nbgrader configuration: run nbgrader commands from this folder.

The layout (source solutions/, release exercises/, per-student work in .nbgrader/) and
the out-of-process autograding are defined once, in attncore/grading/course/config.py.

nbgrader 0.9.6 links each new submission to its student, assignment and notebooks before
adding it to the gradebook's session, and then adds it; SQLAlchemy 2 warns about each of
those links (SAWarning: Object of type <SubmittedAssignment> not in session, ...) although
nothing is lost. Those warnings, from nbgrader's gradebook only, are not shown.
"""
import os
import warnings

from sqlalchemy.exc import SAWarning

from attncore.grading.course.config import course_config

warnings.filterwarnings("ignore", r"Object of type <Submitted\w+> not in session", SAWarning,
                        module=r"nbgrader\.api")

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.merge(course_config(os.path.dirname(os.path.abspath(__file__))))
