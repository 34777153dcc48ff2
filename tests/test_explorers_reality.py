"""The reality check's chart: every row a dot a reader can hover, focus or tap, filtered by kind of system
and by machine, with the lab's point and the reader's beside them whatever the filters."""
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
    notes = re.findall(r'<circle[^>]*data-note="([^"]*)"', made.figure)
    assert len(notes) == len(FLOORS)
    for f, note in zip(FLOORS, notes):
        assert units.percent(f.share) in note and f.measurement.software in note
    assert 'tabindex="0"' in made.figure and "<title>" in made.figure
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
