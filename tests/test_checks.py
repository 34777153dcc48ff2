"""servingmath.checks: the feedback a student's answer gets, and that no answer makes it raise."""
import json
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import servingmath as sm
from servingmath.checks import CLOSE_FACTOR, RECORD_MIME, SLIPS, STATUSES, Result, check

DECODE_MS = sm.decode_step(sm.LLAMA_3_8B, sm.H100_SXM).time * 1e3  # 4.79 ms
GPU_CHOICES = {gpu.key: [gpu.name] for gpu in sm.CATALOG.values()}


# -- numbers -------------------------------------------------------------------------
def test_none_is_not_answered_yet():
    result = check(None, DECODE_MS, label="3.2", units="ms")
    assert (result.status, result.score, result.slip) == ("unanswered", 0, None)
    assert "answer = ..." in result.message


@pytest.mark.parametrize("answer", [DECODE_MS, 4.79, 4.8, np.float64(4.79), np.array(4.79), "4.79 ms", "~4.79"])
def test_right_within_the_tolerance(answer):
    result = check(answer, DECODE_MS, label="3.2", units="ms")
    assert (result.status, result.score) == ("right", 1)
    assert result.message.endswith("ms (the package's figure: 4.794 ms).") or result.message == "4.794 ms."


def test_right_shows_the_package_figure_only_when_it_differs():
    assert check(4.8, DECODE_MS, units="ms").message == "4.8 ms (the package's figure: 4.794 ms)."
    assert check(1000, 1000.0, rel=0, units="passes").message == "1,000 passes."


@pytest.mark.parametrize("factor, name", [
    (2, "a factor of 2"), (0.5, "a factor of 2"), (1 / 4, "a factor of 4"), (8, "bits for bytes"),
    (1 / 8, "bits for bytes"), (100, "a percentage for a fraction"), (1e3, "a factor of 1,000"),
    (1e-3, "a factor of 1,000"), (1024, "a factor of 1,024"), (1e9 / 2**30, "GiB for GB"),
    (2**30 / 1e9, "GiB for GB"), (3600, "hours for seconds"), (1e-6, "a factor of a million"),
    (1e9, "a factor of a billion"), (1e-12, "a factor of a trillion"),
])
def test_usual_slips_are_named(factor, name):
    result = check(DECODE_MS * factor, DECODE_MS, units="ms")
    assert (result.status, result.slip, result.score) == ("slip", name, 0)
    assert name in result.message
    assert ("larger" if factor > 1 else "smaller") in result.message


def test_every_slip_is_found_both_ways():
    for slip in SLIPS:
        assert check(100 * slip.factor, 100.0).slip == slip.name
        assert check(100 / slip.factor, 100.0).slip == slip.name


def test_milliseconds_given_for_seconds_names_the_units_slip():
    result = check(1240, sm.request(sm.LLAMA_3_8B, sm.H100_SXM, 3000, 250).total_time, units="s")
    assert result.slip == "a factor of 1,000" and "milliseconds for seconds" in result.message


def test_a_flipped_sign_is_a_slip():
    assert check(-DECODE_MS, DECODE_MS).slip == "the sign"


def test_close_is_a_little_off_and_scores_nothing():
    result = check(DECODE_MS * 1.04, DECODE_MS, rel=0.02)
    assert (result.status, result.score) == ("close", 0)
    assert "a little high" in result.message and "within 10 % of the answer but not within 2 %" in result.message
    assert "within 2.5 % of the answer but not within 0.5 %" in check(1.02, 1.0, rel=0.005).message
    assert check(DECODE_MS * 0.96, DECODE_MS).message.startswith("4.602 is a little low")
    assert check(DECODE_MS * (1 + CLOSE_FACTOR * 0.02 * 1.01), DECODE_MS, rel=0.02).status == "wrong"


def test_exact_counts_off_by_one_or_unrounded():
    assert check(999, 1000.0, rel=0).slip == "off by one"
    assert check(999.5, 1000.0, rel=0).status == "close"
    assert check(998, 1000.0, rel=0).status == "wrong"
    assert check(1000.0000000001, 1000.0, rel=0).status == "right"


