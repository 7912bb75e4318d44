"""nbgrader configuration: run nbgrader commands from this folder.

The layout (source solutions/, release exercises/, per-student work in .nbgrader/) and
the out-of-process autograding are defined once, in attncore/grading/course/config.py.
"""
import os

from attncore.grading.course.config import course_config

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.merge(course_config(os.path.dirname(os.path.abspath(__file__))))
