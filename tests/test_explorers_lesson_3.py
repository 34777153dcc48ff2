"""Lesson 3's explorers and plate XXIII.4's: their readouts are servingmath.load's figures, at every setting."""
import re

from servingmath import load, units
from servingmath.explorers import lesson_3
from servingmath.explorers import clock


def texts(svg):
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_paging_reads_the_simulated_shares_and_users():
    made = lesson_3.paging()
    seen = load.paged_against_reserved(10)
    shown = made.readouts_at()
    assert shown["most users at once, paged / reserved"] == \
        f"{units.number(seen.paged_peak_users)} / {units.number(seen.reserved_peak_users)}"
    # Every readout moves with the slider: a figure the rate cannot change is not offered as a readout.
    rates = made.controls[0].options
    for name in shown:
        assert len({made.readouts_at(rate=rate)[name] for rate in rates}) > 1, name
    assert (f"reserved: {units.number(seen.reserved_peak_users)} of {units.number(seen.reserved_users)}; "
            f"{units.percent(seen.reserved_share, 1)} holds tokens" in texts(made.svg_at()))
    # The rate moves the bars themselves (their lengths are the users running at once), not only their words.
    widths = [re.findall(r'<rect[^>]*width="([0-9.]+)"', made.svg_at(rate=rate))
              for rate in (made.controls[0].options[0], made.controls[0].options[-1])]
    assert widths[0] != widths[1]


def test_the_p50_tick_stands_out_of_every_bar():
    svg = lesson_3.first_token_wait().svg_at()
    # A notch in the page's colour cut into each bar (tests/test_charts.py holds its contrast on both pages).
    notches = re.findall(r'<rect[^>]*class="sm-on"[^>]*>', svg)
    assert len(notches) == 3


def test_batching_and_stall_read_the_simulator_at_every_setting():
    made = lesson_3.first_token_wait()
    for setting in made.settings():
        at = load.policies_at(setting["rate"])
        assert made.readouts_at(**setting)["static: first token p50 / p99"] == \
            f"{clock(at['static'].ttft_p50)} / {clock(at['static'].ttft_p99)}"
    stall = lesson_3.stall()
    for setting in stall.settings():
        seen = load.prefill_stall(**setting)
        assert stall.readouts_at(**setting)["longest, prompt in chunks"] == clock(seen.chunked_gap)
    live = stall.live()
    live.set(prompt_tokens=2000, step_tokens=256)
    assert live.readouts["longest, prompt prefilled whole"] == clock(load.prefill_stall(2000, 256).whole_gap)


def test_the_plate_marks_each_policy_at_the_chosen_rate():
    made = lesson_3.continuous_batching()
    curve = load.load_curve("chunked")
    k = list(load.PLATE_RATES).index(40)
    assert made.readouts_at(rate=40)["chunked prefill"].startswith(units.number(curve.tokens_per_second[k]))
    assert made.svg_at(rate=40).count("webchart-marker") == 3
    latency = lesson_3.load_latency()
    assert latency.readouts_at(policy="static", rate=60)["reply tokens a second"] == \
        units.number(load.load_curve("static").tokens_per_second[list(load.PLATE_RATES).index(60)])
