"""The course's explorers, one function an idea, by lesson: where the package's arithmetic meets the
charts (``servingmath.charts``). Each is marked ``@explorer``; as a cell's value it is the website's
chart, and ``.live()`` runs it in Jupyter. The helpers here are what several explorers share."""
from __future__ import annotations

import math

from .. import memory, models, units
from ..charts import buttons, kit, menu, slider
from ..hardware import CATALOG, ESTIMATED_PEAK, ESTIMATED_PEAKS
from ..models import MODELS

# The package refuses a case that cannot happen; a setting that raises one of these reads as its words.
REFUSE = {models.ContextTooLong: "past the model's window", memory.DoesNotFit: "does not fit"}


def windows_at_least(tokens, dense=False):
    """The catalog's models whose window holds ``tokens`` (only the dense ones, if ``dense``)."""
    return [k for k, m in MODELS.items() if m.context_window >= tokens and not (dense and m.mixture_of_experts)]


def figures(value, count):
    """Digits after the point that show ``value`` to ``count`` significant figures."""
    return max(0, count - 1 - math.floor(math.log10(abs(value)))) if value else 0


def ms(seconds, count=3):
    return units.ms(seconds, figures(seconds * 1e3, count))


def clock(seconds, count=3):
    """Milliseconds below a second, seconds above, to ``count`` significant figures."""
    return ms(seconds, count) if seconds < 1 else units.seconds(seconds, figures(seconds, count))


def plain(value):
    """A tick's number: with commas from one up, as written below one (0.01)."""
    return units.number(value) if value >= 1 else f"{value:g}"


def log_ticks(panel, x_ticks, y_text=plain, every=1):
    """A log-log panel's ticks: ``x_ticks`` as numbers; every ``every``-th power of ten up the side as ``y_text``."""
    panel.x_ticks = [(t, units.number(t)) for t in x_ticks]
    panel.y_ticks = [(t, y_text(t)) for t in kit.decades(panel.y.low, panel.y.high)][::every]


def counted(count, one, many):
    return f"{units.number(count)} {one if count == 1 else many}"


def tokens_text(n):
    return counted(n, "token", "tokens")


def _finder(name, catalog):
    def find(key):
        if key not in catalog:
            raise ValueError(f"{name} must be a catalog key among {sorted(catalog)}, got {key!r}")
        return catalog[key]
    return find


find_model, find_gpu = _finder("model", MODELS), _finder("gpu", CATALOG)


def gpu_menu(default, keys=None, priced=False, peak=True):
    """The catalog's GPUs (or ``keys``): priced if ``priced``, else marked where the figures use an estimated peak."""
    keys = [k for k in (keys or CATALOG) if not priced or CATALOG[k].price_per_hour is not None]
    find_gpu(default)
    return menu("gpu", "GPU", {k: f"{CATALOG[k].name}, {units.dollars(CATALOG[k].price_per_hour)} an hour" if priced
                               else CATALOG[k].name + f", {ESTIMATED_PEAK}" * (peak and k in ESTIMATED_PEAKS) for k in keys}, default)


def bits(name, label, default, choices=(16, 8, 4), site=True):
    return buttons(name, label, {b: str(b) for b in choices}, default, site)


def models_menu(default, keys=None, site=False):
    """The catalog's models (or ``keys``): in Jupyter only, unless ``site``."""
    find_model(default)
    return menu("model", "model", {k: MODELS[k].name for k in (keys or MODELS)}, default, site=site)


LISTED = "listed"   # a price control's setting that takes the GPU's own rental price


def price_slider():
    """Jupyter's price an hour: the GPU's listed price, or $0.25 to $10."""
    return slider("price", "$ an hour", (LISTED, 1.0, 3.0, 10.0), LISTED,
                  lambda p: "the GPU's listed price" if p == LISTED else units.dollars(p), site=False,
                  fine=(LISTED, *(round(0.25 + 0.05 * k, 2) for k in range(196))))


def price_of(price):
    return None if price == LISTED else price


from . import lesson_1, lesson_2, lesson_3, lesson_4, plates, reality_check  # noqa: E402,F401  (each module registers its explorers)
