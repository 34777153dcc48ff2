"""The charts the website moves without a kernel: their steps come from the package and
show the figures the course publishes; the fragment holds what webcharts.js looks up."""
import json
import re

import pytest
from IPython.display import HTML

import servingmath as sm
from servingmath import webcharts


@pytest.fixture(scope="module")
def charts():
    return {"workshop": webcharts.workshop_chart(), "request": webcharts.request_chart(),
            "batching": webcharts.batching_chart()}


def steps_in(chart):
    data = re.search(r'<script type="application/json" class="webchart-steps">(.*?)</script>', chart, re.S)
    return json.loads(data.group(1))


def test_workshop_shows_the_plates_figures():
    chart = webcharts.workshop_chart()
    assert chart.values[chart.default] == "1,024 tokens"
    assert chart.step("1,024 tokens") == {"time of the pass": "28.4 ms", "time per token": "0.0277 ms",
                                          "FLOP per byte": "1,033", "what limits it": "compute-bound"}
    assert chart.step("1 token")["what limits it"] == "memory-bound"
    assert chart.step("1 token")["FLOP per byte"] == "1"
    assert chart.values[0] == "1 token" and chart.values[-1] == "16,384 tokens"
    assert "decode over a 1,000-token cache: 6.24 ms a token" in chart


def test_workshop_per_token_time_rises_again_past_a_few_thousand_tokens():
    chart = webcharts.workshop_chart()
    per_token = [float(chart.step(f"{n:,} tokens")["time per token"].removesuffix(" ms"))
                 for n in (1024, 4096, 16384)]
    assert per_token[0] < per_token[1] < per_token[2]


def test_request_chart_shows_example_3_1_at_its_default():
    chart = webcharts.request_chart()
    assert chart.values[chart.default] == "3,000 tokens"
    assert chart.readouts[chart.default] == {
        "time to first token (TTFT)": "49 ms", "time per output token (TPOT)": "4.79 ms",
        "tokens a second": "209", "whole reply": "1.24 s", "share spent in decode": "96 %"}
    # A prompt of 20,000 tokens: prefill grows, decode's share shrinks, TPOT stays.
    long = chart.step("20,000 tokens")
    assert long["time per output token (TPOT)"] == "4.79 ms" and long["share spent in decode"] == "79 %"


def test_batching_chart_shows_example_4_1_and_your_turn_4():
    chart = webcharts.batching_chart()
    cost = "cost per million tokens at $3.00 an hour"
    assert chart.values[chart.default] == "32 users"
    assert chart.step("1 user")["tokens an hour"] == "750,000" and chart.step("1 user")[cost] == "$3.995"
    assert chart.step("8 users")[cost] == "$0.499"
    assert chart.step("32 users") == {"tokens an hour": "24,000,000", cost: "$0.125",
                                      "each user's tokens a second": "209", "what limits the pass": "memory-bound"}


def test_each_users_rate_falls_only_past_the_compute_bound_point():
    chart = webcharts.batching_chart()
    first_compute = next(b for b in range(1, 1025)
                         if sm.batching(sm.LLAMA_3_8B, sm.H100_SXM, b).decode.bound == "compute")
    assert f"compute-bound from {first_compute} users" in chart
    for value, readouts in zip(chart.values, chart.readouts):
        users = int(value.split()[0].replace(",", ""))
        rate = int(readouts["each user's tokens a second"])
        if users < first_compute:
            assert rate == 209 and readouts["what limits the pass"] == "memory-bound"
        else:
            assert rate < 209 and readouts["what limits the pass"] == "compute-bound"


def test_price_is_an_argument():
    chart = webcharts.batching_chart(price_per_hour=6.0, default_users=1)
    assert chart.readouts[chart.default]["cost per million tokens at $6.00 an hour"] == "$7.990"


@pytest.mark.parametrize("kind", ["workshop", "request", "batching"])
def test_fragment_holds_every_step_for_the_script(charts, kind):
    chart = charts[kind]
    steps = steps_in(chart)
    count = len(chart.values)
    assert steps["values"] == chart.values
    assert steps["readouts"] == [list(r.values()) for r in chart.readouts]
    assert len(steps["cursor"]) == len(steps["marks"]) == count
    assert f'max="{count - 1}"' in chart and f'value="{chart.default}"' in chart
    # The slider stays off until the site's script wires it, so a notebook shows no dead control.
    assert re.search(r'<input type="range"[^>]*disabled>', chart)
    assert chart.count('class="webchart-marker"') == len(steps["marks"][0])
    assert f'data-chart="{kind}"' in chart
    assert chart.count("data-readout") == len(chart.readouts[0])
    # Markers and cursor stay inside the drawing.
    width, height = map(int, re.search(r'viewBox="0 0 (\d+) (\d+)"', chart).groups())
    for marks, cursor in zip(steps["marks"], steps["cursor"]):
        assert 0 < cursor < width
        assert all(0 < x < width and 0 < y < height for x, y in marks)
    # Shown text is whole: readouts change with the slider.
    assert len({tuple(r) for r in steps["readouts"]}) > 1


@pytest.mark.parametrize("kind", ["workshop", "request", "batching"])
def test_fragment_needs_nothing_from_the_network(charts, kind):
    chart = charts[kind]
    assert re.findall(r"https?://[^\s\"']+", chart) == ["http://www.w3.org/2000/svg"]
    assert "<script src" not in chart


def test_a_chart_displays_as_html_in_a_notebook(charts):
    chart = charts["batching"]
    assert chart._repr_html_() == str(chart)
    assert HTML(chart).data == str(chart)
    assert repr(chart) == "<chart: 50 steps, showing 32 users>"


def test_slider_steps_are_log_spaced_whole_numbers_holding_the_doublings_the_end_and_the_default():
    assert webcharts.slider_steps(1, 1000, 1, 7).tolist() == [1, 2, 4, 7, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert webcharts.slider_steps(1, 16, 2, 16).tolist() == [1, 2, 3, 4, 6, 8, 11, 16]
    assert webcharts.slider_steps(3, 12, 1, 3).tolist() == [3, 6, 12]


@pytest.mark.parametrize("call, error, message", [
    (lambda: webcharts.slider_steps(1, 100, 10, 200), ValueError, "default must be at most high"),
    (lambda: webcharts.slider_steps(0, 100, 10, 5), ValueError, "low must be at least 1"),
    (lambda: webcharts.slider_steps(10, 10, 10, 10), ValueError, "high must be at least 11"),
    (lambda: webcharts.slider_steps(1, 100, "ten", 5), TypeError, "per_doubling"),
    (lambda: webcharts.workshop_chart(model="Llama 3 8B"), TypeError, "model must be a Model"),
    (lambda: webcharts.batching_chart(price_per_hour=-1), ValueError, "price_per_hour must be at least 0"),
    (lambda: webcharts.request_chart(reply_tokens=0), ValueError, "reply_tokens must be at least 1"),
    (lambda: webcharts.batching_chart().step("33 users"), ValueError, "value must be one of the chart's steps"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
