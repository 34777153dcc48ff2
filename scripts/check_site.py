"""Check the built website: every page of the table of contents exists and shows its
numbers, and nothing failed silently (no traceback, no unfilled glue)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    return files


def main(html_dir: str) -> int:
    html = Path(html_dir)
    problems = []
    pages = toc_files()
    for page in pages:
        path = html / f"{page}.html"
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        text = path.read_text(encoding="utf-8")
        if "Traceback (most recent call last)" in text:
            problems.append(f"{path}: shows a traceback")
        if re.search(r"\{glue:?\w*\}", text):
            problems.append(f"{path}: a glue role was left unfilled")
    index = (html / "index.html").read_text(encoding="utf-8") if (html / "index.html").is_file() else ""
    for expected in ("NVIDIA H100 SXM", "AMD Instinct MI300X", "<table", "4.79 ms", "295"):
        if expected not in index:
            problems.append(f"index.html: does not show {expected!r}")
    for problem in problems:
        print("check_site:", problem, file=sys.stderr)
    print(f"check_site: {len(pages)} pages checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "_build" / "html")))