NOT_A_NUMBER = [
    ("abc", "is text"), ("", "empty text"), ([4.79], "type list"), ((4.79,), "type tuple"), ({}, "type dict"),
    (np.array([4.79, 1.0]), "type ndarray"), (True, "yes or no"), (np.bool_(False), "yes or no"),
    (float("nan"), "NaN"), (float("inf"), "infinite"), ("1e999", "infinite"), (10**400, "cannot be read"),
    (10**5000, "cannot be read"), (Decimal("sNaN"), "cannot be read"), (3 + 1j, "complex"),
    (b"4.79", "type bytes"), (object(), "type object"),
]


@pytest.mark.parametrize("answer, says", NOT_A_NUMBER, ids=[says for _, says in NOT_A_NUMBER])
def test_answers_that_are_not_a_number_get_feedback(answer, says):
    result = check(answer, DECODE_MS, label="3.2")
    assert (result.status, result.score) == ("wrong", 0)
    assert says in result.message


def test_numbers_of_every_kind_are_read():
    for answer in (Fraction(1000, 1), Decimal("1000"), np.int64(1000), "1,000", "$1000", 1000):
        assert check(answer, 1000.0, rel=0).status == "right"


# -- words ---------------------------------------------------------------------------
@pytest.mark.parametrize("answer, status", [
    ("memory", "right"), ("Memory", "right"), ("MEMORY-BOUND", "right"), ("memory bound", "right"),
    ("it's memory-bound", "right"), (" memory_bound ", "right"), ("compute", "wrong"),
    ("compute-bound", "wrong"), ("bandwidth", "wrong"), ("memory and compute", "wrong"),
    ("", "unanswered"), (None, "unanswered"), (1, "wrong"), (["memory"], "wrong"),
])
def test_memory_or_compute(answer, status):
    bound = sm.prefill(sm.LLAMA_3_8B, sm.H100_SXM, 200).bound
    result = check(answer, bound, label="2.2", choices=("memory", "compute"))
    assert result.status == status and result.score == (status == "right")


def test_a_word_outside_the_choices_is_told_the_choices():
    assert 'answer one of "memory", "compute"' in check("bandwidth", "memory", choices=("memory", "compute")).message


@pytest.mark.parametrize("answer, status", [
    ("a100-80gb", "right"), ("A100", "right"), ("NVIDIA A100 80 GB SXM", "right"), ("a100 80gb", "right"),
    (sm.CATALOG["a100-80gb"], "right"), ("H100", "wrong"), ("l4", "wrong"), (sm.CATALOG["l4"], "wrong"),
    ("nvidia", "wrong"), ("a", "wrong"),
])
def test_a_gpu_by_key_name_or_an_unambiguous_part(answer, status):
    assert check(answer, "a100-80gb", choices=GPU_CHOICES).status == status


def test_an_ambiguous_word_says_which_answers_it_fits():
    message = check("H100", "a100-80gb", choices=GPU_CHOICES).message
    assert "fits more than one answer (h100-sxm, h100-pcie)" in message


def test_a_zero_dimensional_array_counts_as_what_it_holds():
    assert check(np.array("Memory"), "memory", choices=("memory", "compute")).status == "right"
    assert check(np.array(None, dtype=object), 4.79).status == "unanswered"
    assert check(np.array(4.79), np.array(4.79)).status == "right"


def test_without_choices_a_word_must_match_whole():
    assert check("memory", "memory").status == "right"
    assert check("mem", "memory").status == "wrong"


# -- display and record --------------------------------------------------------------
def test_result_shows_as_text_and_html_and_carries_the_record():
    result = check(4.79, DECODE_MS, label="3.2", units="ms")
    assert str(result) == "[3.2] ✓ Right: 4.79 ms (the package's figure: 4.794 ms)."
    assert repr(result) == str(result)
    bundle = result._repr_mimebundle_()
    assert bundle["text/plain"] == str(result)
    assert "Problem 3.2 · Right" in bundle["text/html"] and "servingmath-check-right" in bundle["text/html"]
    assert bundle[RECORD_MIME] == {"label": "3.2", "status": "right", "score": 1, "slip": None, "answer": 4.79,
                                   "expected": DECODE_MS, "rel": 0.02, "units": "ms", "choices": None}


