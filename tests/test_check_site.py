"""The built-site check fails on what a reader must never meet: Python's text for an object
where a figure belongs, a declared figure with no picture, a frozen explorer beside a live
chart, chart data over the budget, the run-live note said twice."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import check_site  # noqa: E402

SOURCE = """
```{glue:figure} p1_timeline
:name: fig-timeline

A caption.
```
"""
GOOD = ('<article class="bd-article"><p>Open it live with the rocket button.</p>'
        '<figure class="align-default" id="fig-timeline"><img src="timeline.png"><figcaption>A caption.'
        '</figcaption></figure></article>')


def test_a_sound_page_passes():
    assert check_site.page_problems("page", GOOD, SOURCE) == []


@pytest.mark.parametrize("page, problem", [
    (GOOD.replace('<img src="timeline.png">', "<pre>&lt;Figure size 700x360 with 1 Axes&gt;</pre>"),
     "shows Python's text for an object: '<Figure size'"),
    (GOOD.replace('<img src="timeline.png">', ""), "figure 'fig-timeline' holds no image or SVG"),
    (GOOD.replace('id="fig-timeline"', 'id="other"'), "figure 'fig-timeline' is declared but not on the page"),
    (GOOD + "<pre>&lt;servingmath.widgets.Explorer object at 0x7f00&gt;</pre>", "'object at 0x'"),
    (GOOD + "<pre>Traceback (most recent call last):</pre>", "'Traceback (most recent call last)'"),
    (GOOD + "<p>{glue}`p1_passes`</p>", "a glue role was left unfilled"),
    (GOOD + '<script type="application/json" class="webchart-data">{}</script><p class="explorer-runs-live">x</p>',
     "a frozen explorer sits beside its live chart"),
    (GOOD + f'<script type="application/json" class="webchart-data">{"x" * 400_001}</script>',
     "over 400,000"),
    (GOOD.replace("</article>", "<p>Or the rocket icon.</p></article>"), "says how to run the page live 2 times"),
    (GOOD + '<script defer src="_static/scripts/fontawesome.js?digest=55c2"></script>', "loads fontawesome.js"),
    (GOOD + '<script src="../searchindex.js"></script>', "loads searchindex.js"),
    ("<html><head></head><body>" + GOOD + "</body></html>", "names no icon"),
])
def test_each_problem_is_caught(page, problem):
    assert any(problem in found for found in check_site.page_problems("page", page, SOURCE))


def test_an_explorer_needs_a_live_chart_on_the_site():
    source = SOURCE + "```{code-cell} ipython3\nlesson_1.passes().live()\n```\n"
    assert any("has a live explorer but no website chart" in found for found in check_site.page_problems("page", GOOD, source))
    live = GOOD + '<script type="application/json" class="webchart-data">{}</script>'
    assert check_site.page_problems("page", live, source) == []


def test_the_declared_figures_are_read_from_the_source():
    assert check_site.DECLARED.findall(SOURCE + "```{figure} a.png\n:alt: x\n:name: fig-a\n```\n") == [
        "fig-timeline", "fig-a"]
