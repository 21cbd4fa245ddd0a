"""Sphinx configuration of oodfs's documentation: the user guide (docs/guide), the protocol
(docs/PROTOCOL.md, its chapters in docs/protocol) and the API reference built from the docstrings
(docs/api). Build it with ``python -m sphinx -W -b html docs docs/_build/html`` (CONTRIBUTING.md,
"Documentation"); tests/test_docs.py builds it with warnings as errors."""

import os
import re
from pathlib import Path

from docutils import nodes

project = "oodfs"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"  # signatures as written; the docstrings say what the types mean
default_role = "code"  # `name` in a docstring is code, as in markdown
html_theme = "alabaster"
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links, as GitHub renders them


#: |x| outside code (an absolute value, a set's size): reStructuredText reads it as a substitution
_BARS = re.compile(r"(?<![\\`|])\|(?=[^|`\s])([^|`]*?[^|\s`\\])\|(?![|_])")


def _plain_bars(app, what, name, obj, options, lines):
    """The docstrings write |x| for an absolute value: shown as written."""
    lines[:] = [_BARS.sub(r"\\|\1\\|", line) for line in lines]


def _skip_generated(app, what, name, obj, skip, options):
    """scikit-learn's generated metadata-routing methods (set_fit_request, ...) are not oodfs's API."""
    return True if name.startswith("set_") and name.endswith("_request") else None


def _repository_links(app, doctree):
    """A page's link to a file of the repository outside docs/ (a study's report, the results
    page, CONTRIBUTING.md, an example) points to that file from where the page is built, as the
    same link does on GitHub from the markdown source; a link to a file that does not exist is a
    warning (an error under -W)."""
    docs = Path(app.srcdir).resolve()
    source = Path(app.env.doc2path(app.env.docname)).resolve().parent
    built = (Path(app.outdir) / app.env.docname).parent
    for node in list(doctree.findall(lambda n: n.tagname in ("pending_xref", "download_reference"))):
        if node.get("reftype") != "myst":
            continue
        target = node["reftarget"]
        for candidate in (Path(target), source / target):
            found = next(
                (c for c in (candidate.with_name(candidate.name + ".md"), candidate) if c.exists()), None
            )
            if found is not None:
                break
        if found is None or found.resolve().is_relative_to(docs):
            continue  # a page of the docs (resolved by Sphinx) or a missing file (Sphinx warns)
        uri = os.path.relpath(found.resolve(), built)
        if node.get("reftargetid"):
            uri += "#" + node["reftargetid"]
        link = nodes.reference("", "", *node.children, refuri=uri, internal=False)
        node.replace_self(link)


def setup(app):
    app.connect("doctree-read", _repository_links)
    app.connect("autodoc-process-docstring", _plain_bars)
    app.connect("autodoc-skip-member", _skip_generated)
