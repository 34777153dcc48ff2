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

A page's weight: the theme loads Font Awesome's script (1.5 MB) on every page to draw about twenty icons, and
the search index with its tools (0.1 MB) for a search-as-you-type the course leaves off. Once the site is
written, both are taken out of every page and the script and its icon fonts out of the site; ``_static/icons.css``
draws the icons the pages show. MathJax (about 1 MB with its fonts) loads only on a page with maths of its own:
Sphinx also loads it on a page whose table of contents reaches one.

Inline code: after a "-", "_", "=" or "/" between two letters or digits, a ``<wbr>`` marks where a long flag or
name may wrap (``_static/course.css``), so it breaks between its words on a phone, never inside one; a flag's
leading dashes are kept with its first word.

Inline scripts: Sphinx 7.4 lists an inline script that an extension adds once the
builder has started (sphinx-thebe's settings, sphinx-togglebutton's selector) twice in
every page. sphinx-thebe's declares ``const THEBE_JS_URL``, so its second copy is a
SyntaxError in the reader's browser; each page keeps the first copy only.
"""
from __future__ import annotations

import json
import re
import shutil
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


# What build-finished takes out of every page, and out of the site.
UNUSED_SCRIPTS = re.compile(r'\s*<script (?:defer )?src="[^"]*(?:_static/scripts/fontawesome\.js|_static/searchtools\.js|'
                            r'_static/language_data\.js|searchindex\.js)(?:\?[^"]*)?"></script>')
UNUSED_FILES = ("_static/scripts/fontawesome.js", "_static/scripts/fontawesome.js.map", "_static/vendor/fontawesome")
MATHJAX_BUNDLE = re.compile(r'(src="[^"]*_static/mathjax/)tex-chtml\.js')
MATHJAX_CONFIG = re.compile(r"<script>window\.MathJax = (\{.*?\})</script>")
THEME_CSS = "_static/styles/pydata-sphinx-theme.css"
# A rule of Font Awesome's style sheet that gives an icon its glyph: ".fa-rocket:before{content:"\f135"}".
ICON_RULES = re.compile(r'(?<=\})(?:\.fa-[a-z0-9-]+:(?:before|after),?)+\{content:"[^"]*"\}')
INLINE_CODE = re.compile(r'(<code class="docutils literal[^"]*">)(.*?)(</code>)', re.S)
LEADING_DASHES = re.compile(r'(^|[>\s])(-+[A-Za-z0-9]+-?)')
BREAK_AFTER = re.compile(r"(?<=[A-Za-z0-9])([-_=/])(?=[A-Za-z0-9])")


def maths_only_where_needed(app, pagename, templatename, context, doctree):
    """MathJax on a page with maths of its own, not on one whose table of contents reaches one."""
    if doctree is None or app.env.get_domain("math").data["has_equations"].get(pagename):
        return
    context["script_files"] = [s for s in context.get("script_files", []) if "mathjax" not in (s.filename or "").lower()
                               and not (s.attributes.get("body") or "").startswith("window.MathJax")]


def code_breaks_between_words(app, pagename, templatename, context, doctree):
    """A ``<wbr>`` after each "-", "_", "=" and "/" inside a name in inline code (outside its tags and entities)."""
    def marked(match):
        inner = re.sub(r"(<[^>]*>|&[^;\s]*;)|([^<&]+)",
                       lambda part: part.group(1) or BREAK_AFTER.sub(r"\1<wbr>", part.group(2)), match.group(2))
        # A flag's leading dashes stay with its first word ("--gpu-", never "--" then "gpu-").
        inner = LEADING_DASHES.sub(r'\1<span class="course-nobr">\2</span>', inner)
        return match.group(1) + inner + match.group(3)
    if "body" in context:
        context["body"] = INLINE_CODE.sub(marked, context["body"])


def composed_maths(page: str) -> str:
    """A page's MathJax as the pieces it uses: the loader, the TeX input (it fetches any rarer package it meets)
    and the HTML output with its fonts, 0.76 MB, in place of the whole bundle's 1.16 MB with its menus."""
    def loads(match):
        config = json.loads(match.group(1))
        config.setdefault("loader", {})["load"] = ["input/tex", "output/chtml"]
        return f"<script>window.MathJax = {json.dumps(config)}</script>"
    return MATHJAX_BUNDLE.sub(r"\1startup.js", MATHJAX_CONFIG.sub(loads, page))


def lighter_pages(app, exception):
    """Font Awesome's script and the unused search scripts out of every page written, and out of the site; MathJax
    in its pieces; the theme's style sheet without its icon font's thousands of rules, which icons.css replaces."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        if page.name == "search.html" or "_static" in page.relative_to(out).parts:
            continue
        text = page.read_text(encoding="utf-8")
        lighter = composed_maths(UNUSED_SCRIPTS.sub("", text))
        if lighter != text:
            page.write_text(lighter, encoding="utf-8")
    theme = out / THEME_CSS
    if theme.is_file():
        theme.write_text(ICON_RULES.sub("", theme.read_text(encoding="utf-8")), encoding="utf-8")
    for name in UNUSED_FILES:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def setup(app):
    app.connect("doctree-resolved", explorers_say_where_they_run)
    # After sphinx-book-theme's launch buttons (priority 501) and myst-nb's page scripts (500).
    app.connect("html-page-context", point_colab_at_notebook_copy, priority=600)
    app.connect("html-page-context", page_scripts, priority=600)
    app.connect("html-page-context", maths_only_where_needed, priority=600)
    app.connect("html-page-context", code_breaks_between_words, priority=600)
    app.connect("build-finished", lighter_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
