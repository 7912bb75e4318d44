"""Keep the published pages self-contained: no live-code (thebe) scripts.

Jupyter Book 1.x always loads sphinx-thebe, even with `launch_buttons.thebe: false`,
and its inline config script is injected twice, which the browser reports as
"Identifier 'THEBE_JS_URL' has already been declared". The course does not use
thebe (launch buttons open the paired notebooks instead), so drop its scripts.

Browsers ask every site for /favicon.ico, so the build writes one there, drawn from the
site's favicon.png with Pillow: no request leaves the site and none fails.

The site's front door, index.html, sends the reader to the first page. Jupyter Book writes
it as a bare meta refresh, which leaves a blank page where the refresh does not happen
(a tool that opens the file, a browser that blocks refreshes); the build writes it as a
page with a title, the same refresh and a visible link to the first page.
"""
import html
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


FRONT_DOOR = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0; url={url}">
<title>{title}</title>
<link rel="icon" href="favicon.ico">
</head>
<body>
<p><a href="{url}">{title}: open the course</a></p>
</body>
</html>
"""


def write_front_door(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    url = html.escape(app.builder.get_target_uri(app.config.root_doc))
    title = html.escape(app.config.html_title or app.config.project)
    (Path(app.outdir) / "index.html").write_text(FRONT_DOOR.format(url=url, title=title), encoding="utf-8")


def setup(app):
    app.connect("html-page-context", drop_thebe_scripts)
    app.connect("build-finished", write_favicon_ico)
    # after sphinx-external-toc's own build-finished handler, which writes the bare refresh
    app.connect("build-finished", write_front_door, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
