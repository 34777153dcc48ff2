"""The charts the website moves without a kernel: every setting comes from the package and
shows the figures the course publishes; the fragment holds what webcharts.js looks up."""
import json
import re
from pathlib import Path

import pytest
from IPython.display import HTML

import servingmath as sm
import servingmath.serving
from servingmath import units, webcharts

SCRIPT = Path(__file__).resolve().parents[1] / "_static" / "webcharts.js"
BUILDERS = {"passes": webcharts.passes_chart, "roofline": webcharts.roofline_chart,
            "request": webcharts.request_chart, "batching": webcharts.batching_chart,
            "workshop": webcharts.workshop_chart}


@pytest.fixture(scope="module")
def charts():
    return {kind: build() for kind, build in BUILDERS.items()}


def data_in(chart):
    data = re.search(r'<script type="application/json" class="webchart-data">(.*?)</script>', chart, re.S)
    return json.loads(data.group(1))


def looked_up(chart, setting):
    """What webcharts.js shows at ``setting``: the same table walk, done in Python."""
    data = data_in(chart)
    positions = [c.index(setting[c.name]) for c in chart.controls]
    at = sum(p * s for p, s in zip(positions, data["strides"])) * data["size"]
    readouts = [data["strings"][k] for k in data["readouts"][at:at + data["size"]]]
    layers = [data["strings"][layer["parts"][sum(p * s for p, s in zip(positions, layer["strides"]))]]
              for layer in data["layers"]]
    return dict(zip(chart.labels, readouts)), layers


def test_passes_chart_shows_example_1_1_and_the_two_flavours():
    chart = webcharts.passes_chart()
    assert chart.readouts_at() == {"forward passes": "300", "tokens in the prefill pass": "2,000",
                                   "decode passes, one token each": "299",
                                   "share of the tokens that go through in prefill": "87.0 %"}
    assert chart.readouts_at(prompt_tokens=500, reply_tokens=1000)["forward passes"] == "1,000"
    share = "share of the tokens that go through in prefill"
    assert chart.readouts_at(prompt_tokens=20_000, reply_tokens=100)[share] == "99.5 %"
    assert chart.readouts_at(prompt_tokens=20, reply_tokens=2000)[share] == "1.0 %"
    assert "decode: 299 passes, 1 token each" in chart and "284 more" in chart


def test_roofline_chart_shows_example_2_1_and_a_short_prompt():
    chart = webcharts.roofline_chart()
    shown = chart.readouts_at()
    assert shown["FLOP per byte"] == "3,000" and shown["the pass is"] == "compute-bound"
    assert shown["ridge of the GPU"] == "295 FLOP per byte"
    short = chart.readouts_at(tokens=200)
    assert short["FLOP per byte"] == "200" and short["the pass is"] == "memory-bound"
    assert chart.readouts_at(tokens=1)["FLOP per byte"] == "1"
    # Fewer bits a weight: more FLOP per byte, the same ridge.
    assert chart.readouts_at(tokens=200, weight_bits=4)["FLOP per byte"] == "800"
    assert chart.readouts_at(weight_bits=4)["ridge of the GPU"] == "295 FLOP per byte"


def test_request_chart_shows_example_3_1_and_8_bit_weights():
    chart = webcharts.request_chart()
    assert chart.readouts_at() == {
        "time to first token (TTFT)": "49 ms, compute-bound", "time per output token (TPOT)": "4.79 ms, memory-bound",
        "tokens a second": "209", "whole reply": "1.24 s", "share spent in decode": "96 %",
        "weights read each pass": "16.06 GB; fits in the GPU's 80 GB"}
    assert chart.readouts_at(weight_bits=8)["tokens a second"] == "417"
    long = chart.readouts_at(prompt_tokens=6000)  # the longest prompt whose replies all end inside 8,192 tokens
    assert long["share spent in decode"] == "92 %"
    with pytest.raises(ValueError, match="prompt_tokens must be one of"):
        chart.readouts_at(prompt_tokens=10_000)  # past Llama 3 8B's window with the longest reply
    # The T4's 16 GB (binary, 17.2 billion bytes) less the 5 % reserve leave 16.32 GB: the 16.06 GB of
    # weights alone would fit, but not with the cache of a 3,250-token conversation beside them.
    assert chart.readouts_at(gpu="t4")["weights read each pass"] == "16.06 GB; does not fit in the GPU's 16 GB"


