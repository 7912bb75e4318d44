"""Grading that names the learner's mistake.

Two ways in, one engine (engine/, NumPy only):

- In the learner's kernel, a test cell runs

      import attncore.grading
      attncore.grading.check("softmax", softmax, "basic")

  for quick feedback: the suite runs in process and a mistake raises FeedbackError, an
  AssertionError whose message names the misconception, shows the smallest input where
  it shows, what came back, what was expected, and how to fix it.
- The grade that counts (nbgrader autograde, and `attncore-check NOTEBOOK` for
  self-study) runs the notebook's code in a separate worker process that never holds an
  expected value, and decides in the grading process (course/).
"""


def check(function_name, function, suite="basic"):
    """Run suite `suite` of the graded function function_name on `function`, in process.

    Prints what the code warned or printed (it costs nothing) and raises FeedbackError
    with the feedback on the first mistake.
    """
    from .engine import SPECS, FeedbackError, Outcome, run_suite
    from .engine.feedback import install_ipython_handler
    from .observe import observe

    if function_name not in SPECS:
        raise ValueError(f"no graded function named {function_name!r}; known: {sorted(SPECS)}")
    spec = SPECS[function_name]
    if suite not in spec.suites:
        raise ValueError(f"{function_name} has suites {sorted(spec.suites)}, not {suite!r}")
    if not callable(function):
        raise FeedbackError(f"{function_name}: expected a function, got {function!r}")
    install_ipython_handler()
    verdict = run_suite(spec, suite, lambda arguments, measure_memory: Outcome(
        **observe(function, arguments, spec.forbidden, measure_memory)))
    for note in verdict.notes:
        print(f"Note: {note}")
    if not verdict.passed:
        raise FeedbackError(verdict.message)
