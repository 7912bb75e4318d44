"""Keep the published pages self-contained: no live-code (thebe) scripts.

Jupyter Book 1.x always loads sphinx-thebe, even with `launch_buttons.thebe: false`,
and its inline config script is injected twice, which the browser reports as
"Identifier 'THEBE_JS_URL' has already been declared". The course does not use
thebe (launch buttons open the paired notebooks instead), so drop its scripts.
"""


def _is_thebe(script):
    body = getattr(script, "attributes", {}).get("body", "")
    return "THEBE_JS_URL" in body or str(getattr(script, "filename", "")).endswith("sphinx-thebe.js")


def drop_thebe_scripts(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not _is_thebe(s)]


def setup(app):
    app.connect("html-page-context", drop_thebe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
