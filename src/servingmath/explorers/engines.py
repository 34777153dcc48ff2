"""Engines against published runs: each run's published throughput against the throughput predicted
by the fit that never saw its publisher (``servingmath.calibration``). A still figure."""
from __future__ import annotations

import numpy as np

from .. import calibration, units
from ..charts import kit

COLOURS = {"vllm": kit.PREFILL, "sglang": kit.DECODE, "tensorrt-llm": kit.COMPUTE, "lmdeploy": kit.MEMORY}


def published_against_predicted() -> kit.SVG:
    """Published ÷ predicted throughput as points on log axes: on the grey line a prediction is exact;
    between the dashed ones, within a quarter."""
    points = []
    kept = calibration.results()["rows"]
    for check in calibration.checks():
        name = calibration._headline(check.run, "throughput")
        if name != "output_throughput" or not check.counts_as_unseen:
            continue
        points.append((kept[check.run.id]["held_out"][name], check.run.metrics[name], check.run.engine))
    values = np.array([[x, y] for x, y, _ in points])
    low, high = values.min() / 1.6, values.max() * 1.6
    panel = kit.Panel.make((low, high), (low, high), height=260, x_log=True, y_log=True,
                           x_label="predicted, tokens a second (held out)", y_label="published")
    ticks = [t for t in kit.decades(low, high) if low <= t <= high]
    panel.x_ticks = [(t, units.number(t)) for t in ticks]
    panel.y_ticks = [(t, units.number(t)) for t in ticks]
    span = np.geomspace(low, high, 50)
    parts = [panel.axes(), panel.line(span, span, kit.NEUTRAL, width=1.5),
             panel.line(span, span * 1.25, kit.NEUTRAL, dashed=True, width=1),
             panel.line(span, span * 0.75, kit.NEUTRAL, dashed=True, width=1)]
    parts += [panel.marker(x, y, COLOURS[engine], 4.5) for x, y, engine in points]
    shown = [e for e in COLOURS if any(p[2] == e for p in points)]
    rows = [(COLOURS[e], f"● {calibration.ENGINE_NAMES[e]}") for e in shown]
    rows.append((kit.NEUTRAL, "grey: published = predicted; dashed: a quarter either way"))
    named, below = kit.legend(panel.bottom + 10, rows)
    return kit.figure("".join(parts) + named, below, "Published against predicted output throughput, "
                      "each run predicted by a fit without its publisher")
