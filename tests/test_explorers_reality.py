"""The reality check's chart: every row a dot a reader can hover, focus or tap, filtered by kind of system
and by machine, with the lab's point and the reader's beside them whatever the filters."""
import html
import re

import pytest

from servingmath import ollama, reality, units
from servingmath.explorers import reality_check

FLOORS = reality.check_explained(reality.floors())


@pytest.fixture(scope="module")
def made():
    example = ollama.compare(ollama.EXAMPLES["a 500-word story"], 100e9, 1.3e9)
    point = reality.ollama_point(example, "example")
    points = [["the lab", 1.0, 2.0, "*"], [point.label, point.floor_time * 1e3, point.measured_time * 1e3, point.marker]]
    return reality_check.scatter(points=points)


def test_every_row_is_a_dot_whose_note_is_its_row(made):
    notes = re.findall(r'<g class="sm-dot[^"]*"[^>]*data-note="([^"]*)"', made.figure)
    assert len(notes) == len(FLOORS)
    for f, note in zip(FLOORS, notes):
        assert units.percent(f.share) in note and f.measurement.software in note
        users = {1: "one user,", None: "as many users as fit,"}.get(f.measurement.batch, f"{f.measurement.batch} users,")
        assert users in note, note
    # The lab's and the reader's marks are Tab stops; the dots are not (the table lists every row), but a
    # tap still focuses one.
    assert made.figure.count('tabindex="0"') == 2 and made.figure.count('tabindex="-1"') == len(FLOORS)
    assert "<title>" in made.figure
    assert made.figure.count("<polygon") >= 3   # the shaded triangle, the lab's star, the reader's diamond
    assert "faster than the floor:" in made.figure and "the floor (100 %)" in made.figure


def test_the_filters_count_the_rows_they_leave(made):
    assert made.readouts_at()["rows shown"] == f"{len(FLOORS)} of {len(FLOORS)}"
    for kind in made.controls[0].options[1:]:
        rows = [f for f in FLOORS if f.measurement.kind == kind]
        assert made.readouts_at(kind=kind)["rows shown"] == f"{len(rows)} of {len(FLOORS)}"
        assert f".rc-k{made.controls[0].options.index(kind) - 1}" in made.layers_at(kind=kind)[0]
    for key in made.controls[1].options[1:]:
        rows = [f for f in FLOORS if f.measurement.hardware == key]
        assert made.readouts_at(hardware=key)["rows shown"] == f"{len(rows)} of {len(FLOORS)}"
    assert made.layers_at() == [""]   # every dot shown


def test_the_chart_has_room_for_its_legend_and_details(made):
    assert made.details and made.height > 400
    assert 'class="webchart-detail" data-detail' in made._repr_html_()


def inside_the_canvas(svg):
    """Every text's box (as wide as the kit reckons it; a turned one upright), every dot and mark: the
    things lying outside the figure's viewBox, where a still copy of it would cut them off."""
    import xml.etree.ElementTree as ElementTree

    from servingmath.charts import kit

    root = ElementTree.fromstring(svg)
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    ns = "{http://www.w3.org/2000/svg}"
    outside = []
    for text in root.iter(ns + "text"):
        x, y, size = float(text.get("x")), float(text.get("y")), float(text.get("font-size"))
        long = kit.text_width(text.text or "", size)
        start = x - {"end": long, "middle": long / 2}.get(text.get("text-anchor"), 0)
        if text.get("transform"):   # turned to read upwards about (x, y)
            box = (x - 0.72 * size, y - start + x - long, x + 0.2 * size, y - start + x)
        else:
            box = (start, y - 0.72 * size, start + long, y + 0.2 * size)
        if box[0] < 0 or box[1] < 0 or box[2] > width or box[3] > height:
            outside.append(text.text)
    for circle in root.iter(ns + "circle"):
        x, y, r = (float(circle.get(k)) for k in ("cx", "cy", "r"))
        if x - r < 0 or y - r < 0 or x + r > width or y + r > height:
            outside.append(circle.get("data-note", "a dot"))
    return outside


def test_the_still_figure_cuts_nothing_off_at_any_filter(made):
    # The print and image copy of the chart is the SVG at a setting; nothing may fall outside it.
    assert inside_the_canvas(made.svg_at()) == []
    for control in made.controls:
        for option in control.options:
            assert inside_the_canvas(made.svg_at(**{control.name: option})) == [], (control.name, option)
    assert made._repr_mimebundle_()["image/svg+xml"] == made.svg_at()


