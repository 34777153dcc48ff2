"""The lab's figures: time per token against tokens per pass, this machine's measurements beside the
roofline's prediction (``servingmath.lab`` curves). Still figures: the page's kernel draws them from what it
has just measured."""
from __future__ import annotations

import numpy as np

from .. import units
from ..charts import kit


def _panel_markup(top, prediction, measured=None, title=""):
    """One panel from ``top``: the prediction's line, decode step (open diamond) and knee (dots); measured
    passes as dots, their decode step a filled diamond, where their gains stop dashed; a legend under it."""
    curves = [c for c in (prediction, measured) if c is not None]
    times = np.concatenate([np.asarray(c.time_per_token, dtype=float) for c in curves]
                           + [[c.decode_time for c in curves]]) * 1e3
    last = max(float(np.max(c.tokens)) for c in curves)
    heading, lines = kit.wrapped(16, top + 16, title, size=kit.LABEL)
    panel = kit.Panel.make((0.7, last * 1.5), kit.around(times.min() / 1.5, times.max() * 1.5), top + 16 + 18 * lines,
                           200, True, True,
                           "tokens per pass", "ms per token")
    panel.x_ticks = [(t, units.number(t)) for t in kit.decades(1, last)]
    panel.y_ticks = [(t, f"{t:g}") for t in kit.decades(panel.y.low, panel.y.high)]
    parts = [heading, panel.axes(),
             panel.line(prediction.tokens, np.asarray(prediction.time_per_token) * 1e3, kit.PREFILL),
             panel.symbol(1, prediction.decode_time * 1e3, "D", False,
                          f"predicted decode step, {units.number(prediction.cached_tokens)} cached tokens")]
    legend = [(kit.PREFILL, prediction.label),
              (None, f"◇ predicted decode step, {units.number(prediction.cached_tokens)} cached tokens")]
    if prediction.knee is not None:
        parts.append(panel.vertical(prediction.knee, colour=kit.COMPUTE))
        legend.append((kit.COMPUTE, f"{prediction.knee_label}: {units.number(prediction.knee)}"))
    if measured is not None:
        parts += [panel.marker(t, y * 1e3, kit.PREFILL, 4.5) for t, y in zip(measured.tokens, measured.time_per_token)]
        parts += [panel.symbol(1, measured.decode_time * 1e3, "D", True,
                               f"measured decode step, {units.number(measured.cached_tokens)} cached tokens"),
                  panel.vertical(measured.knee, colour=kit.NEUTRAL)]
        legend += [(kit.PREFILL, f"● {measured.label}"),
                   (None, f"◆ measured decode step, {units.number(measured.cached_tokens)} cached tokens"),
                   (kit.NEUTRAL, f"{measured.knee_label}: {units.number(measured.knee)}")]
    named, below = kit.legend(panel.bottom + 10, legend)
    return "".join(parts) + named, below


def panel(prediction, measured=None, title="") -> kit.SVG:
    """One machine: predicted, and measured where given."""
    body, height = _panel_markup(0, prediction, measured, title)
    return kit.figure(body, height, title)


def beside_plate(plate, prediction, measured, plate_title, lab_title) -> kit.SVG:
    """The plate's prediction for an H100 above; this machine, measured and predicted, under it."""
    first, middle = _panel_markup(0, plate, title=plate_title)
    second, height = _panel_markup(middle, prediction, measured, lab_title)
    return kit.figure(first + second, height, f"{plate_title}; {lab_title}")
