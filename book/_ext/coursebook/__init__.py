"""The book's own code, not shipped in attncore's wheel: the rules by which chapter 7 and its
peers page choose a word from a results file, and the "how this was measured" box.

A word chosen from data goes through one rule here, and tests/test_ch7_glue.py and
tests/test_peers_page.py test each rule on committed results files where its word flips
(tests/results/ holds the extra runs). Everything else those pages say about a run is a
number, computed by attncore.bench.report and printed as it is.

The chapters import it from book/_ext in cells tagged "book-prose", which only glue text:
a launch notebook has that text already, so book/_ext/launch_notebooks.py leaves those
cells out and the notebook runs from attncore's wheel alone.
"""