def test_the_canvas_check_sees_a_label_past_the_edge():
    from servingmath.charts import kit

    assert inside_the_canvas(kit.figure(kit.text(kit.WIDTH - 10, 40, "a label too long for the edge"), 100)) \
        == ["a label too long for the edge"]
    assert inside_the_canvas(kit.figure(kit.text(kit.WIDTH - 10, 40, "fits", anchor="end"), 100)) == []


def test_the_marks_are_named_as_drawn_in_either_colour_scheme(made):
    # The lab's star is filled and the reader's diamond open, both in the text's colour, which dark
    # mode turns light: the chapter names them by shape and fill, never as black or white, and calls
    # the share guides dashed, as they are drawn.
    from pathlib import Path

    marks = re.findall(r'<polygon points="[^"]*" (fill="[^"]*") stroke="currentColor"[^>]*data-note="([^"]*)"',
                       made.figure)
    assert [(fill, note.split(":")[0]) for fill, note in marks] == [('fill="currentColor"', "the lab"),
                                                                    ('fill="none"', "example")]
    assert made.figure.count('stroke-dasharray="6 4"') >= len(reality.SHARE_GUIDES)
    chapter = (Path(__file__).parents[1] / "chapters" / "reality-check.md").read_text(encoding="utf-8")
    assert "filled star" in chapter and "open diamond" in chapter and "dashed line" in chapter
    assert not re.search(r"\b(black|white) (star|diamond)|dotted line", chapter)


def test_no_dot_or_menu_names_a_gpu_core_count_its_source_does_not_give(made):
    # The MLX and MLC LLM rows ran on an M2 Ultra without saying which GPU option; every M2 Ultra
    # row shares the catalog's entry (76 cores), so neither the dots nor the menu name a core count.
    notes = re.findall(r'<g class="sm-dot[^"]*"[^>]*data-note="([^"]*)"', made.figure)
    assert not [note for note in notes if "core GPU" in note]
    mlx = next(note for note in notes if "MLX LM" in note)
    assert "on Apple M2 Ultra, MLX LM" in html.unescape(mlx)
    shown = dict(zip(made.controls[1].options, made.controls[1].texts))
    assert shown["m2-ultra"] == "Apple M2 Ultra" and not [text for text in shown.values() if "core" in text]


def test_the_dots_are_easy_to_hit_and_the_one_shown_is_ringed(made):
    """Each dot is drawn 11 px across inside a 24 px target, and the one hovered, focused or tapped (whose
    row the page shows) is ringed in the text's colour, on a light page and a dark one."""
    from servingmath.charts import kit

    targets = re.findall(r'<g class="sm-dot[^>]*><title>[^<]*</title><circle [^>]*r="(\d+)" fill="transparent"/>'
                         r'<circle [^>]*r="([\d.]+)"', made.figure)
    assert len(targets) == len(FLOORS) and all((float(t), float(d)) == (12, 5.5) for t, d in targets)
    assert ".sm-dot:hover .sm-ring,.sm-dot:focus .sm-ring{stroke:currentColor" in kit.STYLE


def test_no_kind_of_system_is_drawn_in_the_guides_grey(made):
    kinds = list(reality.kinds(FLOORS))
    fills = set(re.findall(r'<circle [^>]*fill="(#[0-9a-f]{6})"[^>]*class="sm-f-(\w+) sm-ring"', made.figure))
    from servingmath.charts import kit

    assert len({name for _, name in fills}) == len(kinds) and kit.NEUTRAL not in {name for _, name in fills}


def test_a_filter_with_no_rows_says_so_and_one_row_reads_as_one_share(made):
    options = {c.name: c.options for c in made.controls}
    empty = [(k, h) for k in options["kind"][1:] for h in options["hardware"][1:]
             if not any(f.measurement.kind == k and f.measurement.hardware == h for f in FLOORS)]
    assert empty and f"{units.number(len(empty))} of the" in made.note
    for kind, hardware in empty:
        shown = made.readouts_at(kind=kind, hardware=hardware)
        assert shown["rows shown"] == f"none of {len(FLOORS)}: no row of this kind ran on this machine"
    singles = 0
    for kind in options["kind"]:
        for hardware in options["hardware"]:
            rows = [f for f in FLOORS if kind in ("all", f.measurement.kind) and hardware in ("all", f.measurement.hardware)]
            shares = {units.percent(f.share) for f in rows}
            if len(shares) == 1:
                singles += 1
                assert made.readouts_at(kind=kind, hardware=hardware)["their shares of peak"] == shares.pop()
    assert singles
