"""An explorer: one idea declared once (see AUTHORING.md), shown on the website, in Jupyter and in print.

It declares **controls** (``slider``, ``menu``, ``buttons``: the website's steps; a slider's ``fine`` steps
for Jupyter), **readouts** (every control's value by name -> label -> text) and **layers** (``Layer``: SVG
that changes only with the controls it names) over a fixed **background**. A setting that raises an error
named in ``refuse`` reads as that error's words and prices nothing. As a cell's value it is the website's
chart (``site.html``), still at its default where no script runs; ``.live()`` runs it in Jupyter.
``@explorer`` marks the function that returns one, so a test can build it again from the call a page records.
"""
from __future__ import annotations

import contextvars
import functools
import itertools
import json
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from . import kit


@dataclass(frozen=True)
class Control:
    """One control: its name (the keyword the functions take), label, options (values passed on), how each
    reads (``texts``), the default option's index, its kind (slider, menu, buttons), Jupyter's finer
    ``fine`` steps (a ``range`` or values in order), if any, and whether the website shows it (``site``:
    where not, the website holds it at its default)."""

    name: str
    label: str
    options: tuple
    texts: tuple
    default: int
    kind: str
    fine: Sequence | None = None
    text: Callable | None = None
    site: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be a Python identifier, got {self.name!r}")
        if len(self.options) < 2:
            raise ValueError(f"options of {self.name} must hold at least two choices, got {self.options!r}")
        if len(self.texts) != len(self.options) or len(set(self.texts)) != len(self.texts):
            raise ValueError(f"texts of {self.name} must name each option once, got {self.texts!r}")

    def index(self, value) -> int:
        """The index of the option ``value`` (a value or its text)."""
        for k, (option, shown) in enumerate(zip(self.options, self.texts)):
            if value == shown or _same(option, value):
                return k
        raise ValueError(f"{self.name} must be one of {list(self.texts)}, got {value!r}")

    def accepts(self, value) -> bool:
        """Whether ``value`` is a setting of this control on some surface (an option, or a fine step)."""
        return any(_same(option, value) for option in self.options) or (self.fine is not None and value in self.fine)


def _same(option, value):
    try:
        return bool(option == value)
    except (TypeError, ValueError):
        return False


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _choice(kind, name, label, values, texts, default, fine=None, text=None, site=True) -> Control:
    values = tuple(_plain(v) for v in values)
    index = next((k for k, v in enumerate(values) if _same(v, default)), None)
    if index is None:
        raise ValueError(f"default must be one of the options {list(values)}, got {default!r}")
    return Control(name, label, values, tuple(texts), index, kind, fine, text, site)


def slider(name, label, values, default, text: Callable = str, fine: Sequence | None = None, site=True) -> Control:
    """A slider over ``values`` in order, each read as ``text(value)``; Jupyter offers ``fine`` steps if given."""
    return _choice("slider", name, label, values, [text(_plain(v)) for v in values], default, fine, text, site)


def menu(name, label, choices: Mapping, default, site=True) -> Control:
    """A drop-down: ``choices`` maps each value to its text."""
    return _choice("menu", name, label, choices, choices.values(), default, site=site)


def buttons(name, label, choices: Mapping, default, site=True) -> Control:
    """A row of two to four buttons: ``choices`` maps each value to its text."""
    return _choice("buttons", name, label, choices, choices.values(), default, site=site)


