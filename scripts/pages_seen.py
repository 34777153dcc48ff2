"""What a reader sees of the course: each page's visible text, each problem notebook's text above a problem.

``page_text(path)`` is a page's text as a reader sees it: its code run as the book runs it (glue captured, printed
and displayed output kept, cells tagged ``remove-output`` or ``remove-cell`` dropped, solution and quiz dropdowns
left folded), kept on disk under ``SERVINGMATH_RESULTS`` so that a later run reads it back. ``leaks.yaml`` holds
each page's text beside a digest of its sources (the page, this script, the package and ``requirements.txt``'s
pinned versions, on the same Python): the answer-leak test reads the text there while the digest matches, without
running the page; ``make exercises`` runs every page afresh to write it; the book lane checks the figures it holds
against the pages the book built. ``notebook_parts`` is a problem notebook as its reader sees it, piece by piece.

``python scripts/pages_seen.py`` (run by ``make exercises``) writes ``src/servingmath/data/leaks.yaml``: each
lesson's pages as seen, each problem's check (tolerance, units) and the notebook's fixed text above it, from
which ``servingmath.variants`` draws no student a problem whose answer is given away (``servingmath.leaks``).
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import os
import re
import sys
from functools import lru_cache
from pathlib import Path

import jupytext
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_exercises import checks_in  # noqa: E402

from servingmath import variants  # noqa: E402
from servingmath._kept import PACKAGE, package_digest, package_files  # noqa: E402

DATA = ROOT / "src" / "servingmath" / "data" / "leaks.yaml"

FRONT_PAGE = "index.md"
LESSON_PAGES = {
    "lesson-1": sorted((ROOT / "chapters/lesson-1").glob("*.md")) + [ROOT / "chapters/plates/xxiii-1-prefill-and-decode.md"],
    "lesson-2": sorted((ROOT / "chapters/lesson-2").glob("*.md")) + [ROOT / "chapters/plates/xxiii-2-the-kv-cache.md"],
    "lesson-3": sorted((ROOT / "chapters/lesson-3").glob("*.md"))
    + [ROOT / "chapters/plates/xxiii-4-continuous-batching.md"],
    "lesson-4": sorted((ROOT / "chapters/lesson-4").glob("*.md")),
}
PLATE_LESSON = {"plate-xxiii-1": "lesson-1", "plate-xxiii-2": "lesson-2", "plate-xxiii-4": "lesson-3"}
NOTEBOOKS = sorted(path.stem for path in (ROOT / "solutions").glob("*.md"))


def lesson_of(notebook: str) -> str:
    return PLATE_LESSON.get(notebook) or notebook.rsplit("-part-", 1)[0]


# -- what a reader sees --------------------------------------------------------------------------------
GLUE_INLINE = re.compile(r"\{glue(?::text|:md|:)?\}`([^`]+)`")
GLUE_BLOCK = re.compile(r"^```\{glue(?::md|:figure)?\}\s*(\S+)[^\n]*\n(?::[^\n]*\n)*```", flags=re.M)
ROLE = re.compile(r"\{(?:term|doc|ref|numref|eq|math|abbr)\}`([^`<]*?)(?:\s*<[^`]*>)?`")
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`[^`]*`")
FOLDED = [re.compile(r"```\{solution-start\}.*?```\{solution-end\}\s*```", flags=re.S),
          re.compile(r"^(:{3,})\{dropdown\}.*?^\1\s*$", flags=re.S | re.M),
          re.compile(r"^```\{dropdown\}.*?^```\s*$", flags=re.S | re.M),
          re.compile(r"^```\{admonition\}[^\n]*\n:class: dropdown.*?^```\s*$", flags=re.S | re.M)]
LINK_TARGET = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")


def _text_of(value) -> str:
    """What a cell's value shows as text: Markdown, HTML without tags, a chart's readouts, a number."""
    if value is None:
        return ""
    readouts = getattr(value, "readouts_at", None)
    if readouts is not None and hasattr(value, "default"):
        return "\n".join(f"{name}: {text}" for name, text in readouts(**value.default).items())
    for method in ("_repr_markdown_", "_repr_html_"):
        shown = getattr(value, method, None)
        if shown is not None:
            try:
                text = shown()
            except Exception:  # noqa: BLE001 - a value that cannot show itself shows nothing
                continue
            if isinstance(text, tuple):
                text = text[0]
            if isinstance(text, str):
                return re.sub(r"<[^>]+>", " ", text) if method == "_repr_html_" else text
    data = getattr(value, "data", None)
    if isinstance(data, str):
        return data
    if isinstance(value, (int, float, str, tuple, list, np.number)):
        return str(value)
    return ""


def _cell_tags(cell) -> set:
    return set(cell.metadata.get("tags", []))


def _run_cell(source: str, namespace: dict, shown: list):
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    last = tree.body[-1] if tree.body else None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if isinstance(last, ast.Expr):
            exec(compile(ast.Module(tree.body[:-1], []), "<cell>", "exec"), namespace)
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
        else:
            exec(compile(tree, "<cell>", "exec"), namespace)
            value = None
    return printed.getvalue() + "\n".join(shown) + "\n" + _text_of(value)


def _render(path: Path) -> dict:
    """The page as read: its blocks of prose and output in order, glue in place, folded parts left out."""
    import IPython.display
    import myst_nb

    glued, blocks, shown = {}, [], []

    def glue(name, value, display=True):
        glued[name] = _text_of(value)
        if display:
            shown.append(glued[name])

    def display(*values, **_):
        shown.extend(_text_of(value) for value in values)

    saved = myst_nb.glue, IPython.display.display
    myst_nb.glue, IPython.display.display = glue, display
    namespace = {"__name__": "__page__"}
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        for cell in jupytext.read(path).cells:
            if cell.cell_type == "markdown":
                blocks.append(["md", cell.source])
                continue
            shown.clear()
            output = _run_cell(cell.source, namespace, shown)
            tags = _cell_tags(cell)
            if not tags & {"remove-cell", "remove-input"}:
                blocks.append(["code", cell.source])
            if not tags & {"remove-cell", "remove-output"}:
                blocks.append(["out", output])
    finally:
        myst_nb.glue, IPython.display.display = saved
        os.chdir(cwd)
    text = "\n".join(text for kind, text in blocks if kind != "code")
    # Folded parts hold their glue too: fill in glue first, then fold what the reader must click to open.
    for _ in range(2):
        text = GLUE_BLOCK.sub(lambda match: glued.get(match.group(1), ""), text)
        text = GLUE_INLINE.sub(lambda match: glued.get(match.group(1), match.group(0)), text)
    return {"text": visible(text), "code": "\n".join(text for kind, text in blocks if kind == "code")}


def visible(text: str) -> str:
    """Markdown as the reader sees it: no folded dropdowns, roles as their words, no link targets or citations."""
    for folded in FOLDED:
        text = folded.sub("\n", text)
    text = ROLE.sub(lambda match: match.group(1), text)
    text = CITE.sub("", text)
    text = LINK_TARGET.sub("]", text)
    text = re.sub(r"^\([\w-]+\)=\s*$", "", text, flags=re.M)    # a target for links to the heading below
    return re.sub(r"^:[a-z-]+:.*$", "", text, flags=re.M)   # a directive's options


def _kept_folder() -> Path | None:
    folder = os.environ.get("SERVINGMATH_RESULTS")
    return Path(folder) / "pages" if folder and os.path.isabs(folder) else None


@lru_cache(maxsize=None)
def _sources() -> bytes:
    """What computes a page's text beside the page: the Python it runs on, the versions ``requirements.txt`` pins
    (NumPy's random streams among them), this script and the package's files, all but ``leaks.yaml``, which
    holds that text."""
    python = "{}.{}".format(*sys.version_info[:2]).encode()
    return python + b"\0" + (ROOT / "requirements.txt").read_bytes() + b"\0" + Path(__file__).read_bytes() + b"\0" + \
        b"".join(name.encode() + b"\0" + path.read_bytes() + b"\0" for path in package_files()
                 for name in [path.relative_to(PACKAGE).as_posix()] if name != "data/leaks.yaml")


def _name(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def source_digest(path: Path) -> str:
    """A digest of what a page's visible text is computed from (``_sources``, and the page)."""
    return hashlib.blake2b(path.read_bytes() + b"\0" + _sources(), digest_size=16).hexdigest()


@lru_cache(maxsize=None)
def _written() -> dict[str, tuple[str, str]]:
    """What ``leaks.yaml`` holds of each page: (the digest of its sources, its text)."""
    if not DATA.is_file():
        return {}
    held = json.loads(DATA.read_text(encoding="utf-8"))
    texts = {page: text for pages in held.get("lessons", {}).values() for page, text in pages.items()}
    return {page: (digest, texts[page]) for page, digest in held.get("digests", {}).items() if page in texts}


@lru_cache(maxsize=None)
def page_text(path: Path, stored=True) -> str:
    """A page's visible text: as ``leaks.yaml`` holds it when the page and the package are what it was computed
    from, else read back from disk when they have run before, else computed by running the page."""
    written = _written().get(_name(path)) if stored else None
    if written is not None and written[0] == source_digest(path):
        return written[1]
    digest = hashlib.sha256((source_digest(path) + package_digest()).encode()).hexdigest()[:20]
    folder = _kept_folder()
    kept = folder / f"{path.stem}-{digest}.json" if folder else None
    if kept is not None and kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))["text"]
    text = _render(path)["text"]
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        for old in kept.parent.glob(f"{path.stem}-*.json"):
            old.unlink(missing_ok=True)
        temporary = kept.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"page": _name(path), "text": text}), encoding="utf-8")
        temporary.replace(kept)
    return text



