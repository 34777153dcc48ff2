"""Every explorer from its one declaration: the website's table is the package at every setting, the
live explorer in Jupyter redraws the same figure, and a setting the idea cannot hold reads as such."""
import functools
import itertools
import json
import re
import time
import warnings
from unittest import mock
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
import pytest

from servingmath import charts, units

from servingmath.charts import jupyter, kit, site

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "_static" / "webcharts.js"
import servingmath.explorers  # noqa: E402,F401  (registers them)

NAMES = sorted(key.rsplit(":", 1)[1] for key in charts.BUILDERS if key.startswith("servingmath.explorers"))


@pytest.fixture(scope="module")
def built():
    return {name: charts.find(name)() for name in NAMES}


def data_in(fragment):
    return json.loads(re.search(r'<script type="application/json" class="webchart-data">(.*?)</script>',
                                fragment, re.S).group(1))


def looked_up(explorer, data, setting):
    """What webcharts.js shows at ``setting`` from the fragment's ``data``: the same table walk, done in Python."""
    positions = [c.index(setting[c.name]) for c in explorer.site_controls]
    at = sum(p * s for p, s in zip(positions, data["strides"])) * data["size"]
    readouts = [data["strings"][k] for k in data["readouts"][at:at + data["size"]]]
    layers = [data["strings"][layer["parts"][sum(p * s for p, s in zip(positions, layer["strides"]))]]
              for layer in data["layers"]]
    return dict(zip(explorer.labels, readouts)), layers


def well_formed(svg):
    root = ElementTree.fromstring(svg)
    numbers = " ".join(value for element in root.iter() for value in element.attrib.values())
    assert not re.search(r"\b(nan|inf)\b", numbers)
    return root


def test_every_explorer_is_found_by_its_name(built):
    assert {"passes", "roofline", "request", "batching"} <= set(NAMES)
    for name, made in built.items():
        assert made.name == name and charts.find(name)().labels == made.labels
    with pytest.raises(ValueError, match="name must name one explorer"):
        charts.find("nothing")


@pytest.mark.parametrize("name", NAMES)
def test_the_table_the_script_reads_is_the_package_at_every_setting(built, name):
    made = built[name]
    data = data_in(made._repr_html_())
    assert len(site._json(data).encode()) <= site.MAX_DATA_BYTES
    settings = list(made.settings())
    for setting in settings[::1 if len(settings) < 1500 else 7]:
        readouts, layers = looked_up(made, data, setting)
        assert readouts == made.readouts_at(**setting)
        assert layers == made.layers_at(**setting)


@pytest.mark.parametrize("name", NAMES)
def test_the_fragment_is_still_readable_without_its_script(built, name):
    made = built[name]
    fragment = made._repr_html_()
    assert f'data-chart="{name}"' in fragment
    assert fragment.count("data-readout") == len(made.labels)
    assert fragment.count('class="webchart-control"') == len(made.site_controls)
    assert not re.search(r"<(input|select)(?![^>]*disabled)[^>]*>", fragment)
    for text in made.readouts_at().values():   # the default's readouts, as text: the figure's alternative
        assert f"<dd data-readout>{text}</dd>".replace("'", "&#x27;") in fragment
    call = json.loads(re.search(r"data-call='([^']*)'", fragment).group(1).replace("&quot;", '"'))
    assert charts.BUILDERS[call["function"]](**call["kwargs"]).readouts_at() == made.readouts_at()
    ident = re.search(r'aria-describedby="([^"]+)"', fragment).group(1)
    assert f'<dl class="webchart-readouts" id="{ident}"' in fragment
    assert set(re.findall(r"https?://[^\s\"']+", fragment)) == {"http://www.w3.org/2000/svg"}
    svg = re.search(r"<svg.*?</svg>", fragment, re.S).group(0)
    well_formed(svg)


def test_print_and_text_views_get_the_default_figure_and_its_readouts(built):
    made = built["passes"]
    bundle = made._repr_mimebundle_()
    assert bundle["text/html"] == made._repr_html_() and bundle["image/svg+xml"] == made.svg_at()
    assert bundle["text/plain"].splitlines() == [made.title, *(f"{k}: {v}" for k, v in made.readouts_at().items())]


def every_setting(made):
    """Every setting the website holds, then every option of each control the website holds still."""
    yield from made.settings()
    for control in made.controls:
        for value in (control.options if control.site else [*control.options, *_ends(control)]):
            yield made.setting({control.name: value})


def _ends(control):
    return [] if control.fine is None else [control.fine[0], control.fine[-1]]