def steps(low: int, high: int, per_doubling: int, default: int, extra: Sequence[int] = ()) -> list[int]:
    """Whole numbers from ``low`` to ``high`` evenly spaced on a log scale, ``per_doubling`` a doubling,
    every ``low`` × 2ᵏ among them; ``high``, ``default`` and ``extra`` are steps too."""
    for name, value, least in (("low", low, 1), ("high", high, low + 1), ("per_doubling", per_doubling, 1),
                               ("default", default, low)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise TypeError(f"{name} must be a whole number, got {value!r}")
        if value < least:
            raise ValueError(f"{name} must be at least {least}, got {value!r}")
    if default > high or any(not low <= e <= high for e in extra):
        raise ValueError(f"default and extra must lie from low to high ({low} to {high}), got {default!r}, {extra!r}")
    exponents = np.arange(per_doubling * math.log2(high / low) + 1) / per_doubling
    found = np.round(low * 2.0 ** exponents).astype(int)
    return np.unique(np.concatenate([found[found <= high], [high, default], np.asarray(extra, dtype=int)])).tolist()


@dataclass(frozen=True)
class Layer:
    """Markup that changes with the controls named in ``depends``: ``draw(**their values)``."""

    depends: tuple
    draw: Callable[..., str]


class Explorer:
    """An idea's declaration; see the module's note. ``refuse`` maps an error type to the words a setting that
    raises it reads as ("does not fit"); ``slow``: a new setting simulates, so Jupyter says "computing…" first."""

    def __init__(self, name: str, title: str, controls: Sequence[Control], readouts: Callable[..., Mapping],
                 layers: Sequence[Layer] = (), background: str = "", height: int = 300, note: str = "",
                 refuse: Mapping[type, str] | None = None, details: bool = False, slow: bool = False):
        names = [c.name for c in controls]
        if not controls or len(set(names)) != len(names):
            raise ValueError(f"controls must be at least one, each named once, got {names}")
        for layer in layers:
            if not set(layer.depends) <= set(names):
                raise ValueError(f"a layer depends on {layer.depends}, not all among the controls {names}")
        self.name, self.title, self.controls, self.layers = name, title, tuple(controls), tuple(layers)
        self.background, self.height, self.note = background, int(height), note
        self._readouts, self.refuse, self.details, self.slow = readouts, dict(refuse or {}), details, bool(slow)
        self.call, self._drawn, self._read = _CALL.get(), {}, {}
        self.labels = tuple(readouts(**self.default))

    @property
    def default(self) -> dict:
        """The setting shown first: control name -> value."""
        return {c.name: c.options[c.default] for c in self.controls}

    def setting(self, values: Mapping) -> dict:
        """A whole setting from some controls' values (or their texts); the rest at their defaults."""
        unknown = sorted(set(values) - {c.name for c in self.controls})
        if unknown:
            raise ValueError(f"settings must name the explorer's controls {[c.name for c in self.controls]}, "
                             f"got {unknown}")
        chosen = self.default
        for c in self.controls:
            if c.name in values:
                value = values[c.name]
                chosen[c.name] = value if not isinstance(value, str) and c.accepts(value) else c.options[c.index(value)]
        return chosen

    @property
    def site_controls(self) -> tuple:
        """The controls the website shows."""
        return tuple(c for c in self.controls if c.site)

    def settings(self):
        """Every setting the website holds, as dicts of control name -> value."""
        for combination in itertools.product(*(c.options for c in self.site_controls)):
            yield self.setting(dict(zip((c.name for c in self.site_controls), combination)))

    def refused(self, error) -> str:
        """The words a setting that raised ``error`` reads as; a fault (an error not in ``refuse``) is raised."""
        for kind, words in self.refuse.items():
            if isinstance(error, kind):
                return words
        raise error

    def readouts_at(self, **values) -> dict[str, str]:
        """The readouts at a setting; a refused setting reads as the refusal throughout."""
        setting = self.setting(values)
        key = tuple(setting.values())
        if key not in self._read:
            self._read[key] = self._compute_readouts(setting)
        return dict(self._read[key])

    def _compute_readouts(self, setting):
        try:
            shown = dict(self._readouts(**setting))
        except Exception as error:
            return dict.fromkeys(self.labels, self.refused(error))
        if tuple(shown) != self.labels:
            raise ValueError(f"readouts must give the same labels at every setting, got {tuple(shown)} "
                             f"after {self.labels}")
        return {label: str(text) for label, text in shown.items()}

    def known(self, **values) -> bool:
        """Whether a setting's readouts and layers were computed already, so that showing it is instant."""
        setting = self.setting(values)
        return tuple(setting.values()) in self._read and all(_key(layer, setting) in self._drawn
                                                              for layer in self.layers)

    def draw_layer(self, layer: Layer, setting: Mapping) -> str:
        """One layer at a setting, drawn once for its controls' values (a move redraws only the layers that
        depend on the control moved); where the setting is refused, the refusal written across the figure."""
        key = _key(layer, setting)
        if key not in self._drawn:
            try:
                self._drawn[key] = layer.draw(**{name: setting[name] for name in layer.depends})
            except Exception as error:
                words = self.refused(error)
                # The refusal, then the package's reason (which names the model, the GPU and the figures), on a
                # card that hides the whole figure (no word of the axes shows round its edges).
                top = max(kit.TOP + 26, (self.height - 18 * kit.wrapped(12, 0, str(error))[1]) / 2 - 4)
                self._drawn[key] = (kit.card(0, 0, kit.WIDTH, self.height) + kit.wrapped(12, top + 24, str(error))[0]
                                    + kit.text(kit.WIDTH / 2, top, words, anchor="middle", size=kit.LABEL, bold=True))
        return self._drawn[key]

    def layers_at(self, **values) -> list[str]:
        setting = self.setting(values)
        return [self.draw_layer(layer, setting) for layer in self.layers]

    def svg_at(self, style=True, ident="", described="", **values) -> str:
        """The whole figure at a setting (``style=False``: without the dark shades' style sheet; ``ident`` and
        ``described``: see ``kit.figure``)."""
        return kit.figure(self.background + "".join(f'<g class="webchart-layer">{part}</g>'
                                                    for part in self.layers_at(**values)), self.height, self.title,
                          ident, described, style)

    @property
    def figure(self) -> kit.SVG:
        """The default setting's figure, for print and for glue."""
        return self.svg_at()

    def _repr_html_(self):
        from . import site
        return site.html(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The website's chart; for a view without HTML (PDF, a text view) the default setting's figure and
        its readouts as text."""
        text = "\n".join([self.title, *(f"{label}: {shown}" for label, shown in self.readouts_at().items())])
        return {"text/html": self._repr_html_(), "image/svg+xml": str(self.figure), "text/plain": text}

    def live(self):
        """The explorer in Jupyter: controls generated from the declaration, redrawn at every move."""
        from . import jupyter
        return jupyter.Live(self)


def _key(layer, setting):
    return (id(layer), *(setting[name] for name in layer.depends))


_CALL: contextvars.ContextVar = contextvars.ContextVar("explorer_call", default=None)
# Every function marked @explorer, by "module:name", so a test can rebuild what a page shows.
BUILDERS: dict[str, Callable[..., Explorer]] = {}


def explorer(function):
    """Mark a function that returns an ``Explorer``: its keyword arguments (JSON: a model or GPU by its
    catalog key) are recorded on the page."""
    @functools.wraps(function)
    def build(*args, **kwargs):
        if args:
            raise TypeError(f"{function.__name__} takes keyword arguments only, got {args!r}")
        try:
            json.dumps(kwargs)
        except TypeError:
            raise TypeError(f"{function.__name__}'s arguments must be JSON (a model or GPU by its catalog key), "
                            f"got {kwargs!r}") from None
        token = _CALL.set({"function": f"{function.__module__}:{function.__name__}", "kwargs": kwargs})
        try:
            return function(**kwargs)
        finally:
            _CALL.reset(token)

    BUILDERS[f"{function.__module__}:{function.__name__}"] = build
    return build


def find(name: str) -> Callable[..., Explorer]:
    """The function marked @explorer whose explorer is called ``name`` (its function's name)."""
    import servingmath.explorers  # noqa: F401  (registers every explorer of the course)

    found = [build for key, build in BUILDERS.items() if key.rsplit(":", 1)[1] == name]
    if len(found) != 1:
        raise ValueError(f"name must name one explorer among {sorted(k.rsplit(':', 1)[1] for k in BUILDERS)}, "
                         f"got {name!r}")
    return found[0]