# -- the problem notebooks ------------------------------------------------------------------------------
PROBLEM_HEADING = re.compile(r"^## Problem (\S+) ·", flags=re.M)


@lru_cache(maxsize=None)
def notebook_parts(notebook: str) -> list[tuple[str | None, str]]:
    """The practice notebook as read, in order: (the problem a piece of text belongs to, or None, the text).
    Solution blocks are empty there and check cells print nothing until answered; set-up cells' output shows."""
    namespace = {"__name__": "__notebook__"}
    parts, label = [], None
    for cell in jupytext.read(ROOT / "solutions" / f"{notebook}.md").cells:
        if cell.cell_type == "markdown":
            for piece in re.split(r"(?=^## Problem \S+ ·)", cell.source, flags=re.M):
                heading = PROBLEM_HEADING.match(piece)
                label = heading.group(1) if heading else label
                parts.append((label, visible(piece)))
            continue
        if "BEGIN SOLUTION" in cell.source or "check(answer" in cell.source:
            continue
        parts.append((label, _run_cell(cell.source, namespace, [])))
    return parts


def _above(notebook: str, label: str) -> list[str]:
    text = []
    for part_label, piece in notebook_parts(notebook):
        if part_label == label:
            break
        text.append(piece)
    return text


@lru_cache(maxsize=None)
def practice_checks(notebook: str) -> list[tuple[str, object, float, str]]:
    """(label, expected answer, tolerance, units) for every check of the practice notebook."""
    return [(label, expected, float(keywords.get("rel", 0.02)), keywords.get("units", ""))
            for label, expected, keywords in checks_in(ROOT / "solutions" / f"{notebook}.md")]



