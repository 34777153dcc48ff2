"""An explorer on the website: every setting computed when the book is built, looked up by the page.

The HTML fragment holds the figure at its default setting, the controls (disabled until the
page's ``_static/webcharts.js`` wires them), the readouts as text (the figure's text
alternative) and one JSON table: every text shown, stored once, and for each setting the
readouts' and each layer's place in it. The script adds no arithmetic of the course: it
turns the controls' positions into a place in the table. A page's data stays under
``MAX_DATA_BYTES``.
"""
from __future__ import annotations

import hashlib
import html as markup
import itertools
import json
import math

MAX_DATA_BYTES = 400_000


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def table(explorer) -> dict:
    """What the page looks values up in: controls' strides and texts, every string once, the readouts and
    each layer's part at every setting."""
    controls, default = explorer.site_controls, explorer.default
    counts = [len(c.options) for c in controls]
    strides = [math.prod(counts[k + 1:]) for k in range(len(controls))]
    strings, where = [], {}

    def intern(text) -> int:
        if text not in where:
            where[text] = len(strings)
            strings.append(text)
        return where[text]

    readouts = [intern(text) for setting in explorer.settings() for text in explorer.readouts_at(**setting).values()]
    layers = []
    for layer in explorer.layers:
        dims = [k for k, c in enumerate(controls) if c.name in layer.depends]
        parts = [intern(explorer.draw_layer(layer, {**default, **{controls[d].name: v for d, v in zip(dims, values)}}))
                 for values in itertools.product(*(controls[d].options for d in dims))]
        layer_strides = [0] * len(controls)
        for position, d in enumerate(dims):
            layer_strides[d] = math.prod(counts[e] for e in dims[position + 1:])
        layers.append({"strides": layer_strides, "parts": parts})
    return {"strides": strides, "texts": [list(c.texts) for c in controls], "strings": strings,
            "readouts": readouts, "size": len(explorer.labels), "layers": layers}


def _control(ident: str, k: int, control) -> str:
    cid, label = f"{ident}-{control.name}", markup.escape(control.label)
    shown = markup.escape(control.texts[control.default])
    if control.kind == "slider":
        return (f'<div class="webchart-control" data-control="{k}" data-kind="slider"><label for="{cid}">{label}</label>'
                f'<input type="range" id="{cid}" min="0" max="{len(control.options) - 1}" step="1" '
                f'value="{control.default}" aria-valuetext="{shown}" disabled>'
                f'<output for="{cid}" class="webchart-value">{shown}</output></div>')
    if control.kind == "menu":
        options = "".join(f'<option value="{i}"{" selected" if i == control.default else ""}>{markup.escape(t)}</option>'
                          for i, t in enumerate(control.texts))
        return (f'<div class="webchart-control" data-control="{k}" data-kind="menu">'
                f'<label for="{cid}">{label}</label><select id="{cid}" disabled>{options}</select></div>')
    choices = "".join(f'<label><input type="radio" name="{cid}" value="{i}"{" checked" if i == control.default else ""}'
                      f' disabled> {markup.escape(t)}</label>' for i, t in enumerate(control.texts))
    return (f'<fieldset class="webchart-control" data-control="{k}" data-kind="buttons"><legend>{label}</legend>'
            f'{choices}</fieldset>')


def html(explorer) -> str:
    """The explorer's chart for the website (and its still view elsewhere)."""
    data = _json(table(explorer))
    size = len(data.encode())
    if size > MAX_DATA_BYTES:
        raise ValueError(f"explorer {explorer.name!r} needs {size:,} bytes of data, over {MAX_DATA_BYTES:,}: "
                         f"give its controls fewer options")
    ident = f"webchart-{explorer.name}-{hashlib.sha1(data.encode()).hexdigest()[:8]}"
    svg = explorer.svg_at(ident=ident, described=f"{ident}-readouts")
    rows = "".join(f"<dt>{markup.escape(label)}</dt><dd data-readout>{markup.escape(text)}</dd>"
                   for label, text in explorer.readouts_at().items())
    call = f" data-call='{markup.escape(_json(explorer.call), quote=True)}'" if explorer.call else ""
    return (f'<figure class="webchart" data-chart="{explorer.name}" id="{ident}"{call}>'
            f'<figcaption class="webchart-title" id="{ident}-title">{markup.escape(explorer.title)}</figcaption>{svg}'
            f'<div class="webchart-controls">{"".join(_control(ident, k, c) for k, c in enumerate(explorer.site_controls))}'
            f'</div><dl class="webchart-readouts" id="{ident}-readouts" aria-live="polite">{rows}</dl>'
            + ('<p class="webchart-detail" data-detail aria-live="polite"></p>' if explorer.details else "")
            + (f'<p class="webchart-note">{markup.escape(explorer.note)}</p>' if explorer.note else "")
            + '<p class="webchart-nojs">The controls move on the course website; in a notebook, the live '
            'explorer below does the same.</p>'
            f'<script type="application/json" class="webchart-data">{data}</script></figure>')
