"""Lesson 1, parts 1 and 2: counting passes, and FLOP per byte against the ridge.

The explorers are driven headless as a reader's clicks would drive them; the figures
are checked for the marks that carry the idea.
"""
import pytest

import servingmath as sm
from servingmath import units
from servingmath.serving import TOKENS_PER_DECODE_PASS, request_passes

M, H100 = sm.LLAMA_3_8B, sm.H100_SXM


# -- the package: a request counted in passes -----------------------------------------
def test_example_1_1_counted():
    counted = request_passes(2000, 300)
    assert counted.passes == 300
    assert counted.prefill_tokens == 2000
    assert counted.decode_passes == 299
    assert units.percent(counted.decode_share_of_passes, 1) == "99.7 %"


def test_your_turn_1_counted():
    assert request_passes(500, 1000).passes == 1000


def test_a_longer_prompt_adds_no_passes_and_a_longer_reply_adds_one_each():
    assert request_passes(7000, 300).passes == request_passes(1, 300).passes == 300
    assert request_passes(2000, 301).passes - request_passes(2000, 300).passes == 1


def test_a_one_token_reply_is_prefill_alone():
    counted = request_passes(2000, 1)
    assert (counted.passes, counted.decode_passes, counted.decode_share_of_passes) == (1, 0, 0)


def test_summary_is_mostly_prefill_story_mostly_decode():
    assert units.percent(request_passes(8000, 100).prefill_share_of_tokens, 1) == "98.8 %"
    assert units.percent(request_passes(20, 2000).prefill_share_of_tokens, 1) == "1.0 %"


def test_request_passes_sweeps_arrays():
    counted = request_passes(2000, [1, 300, 1000])
    assert list(counted.passes) == [1, 300, 1000]
    assert list(counted.decode_passes) == [0, 299, 999]


@pytest.mark.parametrize("prompt, reply, error, argument", [
    (0, 300, ValueError, "prompt_tokens"),
    (2000, 0, ValueError, "reply_tokens"),
    (2000, 2.5, ValueError, "reply_tokens"),
    ("2000", 300, TypeError, "prompt_tokens"),
    (2000, None, TypeError, "reply_tokens"),
])
def test_request_passes_refuses_bad_input_by_name(prompt, reply, error, argument):
    with pytest.raises(error, match=argument):
        request_passes(prompt, reply)