def test_batching_chart_shows_example_4_1_and_your_turn_4():
    chart = webcharts.batching_chart()
    cost = "cost per million tokens"
    assert chart.readouts_at(users=1)["tokens an hour"] == "0.75 million" and chart.readouts_at(users=1)[cost] == "$3.995"
    assert chart.readouts_at(users=8)[cost] == "$0.499"
    assert chart.readouts_at() == {"tokens an hour": "24.03 million", cost: "$0.125",
                                   "each user's tokens a second": "209", "what limits the pass": "memory-bound",
                                   "the GPU's price": "$3.00 an hour"}
    # The laptop has no rental price, so it is not offered.
    assert "laptop" not in chart.controls[1].options and "h200" in chart.controls[1].options


def test_each_users_rate_falls_only_past_the_compute_bound_point(charts):
    chart = charts["batching"]
    first_compute = sm.serving.compute_bound_batch(sm.LLAMA_3_8B, sm.H100_SXM)
    assert f"compute-bound from {first_compute} users" in chart
    for users in chart.controls[0].options:
        readouts = chart.readouts_at(users=users)
        rate = int(readouts["each user's tokens a second"])
        if users < first_compute:
            assert rate == 209 and readouts["what limits the pass"] == "memory-bound"
        else:
            assert rate < 209 and readouts["what limits the pass"] == "compute-bound"


def test_workshop_shows_the_plates_figures_and_the_lessons_ideal():
    chart = webcharts.workshop_chart()
    assert chart.readouts_at() == {"time of the pass": "28.4 ms", "time per token": "0.0277 ms",
                                   "FLOP per byte": "1,033", "what limits it": "compute-bound"}
    assert chart.readouts_at(tokens=1)["what limits it"] == "memory-bound"
    assert "decode, 1,000 cached: 6.24 ms a token" in chart
    per_token = [float(chart.readouts_at(tokens=n)["time per token"].removesuffix(" ms")) for n in (1024, 4096, 8192)]
    assert per_token[0] < per_token[1] < per_token[2]
    ideal = chart.readouts_at(assumptions="lesson")
    assert float(ideal["time of the pass"].removesuffix(" ms")) < 28.4


@pytest.mark.parametrize("kind", BUILDERS)
def test_the_table_the_script_reads_is_the_package_at_every_setting(charts, kind):
    chart = charts[kind]
    settings = list(chart.settings())
    # Every setting of the smaller charts, every seventh of the larger ones.
    for setting in settings[::1 if len(settings) < 1500 else 7]:
        readouts, layers = looked_up(chart, setting)
        assert readouts == chart.readouts_at(**setting)
        assert layers == chart.layers_at(**setting)


@pytest.mark.parametrize("kind", BUILDERS)
def test_fragment_holds_its_controls_off_until_the_script_runs(charts, kind):
    chart = charts[kind]
    assert chart.data_bytes < webcharts.MAX_DATA_BYTES
    assert f'data-chart="{kind}"' in chart
    assert chart.count("data-readout") == len(chart.labels)
    assert chart.count('class="webchart-control"') == len(chart.controls)
    for control in chart.controls:
        assert len(control.options) >= 2
    # Controls stay off until the site's script wires them, so a notebook shows no dead control.
    assert not re.search(r"<(input|select)(?![^>]*disabled)[^>]*>", chart)
    # The default setting's readouts are in the HTML, for a reader without the script.
    for text in chart.readouts_at().values():
        assert f"<dd data-readout>{text}</dd>".replace("'", "&#x27;") in chart
    call = json.loads(re.search(r"data-call='([^']*)'", chart).group(1).replace("&quot;", '"'))
    assert webcharts.CHART_BUILDERS[call["function"]] is BUILDERS[kind]
    # The SVG is described by its readouts, for a reader who cannot see it.
    ident = re.search(r'aria-describedby="([^"]+)"', chart).group(1)
    assert f'<dl class="webchart-readouts" id="{ident}"' in chart


@pytest.mark.parametrize("kind", BUILDERS)
def test_fragment_needs_nothing_from_the_network(charts, kind):
    chart = charts[kind]
    assert set(re.findall(r"https?://[^\s\"']+", chart)) == {"http://www.w3.org/2000/svg"}
    assert "<script src" not in chart


def test_the_script_holds_no_arithmetic_of_the_course():
    script = SCRIPT.read_text()
    # Only the sum that finds a setting's place in a table: positions times strides.
    code = re.sub(r"//.*", "", script)
    assert re.findall(r"[^+*/ ]\s*([*/])\s*[^*/]", code) == ["*", "*"]
    assert "Math." not in code