def fixed_above(notebook: str, label: str) -> str:
    """The notebook's text above ``label`` outside its templated statements (the same for every student)."""
    text = "\n".join(_above(notebook, label))
    if notebook in variants.TEMPLATES:
        practice = variants.practice(notebook)
        for other in variants.TEMPLATES[notebook].statements:
            text = text.replace(variants.fill(notebook, other, practice), "\n")
    return text


def data(stored=False) -> dict:
    """What ``servingmath.variants`` needs to keep a draw's answers off the pages (see the module)."""
    lessons = {lesson: {_name(page): page_text(page, stored) for page in pages + [ROOT / FRONT_PAGE]}
               for lesson, pages in LESSON_PAGES.items()}
    checks = {}
    for notebook in sorted(variants.TEMPLATES):
        found = {label: (rel, unit) for label, _, rel, unit in practice_checks(notebook)}
        checks[notebook] = {label: {"rel": found[label][0], "units": found[label][1],
                                    "above": fixed_above(notebook, label)}
                            for label in variants.TEMPLATES[notebook].statements}
    digests = {page: source_digest(ROOT / page) for pages in lessons.values() for page in pages}
    return {"lessons": lessons, "digests": digests,
            "lesson_of": {notebook: lesson_of(notebook) for notebook in checks}, "checks": checks}


def text(stored=False) -> str:
    """``leaks.yaml`` as it should read: every page run afresh, or with ``stored``, each page whose digest matches
    read from the file (what then differs is a digest or a check)."""
    return json.dumps(data(stored), indent=1, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    wanted = text()
    if "--check" in sys.argv[1:]:
        sys.exit(0 if DATA.is_file() and DATA.read_text(encoding="utf-8") == wanted else 1)
    if not DATA.is_file() or DATA.read_text(encoding="utf-8") != wanted:
        DATA.write_text(wanted, encoding="utf-8")
        print(f"pages_seen: wrote {DATA.relative_to(ROOT)}")