@pytest.mark.parametrize("name", NAMES)
def test_every_setting_is_priced_only_where_it_can_happen(built, name):
    """A setting the package refuses (past the model's window, weights that do not fit) reads as the refusal
    in every readout and draws it; every other setting reads as numbers. No other error anywhere."""
    made = built[name]
    refusals = set(made.refuse.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for k, setting in enumerate(every_setting(made)):
            shown = made.readouts_at(**setting)
            texts = set(shown.values())
            assert not (texts & refusals) or len(texts) == 1, (name, setting, shown)
            if texts & refusals or k % 5 == 0:   # every refusal drawn, and a fifth of the rest
                well_formed(made.svg_at(**setting))


SVG_NS = "{http://www.w3.org/2000/svg}"


def _boxes(root, kind):
    """The boxes of the cards (x0, y0, x1, y1), or of the labels that are not turned, with their words
    (as wide as ``kit.text_width`` reckons, from a little above the cap height to below the baseline)."""
    for element in root.iter(SVG_NS + kind):
        x, y = float(element.get("x")), float(element.get("y"))
        if kind == "rect":
            if element.get("class") == "sm-card":
                yield (x, y, x + float(element.get("width")), y + float(element.get("height"))), None
        elif not element.get("transform"):
            size = float(element.get("font-size"))
            width = kit.text_width(element.text or "", size)
            x -= {"end": width, "middle": width / 2}.get(element.get("text-anchor"), 0)
            yield (x, y - 0.72 * size, x + width, y + 0.2 * size), element.text


def _segments(root):
    """Every stretch of a drawn line: polylines, and lines that are not faint grid lines."""
    for line in root.iter(SVG_NS + "polyline"):
        points = [tuple(map(float, pair.split(","))) for pair in line.get("points").split()]
        yield from zip(points, points[1:])
    for line in root.iter(SVG_NS + "line"):
        if line.get("stroke-opacity") is None:
            yield (float(line.get("x1")), float(line.get("y1"))), (float(line.get("x2")), float(line.get("y2")))


def crossed_labels(svg):
    """The labels a line runs through, leaving out those on a card (which hides the lines under it)."""
    root = ElementTree.fromstring(svg)
    cards = [box for box, _ in _boxes(root, "rect")]
    segments = list(_segments(root))
    return sorted({words for box, words in _boxes(root, "text")
                   if not any(c[0] <= box[0] and box[2] <= c[2] and c[1] <= box[1] and box[3] <= c[3] for c in cards)
                   and any(kit.clip(a, b, box) for a, b in segments)})


def misplaced_labels(svg):
    """Labels that run past the figure's sides (by more than the 8 units a tick's number may reach into the margin
    the page leaves round a figure), and label cards that do not fit their words: a label's card (not the
    refusal's, which hides the figure's lines) holds its words with 1 to 3 units to spare at each end."""
    root = ElementTree.fromstring(svg)
    found = [f"past the sides: {words!r}" for (x0, _, x1, _), words in _boxes(root, "text")
             if x0 < -8 or x1 > kit.WIDTH + 8]
    elements = list(root.iter())
    for card, words in zip(elements, elements[1:]):
        if card.get("class") == "sm-card" and words.tag == SVG_NS + "text" and float(card.get("height")) < 30:
            alone = ElementTree.Element("svg")
            alone.extend([card, words])
            ((c0, _, c1, _), _), ((t0, _, t1, _), text) = next(_boxes(alone, "rect")), next(_boxes(alone, "text"))
            if not (1 <= t0 - c0 <= 3 and 1 <= c1 - t1 <= 3):
                found.append(f"a card from {c0:.0f} to {c1:.0f} round {text!r}, from {t0:.0f} to {t1:.0f}")
    return found


# A line's colour named in words under the figure (an explorer's note) rather than by a label on it.
COLOUR_WORDS = {kit.PREFILL: "Blue", kit.DECODE: "Red", kit.COMPUTE: "Green", kit.MEMORY: "Orange",
                kit.NEUTRAL: "Grey", kit.EXTRA: "Purple"}


def unnamed_lines(svg, note):
    """The colours of drawn lines (curves, and lines that are not faint grid lines) that nothing names: no
    words of their colour in the figure, and no "Red:"-like words for them in the note under it."""
    root = ElementTree.fromstring(svg)
    drawn = [e for e in root.iter() if e.tag == SVG_NS + "polyline"
             or (e.tag == SVG_NS + "line" and e.get("stroke-opacity") is None)]
    named = {(e.get("class") or "").removeprefix("sm-f-") for e in root.iter(SVG_NS + "text")}
    return sorted({colour for colour in ((e.get("class") or "").removeprefix("sm-s-") for e in drawn)
                   if colour and colour not in named and not re.search(rf"\b{COLOUR_WORDS[colour]}\b", note, re.I)})


@pytest.mark.parametrize("name", NAMES)
def test_every_label_is_clear_of_lines_inside_the_figure_on_its_card_and_every_line_named(built, name):
    """At a sample of every explorer's settings (each control's every option among them): no drawn line crosses
    a label, no label runs past the figure's sides, each label's card fits its words, reckoning a label's width
    as the kit does (the site's browser test holds that reckoning to the browser's), and each line's colour is
    named in the figure or in the note under it. The figure scales to its column, so what holds here holds at
    400 px wide."""
    made = built[name]
    settings = list(every_setting(made))
    for setting in settings[::max(1, len(settings) // 120)] + settings[-sum(len(c.options) for c in made.controls):]:
        svg = made.svg_at(**setting)
        assert not crossed_labels(svg), (name, setting, crossed_labels(svg))
        assert not misplaced_labels(svg), (name, setting, misplaced_labels(svg))
        assert not unnamed_lines(svg, made.note), (name, setting, unnamed_lines(svg, made.note))


# What a figure draws, element by element, as the checks below read it: each element's box, its colours on each page
# (the kit's light shade, its dark one by class, currentColor as the page's text), and whether it is a card, words or
# a mark. Parsed once for each distinct piece of markup (a layer's part is shared by many settings).
THEMES = tuple(kit.PAGES)


def _hex(colour):
    colour = colour.lstrip("#")
    colour = "".join(c * 2 for c in colour) if len(colour) == 3 else colour
    return tuple(int(colour[k:k + 2], 16) for k in (0, 2, 4))


def luminance(rgb):
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _colour(element, how, theme, inherited):
    """The colour ``element`` is painted with (``how``: fill or stroke) on ``theme``'s page, or None (not painted)."""
    value = element.get(how, inherited if how == "fill" else None)
    if value in (None, "none", "transparent"):      # a tap target's invisible circle paints nothing
        return None
    classes = (element.get("class") or "").split()
    if theme == "dark":
        for name, (_, dark) in kit.PALETTE.items():
            if f"sm-{how[0]}-{name}" in classes:
                return _hex(dark)
        if ({"sm-card", "sm-on"} & set(classes) and how == "fill") or ("sm-ring" in classes and how == "stroke"):
            return _hex("#121212")
    return _hex(kit.PAGES[theme][1]) if value == "currentColor" else _hex(value)


@dataclass(frozen=True)
class Drawn:
    kind: str            # "card", "words", "area" (a shade under marks), "mark", "frame" (a panel's outline)
    box: tuple           # (x0, y0, x1, y1) in the figure's units
    colours: tuple       # one (r, g, b) a theme, or None where nothing is painted
    opacity: float = 1.0
    words: str = ""
    points: tuple = ()   # where a mark's colour is read against what lies under it (corners of a polygon for "area")
    centre: tuple = ()
    cover: bool = False  # whether it paints its whole area (what words and marks drawn later lie on)
    ringed: bool = False  # a dot ringed in the page's colour: it lies on its ring, whatever it overlaps


def _polygon(text):
    return tuple(tuple(map(float, pair.split(","))) for pair in text.split())


def _box_of(points, pad=0.0):
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad)


@functools.lru_cache(maxsize=4096)
def drawn_in(markup):
    """Every element of ``markup`` (SVG pieces, without the <svg> around them) as ``Drawn`` things, in order."""
    root = ElementTree.fromstring(f'<g xmlns="http://www.w3.org/2000/svg">{markup}</g>')
    found = []
    for e in root.iter():
        tag = e.tag.removeprefix(SVG_NS)
        fills = tuple(_colour(e, "fill", t, "currentColor") for t in THEMES)
        strokes = tuple(_colour(e, "stroke", t, None) for t in THEMES)
        opacity = float(e.get("fill-opacity") or e.get("stroke-opacity") or 1)
        width = float(e.get("stroke-width") or 1)
        if tag == "text":
            size, words = float(e.get("font-size")), e.text or ""
            reach = kit.text_width(words, size, e.get("font-weight") == "bold")
            x, y = float(e.get("x")), float(e.get("y"))
            x -= {"end": reach, "middle": reach / 2}.get(e.get("text-anchor"), 0)
            box = (x, y - 0.72 * size, x + reach, y + 0.2 * size)
            if e.get("transform"):   # turned a quarter about its anchor (x, y): reads upwards
                ax, ay = float(e.get("x")), float(e.get("y"))
                box = (ax - 0.72 * size, ay - (box[2] - ax), ax + 0.2 * size, ay - (box[0] - ax))
            middle = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            samples = (middle, (box[0] + 2, middle[1]), (box[2] - 2, middle[1]))
            found.append(Drawn("words", box, fills, words=words, points=samples, centre=middle))
        elif tag == "rect":
            x, y, w, h = (float(e.get(k)) for k in ("x", "y", "width", "height"))
            box = (x, y, x + w, y + h)
            if not w or not h:   # nothing is drawn
                continue
            if "sm-card" in (e.get("class") or ""):
                found.append(Drawn("card", box, fills, cover=True))
            elif fills[0] is None:
                corners = ((x, y), (x + w, y), (x + w, y + h), (x, y + h))   # its sides read at their middles
                found.append(Drawn("frame", box, strokes, points=tuple(((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
                                                                        for a, b in zip(corners, corners[1:] + corners[:1]))))
            else:
                found.append(Drawn("area" if opacity < 0.5 else "mark", box, fills, opacity,
                                   points=((x + w / 2, y + h / 2),), cover=True))
        elif tag == "circle":
            cx, cy, r = float(e.get("cx")), float(e.get("cy")), float(e.get("r"))
            found.append(Drawn("mark", (cx - r, cy - r, cx + r, cy + r), fills, points=((cx, cy),), centre=(cx, cy),
                               cover=True, ringed="sm-ring" in (e.get("class") or "")))
        elif tag == "polygon":
            corners = _polygon(e.get("points"))
            painted = fills if fills[0] is not None else strokes
            kind, centre = "area" if opacity < 0.5 else "mark", tuple(sum(c) / len(corners) for c in zip(*corners))
            found.append(Drawn(kind, _box_of(corners), painted, opacity, points=corners if kind == "area" else (centre,),
                               centre=centre, cover=fills[0] is not None))
        elif tag in ("polyline", "line"):
            points = (_polygon(e.get("points")) if tag == "polyline" else
                      ((float(e.get("x1")), float(e.get("y1"))), (float(e.get("x2")), float(e.get("y2")))))
            if opacity >= 0.5:   # a faint grid line is part of what marks are drawn on, not a mark; a line read at a
                found.append(Drawn("mark", _box_of(points, width / 2), strokes,   # dozen of its points
                                   points=points[::max(1, len(points) // 12)] + points[-1:]))
    return tuple(found)


def _inside(point, thing):
    x, y = point
    if thing.kind == "area" and len(thing.points) > 2:   # a shaded polygon: does a ray from the point cross it oddly?
        inside, corners = False, thing.points
        for (x0, y0), (x1, y1) in zip(corners, corners[1:] + corners[:1]):
            if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
                inside = not inside
        return inside
    return thing.box[0] <= x <= thing.box[2] and thing.box[1] <= y <= thing.box[3]


def _under(point, below, theme):
    """The colour at ``point`` on ``theme``'s page once everything in ``below`` that covers it is laid down."""
    colour = _hex(kit.PAGES[theme][0])
    for thing in below:
        painted = thing.colours[THEMES.index(theme)]
        if thing.cover and painted is not None and _inside(point, thing):
            colour = tuple(round(o * thing.opacity + c * (1 - thing.opacity)) for o, c in zip(painted, colour))
    return colour


def contrast_problems(things):
    """Words below 4.5:1 and marks below 3:1 against what they are drawn on, on the light page and the dark."""
    found, covers = [], [(k, thing) for k, thing in enumerate(things) if thing.cover]
    for k, thing in enumerate(things):
        if thing.kind not in ("words", "mark", "frame"):
            continue
        least = 4.5 if thing.kind == "words" else 3.0
        for t, theme in enumerate(THEMES):
            if thing.colours[t] is None:
                continue
            # A mark lies on what holds it whole (a tick on a bar); one partly over another mark shows its edge on
            # what lies under both, so marks are read only against shades, cards and marks that hold them whole.
            below = [b for c, b in covers if c < k and (thing.kind == "words" or b.kind != "mark" or
                                                        (_holds(b.box, thing.box) and not thing.ringed))]
            worst = min(contrast(thing.colours[t], _under(p, below, theme)) for p in thing.points)
            if worst < least:
                found.append(f"{thing.kind} {thing.words or thing.box} at {worst:.1f}:1 on the {theme} page")
    return sorted(set(found))


def _overlap(a, b, slack=0.5):
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def _holds(outer, inner, slack=0.5):
    return (outer[0] - slack <= inner[0] and inner[2] <= outer[2] + slack and outer[1] - slack <= inner[1]
            and inner[3] <= outer[3] + slack)


def collision_problems(things, height):
    """Words over words; a card over part of words drawn before it (remnants round its edges); a mark that runs past
    the panel it is drawn in; anything past the figure's top or foot."""
    found = []
    words = [(k, t) for k, t in enumerate(things) if t.kind == "words"]
    cards = [(k, t) for k, t in enumerate(things) if t.kind == "card"]
    shown = [(k, t) for k, t in words if not any(c > k and _holds(card.box, t.box) for c, card in cards)]
    for a, (k, first) in enumerate(shown):
        for m, second in shown[a + 1:]:
            if _overlap(first.box, second.box) and not any(k < c < m and _holds(card.box, first.box) for c, card in cards):
                found.append(f"{first.words!r} and {second.words!r} overlap")
    for c, card in cards:
        found += [f"a card covers part of {t.words!r}" for k, t in words
                  if k < c and _overlap(card.box, t.box) and not _holds(card.box, t.box)]
    frames = [t.box for t in things if t.kind == "frame"]
    for thing in things:
        touched = [f for f in frames if _overlap(f, thing.box, 0)]
        # A mark in a panel lies inside it (a dot or symbol: its centre does); one joining panels, inside their span.
        if thing.kind == "mark" and touched and not (
                any(_holds(f, thing.box, 1.5) or (thing.centre and _holds(f, thing.centre * 2, 1.5)) for f in touched)
                or (len(touched) > 1 and _holds(_box_of([c for f in touched for c in (f[:2], f[2:])]), thing.box, 1.5))):
            found.append(f"a mark {tuple(round(v) for v in thing.box)} runs past its panel {touched[0]}")
        if thing.box[1] < -2 or thing.box[3] > height + 2:
            found.append(f"{thing.kind} {thing.words or tuple(round(v) for v in thing.box)} past the figure's top or foot")
    return sorted(set(found))


def drawn_at(made, setting):
    """What ``made`` draws at ``setting``: its background's things, then each layer's."""
    return drawn_in(made.background) + sum((drawn_in(part) for part in made.layers_at(**setting)), ())


@pytest.mark.parametrize("name", NAMES)
def test_every_word_and_mark_reads_and_nothing_collides_at_every_setting(built, name):
    """At every setting the website holds (and each control's every option in Jupyter): every word at 4.5:1 or more
    and every mark at 3:1 or more against what it is drawn on, on the light page and the dark; no two words overlap,
    no card hides part of a word, no mark runs past its panel, nothing past the figure's top or foot."""
    made, seen = built[name], set()
    for setting in every_setting(made):
        key = tuple(made.layers_at(**setting))
        if key in seen:   # the same drawing as a setting already checked
            continue
        seen.add(key)
        things = drawn_at(made, setting)
        assert not contrast_problems(things), (name, setting, contrast_problems(things))
        assert not collision_problems(things, made.height), (name, setting, collision_problems(things, made.height))


def test_the_contrast_and_collision_checks_see_what_the_old_figures_did():
    """White words on a light bar on the dark page (2.1:1), two tick labels on one another, a refusal's card over part
    of the axes' words, a line out of its panel: each is found; the same figure without them is clean."""
    panel = kit.Panel.make((0, 10), (0, 10))
    panel.y_ticks, panel.x_ticks = [(0, "0"), (5, "5"), (10, "10")], [(0, "0"), (10, "10")]
    bar = kit.rect(100, 100, 80, 40, kit.PREFILL)
    old_white = bar + '<text x="140" y="125" fill="#fff" font-size="16" text-anchor="middle">2,000</text>'
    assert contrast_problems(drawn_in(old_white)) == ["words 2,000 at 2.1:1 on the dark page"]
    assert not contrast_problems(drawn_in(bar + kit.text(140, 125, "2,000", "white", "middle")))
    assert contrast_problems(drawn_in('<text x="10" y="20" fill="#bbb" font-size="16">faint</text>')) == [
        "words faint at 1.9:1 on the light page"]
    clean = panel.axes() + panel.line([0, 10], [0, 10], kit.PREFILL)
    assert not collision_problems(drawn_in(clean), 320)
    crowded = clean + kit.text(panel.x.start - 5, panel.y.start + 4.5 + 6, "0.1", anchor="end")
    assert collision_problems(drawn_in(crowded), 320) == ["'0' and '0.1' overlap"]
    refused = clean + kit.card(kit.LEFT - 8, 100, kit.WIDTH - kit.RIGHT - kit.LEFT + 16, 60)
    assert collision_problems(drawn_in(refused), 320) == ["a card covers part of '5'"]
    assert not collision_problems(drawn_in(clean + kit.card(0, 100, kit.WIDTH, 60)), 320)
    spilled = clean + f'<polyline points="{panel.x.start + 10},{panel.y.end + 10} {panel.x.end + 30},{panel.y.end + 10}" ' \
                      f'fill="none" stroke="currentColor"/>'
    assert any("runs past its panel" in p for p in collision_problems(drawn_in(spilled), 320))


def test_the_label_check_sees_a_crossing_and_a_card_clears_it():
    panel = kit.Panel.make((0, 10), (0, 10))
    across = panel.line([0, 10], [0, 10], kit.PREFILL) + panel.label(4, 5, "crossed")
    assert crossed_labels(kit.figure(across + panel.label(8, 1, "clear"), 300)) == ["crossed"]
    out_and_back = ElementTree.fromstring(kit.figure(panel.line([0, 5, 10], [5, 20, 5], kit.PREFILL), 300))
    pieces = [[tuple(map(float, pair.split(","))) for pair in line.get("points").split()]
              for line in out_and_back.iter(SVG_NS + "polyline")]   # cut where it leaves the panel's top
    assert len(pieces) == 2 and pieces[0][-1][1] == pieces[1][0][1] == panel.y.end
    assert pieces[0][0] == (float(panel.x(0)), float(panel.y(5))) and pieces[1][-1][0] == float(panel.x(10))
    backed = kit.text(panel.x(6), panel.y(6.5), "on a card", backed=True)
    assert crossed_labels(kit.figure(across + backed, 300)) == ["crossed"]
    assert crossed_labels(kit.figure(across + backed.replace("sm-card", "sm-other"), 300)) == ["crossed", "on a card"]


def test_a_refused_setting_reads_as_the_refusal_and_prices_nothing():
    class Refused(ValueError):
        pass

    def price(n):
        if n > 2:
            raise Refused(f"n must be at most 2, got {n}")
        return {"price": units.dollars(n)}

    made = charts.Explorer("toy", "A toy", [charts.slider("n", "n", [1, 2, 3], 1)], price,
                           [charts.Layer(("n",), lambda n: price(n)["price"])], refuse={Refused: "does not fit"})
    assert made.readouts_at(n=3) == {"price": "does not fit"} and "does not fit" in made.layers_at(n=3)[0]
    assert made.readouts_at(n=2) == {"price": "$2.00"}
    loud = charts.Explorer("toy", "A toy", [charts.slider("n", "n", [1, 2, 3], 1)], price)
    with pytest.raises(Refused):
        loud.readouts_at(n=3)


@pytest.mark.parametrize("name", NAMES)
def test_the_live_explorer_has_every_control_and_redraws_the_same_figure(built, name):
    made = built[name]
    live = made.live()
    assert list(live.controls) == [c.name for c in made.controls]
    assert [w.description for w in live.controls.values()] == [c.label for c in made.controls]
    assert live.readouts == made.readouts_at() and live.svg == made.svg_at(style=False) and live.draws == 1
    for control, widget in zip(made.controls, live.controls.values()):
        options = [value for _, value in widget.options] if hasattr(widget, "options") else [widget.min, widget.max]
        for value in (options[-1], options[0]):
            draws = live.draws
            live.set(**{control.name: value})
            assert live.draws == draws + 1 and live.view.value.endswith(live.svg)
            assert live.readouts == made.readouts_at(**live.values())
            well_formed(live.svg)
    box = live.widget()
    assert isinstance(box, widgets.VBox) and f"servingmath-explorer-{name}" in box._dom_classes
    with pytest.raises(ValueError, match="controls must be among"):
        live.set(nothing=3)


def test_a_new_explorer_from_the_general_api():
    panel = kit.Panel.make((1, 100), (0, 10), height=100, x_log=True)

    @charts.explorer
    def doubled(n=2):
        return charts.Explorer("doubled", "Twice a number", [
            charts.slider("n", "the number", [1, 2, 5, 10], n, units.number, fine=range(1, 11)),
            charts.buttons("unit", "unit", {"ms": "milliseconds", "s": "seconds"}, "s")],
            lambda n, unit: {"twice": f"{units.number(2 * n)} {unit}"},
            [charts.Layer(("n",), lambda n: panel.marker(n, n, kit.PREFILL))], panel.axes(), panel.bottom)

    made = doubled(n=5)
    assert made.readouts_at() == {"twice": "10 s"} and made.readouts_at(n=10, unit="milliseconds") == {"twice": "20 ms"}
    assert made.readouts_at(n=7) == {"twice": "14 s"}     # a fine step, as Jupyter offers
    assert looked_up(made, data_in(made._repr_html_()), {"n": 1, "unit": "ms"})[0] == {"twice": "2 ms"}
    assert len(data_in(made._repr_html_())["layers"][0]["parts"]) == 4  # once per number, not per unit
    assert made.live().set(n=7).readouts == {"twice": "14 s"}
    with pytest.raises(TypeError, match="keyword arguments only"):
        doubled(5)


def test_steps_are_log_spaced_whole_numbers_holding_the_doublings_the_end_and_the_default():
    assert charts.steps(1, 1000, 1, 7) == [1, 2, 4, 7, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert charts.steps(1, 16, 2, 16) == [1, 2, 3, 4, 6, 8, 11, 16]
    assert charts.steps(3, 12, 1, 3, extra=(5,)) == [3, 5, 6, 12]


def _too_big():
    return charts.Explorer("big", "Too big", [charts.slider("n", "n", range(200), 0), charts.slider("m", "m", range(200), 0)],
                           lambda n, m: {"n and m": f"{n} and {m}"})._repr_html_()


@pytest.mark.parametrize("call, error, message", [
    (lambda: charts.steps(1, 100, 10, 200), ValueError, "default and extra must lie from low to high"),
    (lambda: charts.steps(0, 100, 10, 5), ValueError, "low must be at least 1"),
    (lambda: charts.steps(1, 100, "ten", 5), TypeError, "per_doubling must be a whole number"),
    (lambda: charts.slider("two words", "x", [1, 2], 1), ValueError, "name must be a Python identifier"),
    (lambda: charts.slider("n", "x", [1], 1), ValueError, "at least two choices"),
    (lambda: charts.slider("n", "x", [1, 2], 3), ValueError, "default must be one of the options"),
    (lambda: charts.menu("n", "x", {1: "a", 2: "a"}, 1), ValueError, "texts of n must name each option once"),
    (lambda: charts.find("batching")().readouts_at(users=33), ValueError, "users must be one of"),
    (lambda: charts.find("batching")().readouts_at(batch=8), ValueError, "settings must name the explorer's controls"),
    (lambda: charts.find("roofline")(model="Llama 3 8B"), ValueError, "model must be a catalog key"),
    (lambda: charts.find("request")(gpu="h900"), ValueError, "gpu must be a catalog key"),
    (lambda: charts.find("batching")(gpu="laptop"), ValueError, "default must be one of the options"),
    (lambda: charts.find("roofline")(gpu=object()), TypeError, "arguments must be JSON"),
    (_too_big, ValueError, "over 400,000"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_script_holds_no_arithmetic_of_the_course():
    code = re.sub(r"//.*", "", SCRIPT.read_text())
    assert re.findall(r"[^+*/ ]\s*([*/])\s*[^*/]", code) == ["*", "*"]
    assert "Math." not in code


def test_one_palette_reads_on_a_light_page_and_a_dark_one():
    def luminance(hex_colour):
        channels = [int(hex_colour[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    for name, (light, dark) in kit.PALETTE.items():
        assert (1.05) / (luminance(light) + 0.05) >= 4.5, name                      # on white
        assert (luminance(dark) + 0.05) / (luminance("#121212") + 0.05) >= 4.5, name  # on the dark theme
        assert f".sm-f-{name}{{fill:{dark}}}" in kit.STYLE


def test_a_slow_first_move_shows_computing_until_drawn_and_a_repeat_is_instant():
    """A setting not computed before dims the readouts and figure under "computing…" while it is computed;
    a setting computed before is cached: shown at once, with no such state."""
    seen, live = [], None

    def slow(n):
        time.sleep(0.2)
        if live is not None:   # what the reader sees while the setting is computed
            seen.append((n, live.view.value))
        return {"n": f"n is {n}"}

    made = charts.Explorer("slow", "A slow toy", [charts.slider("n", "n", [1, 2, 3], 1)], slow,
                           [charts.Layer(("n",), lambda n: kit.text(10, 10, f"n is {n}"))])
    live = made.live()
    live.set(n=2)   # not declared slow: the first slow move shows no notice, and tells the explorer it is slow
    assert not seen[-1][1].startswith(f"<p class='{jupyter.BUSY}'>")
    live.set(n=3)
    n, shown = seen[-1]
    assert n == 3 and shown.startswith(f"<p class='{jupyter.BUSY}'>computing…</p>")
    assert "<td>n is 2</td>" in shown and ">n is 2</text>" in shown   # the last view stays, dimmed, till the new one
    assert f".{jupyter.BUSY} ~ *{{opacity:.4}}" in live.widget().children[0].value
    assert "computing" not in live.view.value and "<td>n is 3</td>" in live.view.value and "n is 3" in live.svg
    count, started = len(seen), time.perf_counter()
    live.set(n=1).set(n=3).set(n=2)
    assert len(seen) == count and time.perf_counter() - started < 0.05   # both cached: no state, no wait


def test_an_explorer_declared_slow_says_computing_for_each_new_setting_even_after_a_quick_one():
    """A simulation's explorer whose first setting came quick (kept from the page's own cells) still says
    "computing…" before the next setting it has not shown; one not declared slow says nothing while quick."""
    shown = []

    def readouts(n):
        return {"n": f"n is {n}"}

    for slow in (True, False):
        made = charts.Explorer("quick", "A toy", [charts.slider("n", "n", [1, 2, 3], 1)], readouts,
                               [charts.Layer(("n",), lambda n: kit.text(10, 10, f"n is {n}"))], slow=slow)
        live = made.live()
        live.view.observe(lambda change: shown.append((slow, change["new"])), names="value")
        live.set(n=2)
        live.set(n=1)   # shown before: no notice
    notices = [slow for slow, value in shown if value.startswith(f"<p class='{jupyter.BUSY}'>computing…</p>")]
    assert notices == [True]


def _page_move(widget, to_end):
    """Move a control as the page does: it sends the kernel the position (``index``) or the number it now holds."""
    if hasattr(widget, "options"):
        widget.set_state({"index": len(widget.options) - 1 if to_end else 0})
    else:
        widget.set_state({"value": widget.max if to_end else widget.min})


@pytest.mark.parametrize("name", NAMES)
def test_a_move_redraws_once_and_sets_no_other_control(built, name):
    """Each control of each explorer (every menu among them, the GPU's too), moved as the page moves it: the kernel
    sends the page one message, the readouts and figure together, for a setting computed before (and a
    "computing…" notice before it for one computed the first time); no other control moves."""
    live, sent = built[name].live(), []
    spied = widgets.Widget.send_state

    def spy(widget, key=None):
        sent.append((widget, key))
        return spied(widget, key)

    with mock.patch.object(widgets.Widget, "send_state", spy):
        for rounds in range(3):   # the first round leaves each control at its first place; the third repeats the second
            for control in live.controls.values():
                for to_end in (True, False):
                    others, draws = {n: w.value for n, w in live.controls.items() if w is not control}, live.draws
                    sent.clear()
                    _page_move(control, to_end)
                    assert live.draws == draws + 1, (name, control.description)
                    assert {n: w.value for n, w in live.controls.items() if w is not control} == others
                    assert {(widget, key) for widget, key in sent} == {(live.view, "value")}, (name, sent)
                    assert len(sent) == (1 if rounds == 2 else len(sent)) and len(sent) <= 2, (name, control.description)


def test_the_presentation_layer_stays_within_1796_lines():
    """What draws and binds (the kit, every explorer and figure, the page's script), in lines that are not blank:
    comments and docstrings count, blank lines do not. The cap was 1,680; Lesson 4 Part 2's explorer (pipeline
    stages, sharing Part 1's bars and labels) added 41, Part 3's routers explorer 31 (it reuses lesson 3's bar
    rows and the kit: no control or chart of the kit draws three routers' waits), and Part 4's 44 (its bars reuse
    the kit's panel, rectangles and text, and its runs are the package's)."""
    modules = [*sorted((ROOT / "src" / "servingmath").glob("charts/*.py")),
               *sorted((ROOT / "src" / "servingmath").glob("explorers/*.py")), SCRIPT]
    assert len(modules) >= 10
    lines = sum(1 for path in modules for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    assert lines <= 1796, f"{lines} lines that are not blank in {[path.name for path in modules]}"