def test_a_chart_displays_as_html_in_a_notebook(charts):
    chart = charts["batching"]
    assert chart._repr_html_() == str(chart)
    assert HTML(chart).data == str(chart)
    assert repr(chart) == "<chart: users per pass, GPU; 252 settings>"


def test_a_new_chart_from_the_general_api():
    panel = webcharts.Panel.make((1, 100), (0, 10), webcharts.TOP, 100, x_log=True)

    @webcharts.builder
    def doubled(default=2):
        return webcharts.live_chart(
            "doubled", "Twice a number", [
                webcharts.slider("n", "the number", [1, 2, 5, 10], default, units.number),
                webcharts.buttons("unit", "unit", {"ms": "milliseconds", "s": "seconds"}, "s")],
            readouts=lambda n, unit: {"twice": f"{units.number(2 * n)} {unit}"},
            layers=[webcharts.Layer(("n",), lambda n: panel.marker(n, n, webcharts.PREFILL))],
            background=panel.axes(), height=160)

    chart = doubled(default=5)
    assert chart.readouts_at() == {"twice": "10 s"}
    assert chart.readouts_at(n=10, unit="milliseconds") == {"twice": "20 ms"}
    assert looked_up(chart, {"n": 1, "unit": "ms"})[0] == {"twice": "2 ms"}
    assert len(data_in(chart)["layers"][0]["parts"]) == 4  # stored once per number, not per unit
    assert 'type="radio"' in chart and 'type="range"' in chart
    with pytest.raises(TypeError, match="keyword arguments only"):
        doubled(5)


def test_slider_steps_are_log_spaced_whole_numbers_holding_the_doublings_the_end_and_the_default():
    assert webcharts.slider_steps(1, 1000, 1, 7).tolist() == [1, 2, 4, 7, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert webcharts.slider_steps(1, 16, 2, 16).tolist() == [1, 2, 3, 4, 6, 8, 11, 16]
    assert webcharts.slider_steps(3, 12, 1, 3, extra=(5,)).tolist() == [3, 5, 6, 12]


def _too_big():
    return webcharts.live_chart("big", "Too big", [webcharts.slider("n", "n", range(200), 0),
                                                   webcharts.slider("m", "m", range(200), 0)],
                                readouts=lambda n, m: {"n and m": f"{n} and {m}"})


@pytest.mark.parametrize("call, error, message", [
    (lambda: webcharts.slider_steps(1, 100, 10, 200), ValueError, "default must be at most high"),
    (lambda: webcharts.slider_steps(0, 100, 10, 5), ValueError, "low must be at least 1"),
    (lambda: webcharts.slider_steps(10, 10, 10, 10), ValueError, "high must be at least 11"),
    (lambda: webcharts.slider_steps(1, 100, "ten", 5), TypeError, "per_doubling"),
    (lambda: webcharts.slider_steps(1, 100, 2, 5, extra=(500,)), ValueError, "extra must be at most high"),
    (lambda: webcharts.workshop_chart(model="Llama 3 8B"), ValueError, "model must be a catalog key"),
    (lambda: webcharts.batching_chart(default_gpu="laptop"), ValueError, "default must be one of the options"),
    (lambda: webcharts.request_chart(default_gpu="h900"), ValueError, "gpu must be a catalog key"),
    (lambda: webcharts.workshop_chart(default_assumptions="real"), ValueError, "default_assumptions"),
    (lambda: webcharts.batching_chart().readouts_at(users=33), ValueError, "users must be one of"),
    (lambda: webcharts.batching_chart().readouts_at(batch=8), ValueError, "settings must name the chart's controls"),
    (lambda: webcharts.roofline_chart(model=sm.LLAMA_3_8B), TypeError, "arguments must be JSON"),
    (lambda: webcharts.slider("two words", "x", [1, 2], 1), ValueError, "name must be a Python identifier"),
    (lambda: webcharts.slider("n", "x", [1], 1), ValueError, "at least two choices"),
    (lambda: webcharts.menu("n", "x", {1: "a", 2: "a"}, 1), ValueError, "texts of n must name each option once"),
    (_too_big, ValueError, "over 400,000"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_workshop_marks_the_exact_crossing_not_a_slider_step():
    chart = webcharts.workshop_chart()
    exact = sm.time_per_token_curve(sm.LLAMA_3_8B, sm.H100_SXM).arithmetic_from
    assert exact not in chart.controls[0].options
    assert f"compute-bound from {units.number(exact)} tokens" in chart