def test_html_escapes_the_answer():
    html = check("<script>alert(1)</script>", 1.0)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_record_of_a_categorical_check_holds_its_choices():
    record = check("A100", "a100-80gb", choices=GPU_CHOICES).record
    assert record["choices"]["a100-80gb"] == ["NVIDIA A100 80 GB SXM"] and record["answer"] == "A100"


def test_checking_the_recorded_answer_again_gives_the_same_result():
    for answer in (4.79, "4.79 ms", 9.58, None, "abc", [1, 2], float("nan"), 10**400, {"a": 1}):
        first = check(answer, DECODE_MS, label="3.2", units="ms")
        again = check(first.record["answer"], DECODE_MS, label="3.2", units="ms")
        assert (again.status, again.score) == (first.status, first.score)


# -- mistakes in the problem itself raise --------------------------------------------
@pytest.mark.parametrize("expected, error", [
    (None, TypeError), (True, TypeError), (float("nan"), ValueError), (float("inf"), ValueError),
    ([1.0, 2.0], TypeError), ({"a": 1}, TypeError),
])
def test_a_bad_expected_figure_raises_naming_it(expected, error):
    with pytest.raises(error, match="expected"):
        check(1.0, expected)


def test_bad_tolerance_label_or_choices_raise():
    with pytest.raises(ValueError, match="rel"):
        check(1.0, 1.0, rel=-0.1)
    with pytest.raises(TypeError, match="rel"):
        check(1.0, 1.0, rel=[0.1])
    with pytest.raises(TypeError, match="label"):
        check(1.0, 1.0, label=3)
    with pytest.raises(ValueError, match="choices"):
        check("memory", "memory", choices=("compute",))
    with pytest.raises(TypeError, match="choices"):
        check(1.0, 1.0, choices=("compute",))
    with pytest.raises(TypeError, match="choices"):
        check("memory", "memory", choices="memory")


# -- fuzz: whatever the student's answer, feedback and never an exception ------------
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**5000),
    st.floats(allow_nan=True, allow_infinity=True), st.text(), st.binary(), st.complex_numbers(),
    st.fractions(), st.decimals(allow_nan=True, allow_infinity=True), st.just(Decimal("sNaN")),
    st.sampled_from([np.float64("nan"), np.float32(1.5), np.int64(7), np.bool_(True), np.str_("memory")]),
    st.sampled_from(list(sm.CATALOG.values())), st.just(object()), st.just(sm.LLAMA_3_8B),
)
answers = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=5), inner, max_size=3),
), max_leaves=8) | hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
numbers = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


def assert_is_feedback(result):
    assert isinstance(result, Result)
    assert result.status in STATUSES and result.score in (0, 1) and result.message
    assert str(result) and result._repr_html_().startswith("<div")
    json.dumps(result.record, allow_nan=False)  # strict JSON: what an .ipynb must hold


@settings(max_examples=200, deadline=None)
@given(answer=answers, expected=numbers, rel=st.floats(min_value=0, max_value=1))
def test_fuzz_numeric_checks_never_raise(answer, expected, rel):
    assert_is_feedback(check(answer, expected, rel=rel, label="fuzz", units="ms"))


@settings(max_examples=150, deadline=None)
@given(answer=answers | st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
       expected=st.sampled_from(["memory", "compute", "a100-80gb"]))
def test_fuzz_categorical_checks_never_raise(answer, expected):
    choices = GPU_CHOICES if expected == "a100-80gb" else ("memory", "compute")
    assert_is_feedback(check(answer, expected, label="fuzz", choices=choices))


@settings(max_examples=100, deadline=None)
@given(expected=numbers.filter(lambda value: abs(value) > 1e-200), rel=st.floats(min_value=0.001, max_value=0.2))
def test_fuzz_the_expected_figure_itself_is_right(expected, rel):
    assert check(expected, expected, rel=rel).status == "right"
    assert check(str(expected), expected, rel=rel).status == "right"
