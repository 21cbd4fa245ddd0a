"""Sphinx configuration of oodfs's API reference (built from the docstrings; tests/test_docs.py
builds it with warnings as errors)."""

import re

project = "oodfs"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"  # signatures as written; the docstrings say what the types mean
default_role = "code"  # `name` in a docstring is code, as in markdown
html_theme = "alabaster"
exclude_patterns = ["_build"]


#: |x| outside code (an absolute value, a set's size): reStructuredText reads it as a substitution
_BARS = re.compile(r"(?<![\\`|])\|(?=[^|`\s])([^|`]*?[^|\s`\\])\|(?![|_])")


def _plain_bars(app, what, name, obj, options, lines):
    """The docstrings write |x| for an absolute value: shown as written."""
    lines[:] = [_BARS.sub(r"\\|\1\\|", line) for line in lines]


def _skip_generated(app, what, name, obj, skip, options):
    """scikit-learn's generated metadata-routing methods (set_fit_request, ...) are not oodfs's API."""
    return True if name.startswith("set_") and name.endswith("_request") else None


def setup(app):
    app.connect("autodoc-process-docstring", _plain_bars)
    app.connect("autodoc-skip-member", _skip_generated)
