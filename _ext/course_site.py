"""Corrections to the pages as the theme, myst-nb and Sphinx make them.

Colab: each page's Colab button opens the page's notebook copy under ``notebooks/``.
sphinx-book-theme builds the Colab link from the page's source path, but Colab opens
only ``.ipynb`` files and the pages are MyST Markdown. ``make notebooks`` writes an
``.ipynb`` copy of each page at ``notebooks/<page>.ipynb``; the link is rewritten to it
after the theme has made its launch buttons. A page without its copy is a warning, so a
build with ``-W`` fails until the copy is made.

Explorers: an ipywidgets explorer needs a running kernel, which the website lacks. With
``nb_ipywidgets_js: {}`` (``_config.yml``) no widget library is fetched from a CDN; in
each explorer's place the page says where to run it live, and the saved widget state,
which nothing on the page would read, is left out. The charts of
``servingmath.webcharts`` are what moves on the website.

Inline scripts: Sphinx 7.4 lists an inline script that an extension adds once the
builder has started (sphinx-thebe's settings, sphinx-togglebutton's selector) twice in
every page. sphinx-thebe's declares ``const THEBE_JS_URL``, so its second copy is a
SyntaxError in the reader's browser; each page keeps the first copy only.
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

NOTEBOOK_COPIES = "notebooks"
WIDGET_VIEW = '<script type="application/vnd.jupyter.widget-view+json">'
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EXPLORER_RUNS_LIVE = ("This explorer runs live: open the page on Binder or Colab with the rocket button at the "
                      "top, or run the notebook on your own machine.")


def colab_button(context):
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group.get("buttons", []):
                if button.get("text") == "Colab":
                    return button
    return None


def point_colab_at_notebook_copy(app, pagename, templatename, context, doctree):
    button = colab_button(context)
    if button is None:
        return
    copy = Path(NOTEBOOK_COPIES, pagename).with_suffix(".ipynb")
    if not (Path(app.srcdir) / copy).is_file():
        logger.warning(f"{pagename}: Colab needs {copy.as_posix()}; run `make notebooks` to write it",
                       location=pagename, type="course_site", subtype="missing_copy")
        return
    options = app.config.html_theme_options
    branch = options.get("repository_branch") or "master"
    book_folder = options.get("path_to_docs", "").strip("/")
    path = "/".join(part for part in (book_folder, copy.as_posix()) if part)
    # The theme's link is <colab>/github/<org>/<repo>/blob/<branch>/<page source>: keep all before the path.
    repository_part = button["url"].split(f"/blob/{branch}/", 1)[0]
    button["url"] = f"{repository_part}/blob/{branch}/{path}"


def explorers_say_where_they_run(app, doctree, docname):
    for raw in list(doctree.findall(nodes.raw)):
        if raw.get("format") == "html" and raw.astext().startswith(WIDGET_VIEW):
            raw.replace_self(nodes.paragraph(text=EXPLORER_RUNS_LIVE, classes=["explorer-runs-live"]))


def page_scripts(app, pagename, templatename, context, doctree):
    """Each script once, and no widget state."""
    kept, seen = [], set()
    for script in context.get("script_files", []):
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen and script.attributes.get("type") != WIDGET_STATE:
            seen.add(key)
            kept.append(script)
    # A new list: the builder restores its own after each page.
    context["script_files"] = kept


def setup(app):
    app.connect("doctree-resolved", explorers_say_where_they_run)
    # After sphinx-book-theme's launch buttons (priority 501) and myst-nb's page scripts (500).
    app.connect("html-page-context", point_colab_at_notebook_copy, priority=600)
    app.connect("html-page-context", page_scripts, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
