"""Keep the published pages self-contained: no live-code (thebe) scripts.

Jupyter Book 1.x always loads sphinx-thebe, even with `launch_buttons.thebe: false`,
and its inline config script is injected twice, which the browser reports as
"Identifier 'THEBE_JS_URL' has already been declared". The course does not use
thebe (launch buttons open the paired notebooks instead), so drop its scripts.

Browsers ask every site for /favicon.ico (the redirect page at the root names no icon),
so the build writes one there, drawn from the site's favicon.png with Pillow: no
request leaves the site and none fails.
"""
from pathlib import Path


def _is_thebe(script):
    body = getattr(script, "attributes", {}).get("body", "")
    return "THEBE_JS_URL" in body or str(getattr(script, "filename", "")).endswith("sphinx-thebe.js")


def drop_thebe_scripts(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not _is_thebe(s)]


def write_favicon_ico(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from PIL import Image  # matplotlib's dependency: always there when the book builds

    png = Path(__file__).resolve().parents[1] / "_static" / "favicon.png"
    with Image.open(png) as image:
        image.convert("RGBA").save(Path(app.outdir) / "favicon.ico", sizes=[(16, 16), (32, 32), (48, 48)])


def setup(app):
    app.connect("html-page-context", drop_thebe_scripts)
    app.connect("build-finished", write_favicon_ico)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
