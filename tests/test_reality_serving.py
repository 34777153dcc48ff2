"""The reality check's serving section: lesson 3's simulator against TensorRT-LLM's published
throughput for Llama 3.1 8B on one H100. A gap outside the stated band is unexplained and fails."""
import pytest

from servingmath import load, reality


def test_every_published_serving_figure_lands_in_the_explained_band():
    checks = load.serving_checks()
    assert [c.id for c in checks] == list(load.SERVING_BENCHMARKS)
    for c in checks:
        assert c.explained, f"{c.id}: published {c.published:,.0f} is {c.share:.0%} of the simulator's {c.simulated:,.0f}"
    # As the page prints them.
    assert [round(c.share, 2) for c in checks] == [0.77, 0.84, 0.86]


def test_the_rows_are_the_published_ones():
    rows = {m.id: m for m in reality.load()}
    assert [rows[i].value for i in load.SERVING_BENCHMARKS] == [28312, 3450, 15220]
    assert {rows[i].source for i in load.SERVING_BENCHMARKS} == {rows[load.SERVING_BENCHMARKS[0]].source}


def test_a_misread_row_falls_outside_the_band():
    # Read as if its weights were 16-bit (the FP8 row simulated in 16 bits), the engine would beat the simulator.
    c = load.serving_check(load.SERVING_BENCHMARKS[0])
    sixteen = load.ServingCheck(c.id, c.label, c.prompt_tokens, c.reply_tokens, c.published, c.simulated / 1.6)
    assert not sixteen.explained
    with pytest.raises(ValueError, match="measurement_id must be one of"):
        load.serving_check("no-such-row")
