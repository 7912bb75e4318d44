"""The download button's ".ipynb" gives the notebook the launch buttons open.

sphinx-book-theme fills that button, on every page written as a MyST notebook, with a
copy of the executed notebook (_build/jupyter_execute/<page>.ipynb, copied to
_sources/<page>.ipynb as the page is written): its Markdown is MyST, which Jupyter and
Colab show raw, and it has no install cell. Once the pages are written, each such copy is
replaced with the page's paired notebook, book/<page>.ipynb (`make notebooks`), so a
reader who downloads the page gets what Colab and Binder open. A page without its paired
notebook keeps the executed copy: `make notebooks` needs this build's values to write it,
so the build cannot require it; tests/test_notebooks.py and tests/test_site.py do.
"""
import shutil
from pathlib import Path


def serve_paired_notebooks(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir) / "_sources"
    for download in sorted(sources.rglob("*.ipynb")):
        paired = Path(app.srcdir) / download.relative_to(sources)
        if paired.is_file():
            shutil.copyfile(paired, download)


def setup(app):
    app.connect("build-finished", serve_paired_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
