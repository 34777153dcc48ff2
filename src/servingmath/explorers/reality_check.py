"""The reality check's chart: every published measurement against its floor, filtered by the kind of system
and by the machine, each dot's row shown on hover, focus or tap."""
from __future__ import annotations

from .. import reality, units
from ..charts import Explorer, Layer, explorer, kit, menu
from . import plain

ALL = "all"


def _note(f) -> str:
    """A dot's row, as the table prints it."""
    m = f.measurement
    users = {1: "one user", None: "as many users as fit"}.get(m.batch, f"{m.users} users")
    return (f"{reality.model_name(m.model)} ({m.weights}) on {m.hardware_label}, {m.software}; {m.version}; "
            f"{users}, {m.lengths}: {m.published}; floor {units.ms_significant(f.time)}, "
            f"measured {units.ms_significant(m.measured_time)} {m.unit_of_work}; {units.percent(f.share)} "
            f"{f.share_name}" + (" (faster than its floor, with a reason)" if f.beats else "")
            + f"{reality.prompts_counted_note(f)}. {m.source.publisher}, {m.date}.")


@explorer
def scatter(points: list | None = None) -> Explorer:
    """Measured time against the floor's, log-log, a colour a kind of system; the diagonal is the floor. ``points``
    are [label, floor ms, measured ms, marker ("*" or "D")] from elsewhere (the lab's, the reader's), always shown."""
    floors, points = reality.check_explained(reality.floors()), points or []
    kinds, machines = list(reality.kinds(floors)), reality.hardware(floors)
    times = [t for f in floors for t in (f.time * 1e3, f.measurement.measured_time * 1e3)] + [t for p in points for t in p[1:3]]
    low, high = kit.around(min(times) / 1.5, max(times) * 1.5)
    size = kit.WIDTH - kit.LEFT - kit.RIGHT
    panel = kit.Panel.make((low, high), (low, high), kit.TOP + 6, size, True, True,
                           "floor: the roofline at 100 % of peak (ms)", "measured (ms)")
    ticks = [(t, plain(t)) for t in kit.decades(low, high)]
    panel.x_ticks = panel.y_ticks = ticks[::max(1, len(ticks) // 4)]
    # An across tick whose number would run past the figure's right edge is left out, line and number.
    panel.x_ticks = [(t, name) for t, name in panel.x_ticks if panel.x(t) + kit.text_width(name) / 2 <= kit.WIDTH]
    colours = dict(zip(kinds, (*kit.SERIES[:5], kit.TEAL), strict=True))   # none grey, like the guides
    # The guides' lines, then their names on cards, clear of every line.
    guides = "".join(panel.line([low, high * share], [low / share, high], kit.NEUTRAL, dashed=True, width=1)
                     for share in reality.SHARE_GUIDES) + "".join(
        panel.label(high * share / 2.5, high / 2, units.percent(share), kit.NEUTRAL, "end", backed=True)
        for share in reality.SHARE_GUIDES)
    dots = "".join(panel.dot(f.time * 1e3, f.measurement.measured_time * 1e3, colours[f.measurement.kind], _note(f),
                             f"rc-dot rc-k{kinds.index(f.measurement.kind)} rc-h{list(machines).index(f.measurement.hardware)}", False)
                   for f in floors)
    marks = "".join(panel.symbol(p[1], p[2], p[3], filled=k == 0,
                                 note=f"{p[0]}: floor {units.ms_significant(p[1] / 1e3)}, measured "
                                      f"{units.ms_significant(p[2] / 1e3)}, {units.percent(p[1] / p[2])} of the floor")
                    for k, p in enumerate(points))
    # The colours named under the chart, a kind a line, the lab's and the reader's marks after them.
    kinds_named, below = kit.legend(panel.bottom + 14, [(colours[kind], kind) for kind in kinds], swatch=True)
    marks_named, below = kit.legend(below, [(None, f"{'★' if p[3] == '*' else '◇'} {p[0]}") for p in points])
    background = (panel.axes() + panel.area([low, high, high], [low, high, low], kit.NEUTRAL, 0.12)
                  + panel.line([low, high], [low, high], None, width=1.5)
                  + panel.label(low * 3, low * 1.3, "the floor (100 %)")
                  + panel.label(high / 1.4, low * 3.5, "faster than the floor:", anchor="end")
                  + panel.label(high / 1.4, low * 2, "only with a reason", anchor="end") + guides + kinds_named + marks_named + dots + marks)

    empty = len(kinds) * len(machines) - len({(f.measurement.kind, f.measurement.hardware) for f in floors})

    def shown(kind, hardware):
        # Only a style rule changes with the filters: every dot is drawn once, in the background.
        rule = "".join(f".rc-{c}" for c in ([f"k{kinds.index(kind)}"] if kind != ALL else [])
                       + ([f"h{list(machines).index(hardware)}"] if hardware != ALL else []))
        return f"<style>.rc-dot{{display:none}}.rc-dot{rule}{{display:inline}}</style>" if rule else ""

    def readouts(kind, hardware):
        rows = [f for f in floors if kind in (ALL, f.measurement.kind) and hardware in (ALL, f.measurement.hardware)]
        shares = sorted({units.percent(f.share): f.share for f in rows}.items(), key=lambda item: item[1])
        return {"rows shown": f"{len(rows)} of {len(floors)}" if rows else
                f"none of {len(floors)}: no row of this kind ran on this machine",
                "their shares of peak": " to ".join(dict.fromkeys([shares[0][0], shares[-1][0]])) if rows else "none",
                "faster than the floor, each with its reason": units.number(sum(f.beats for f in rows))}

    return Explorer("scatter", "Published measurements against their floors", [
        menu("kind", "kind of system", {ALL: "every kind", **{k: k for k in kinds}}, ALL),
        menu("hardware", "hardware", {ALL: "every machine", **machines}, ALL)],
        readouts, [Layer(("kind", "hardware"), shown)], background, below,
        details=True,
        note=f"Hover over a dot or tap it to read its row; the table above lists every row. {units.number(empty)} of "
             f"the {units.number(len(kinds) * len(machines))} pairs of a kind and a machine have no row.")
