"""servingmath.checks: the feedback a student's answer gets, and that no answer makes it raise."""
import functools
import json
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import servingmath as sm
from servingmath.checks import CLOSE_FACTOR, GIB_IN_GB, RECORD_MIME, SLIPS, STATUSES, Result, check, submitted

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


@pytest.mark.parametrize("factor, name, units", [
    (2, "a factor of 2", "ms"), (0.5, "a factor of 2", "ms"), (1 / 4, "a factor of 4", "ms"),
    (8, "bits for bytes", "ms"), (1 / 8, "bits for bytes", "ms"), (100, "a percentage for a fraction", "ms"),
    (1e3, "a factor of 1,000", "ms"), (1e-3, "a factor of 1,000", "ms"), (1024, "a factor of 1,024", "GB"),
    (1e9 / 2**30, "GiB for GB", "GB"), (2**30 / 1e9, "GiB for GB", "GB"), (3600, "hours for seconds", "ms"),
    (1e-6, "a factor of a million", "ms"), (1e9, "a factor of a billion", "ms"),
    (1e-12, "a factor of a trillion", "ms"),
])
def test_usual_slips_are_named(factor, name, units):
    result = check(DECODE_MS * factor, DECODE_MS, units=units)
    assert (result.status, result.slip, result.score) == ("slip", name, 0)
    assert name in result.message
    assert ("larger" if factor > 1 else "smaller") in result.message


def test_every_slip_is_found_both_ways_where_its_units_are_in_the_problem():
    for slip in SLIPS:
        units = slip.units[0] if slip.units else ""
        assert check(100 * slip.factor, 100.0, units=units).slip == slip.name
        assert check(100 / slip.factor, 100.0, units=units).slip == slip.name


@pytest.mark.parametrize("units", ["dollars per million tokens", "tokens a second", "FLOP per byte", "passes", ""])
def test_the_gib_hint_only_where_the_problem_is_in_gigabytes(units):
    # A price 7.4 % high is close or wrong, never "GiB for GB": no gigabytes are involved.
    for answer in (3.995 * 2**30 / 1e9, 3.995 * 1e9 / 2**30):
        result = check(answer, 3.995, units=units)
        assert result.slip != "GiB for GB" and "GiB" not in result.message


def test_the_gib_hint_gives_the_true_ratio():
    weights_gb = sm.weight_bytes(sm.LLAMA_3_8B.parameters, 16) / 1e9
    result = check(sm.weight_bytes(sm.LLAMA_3_8B.parameters, 16) / 2**30, weights_gb, rel=0.01, units="GB")
    assert result.slip == "GiB for GB"
    assert "1 GiB = 2³⁰ bytes = 1.073741824 GB, about 7.4 % more" in result.message
    assert "about 7 %" not in result.message


def test_binary_prefixes_and_hours_are_named_only_for_bytes_and_times():
    assert check(1024 * 5.0, 5.0, units="GB").slip == "a factor of 1,024"
    assert check(1024 * 5.0, 5.0, units="users").slip is None
    assert check(3600 * 5.0, 5.0, units="tokens a second").slip == "hours for seconds"
    assert check(3600 * 5.0, 5.0, units="dollars per million tokens").slip is None


@pytest.mark.parametrize("answer, expected, units, shown", [
    (8 * 3600 / 0.0048, 8 * 3600 / 0.0048, "tokens an hour", "6,000,000 tokens an hour."),
    (6000.000000001, 6000.0, "tokens", "6,000 tokens."),
    (1000.4, 1000.4, "", "1,000."),
    (20.0, 20.0, "times as many", "20 times as many."),
    (4.80, 4.80, "ms", "4.8 ms."),
])
def test_whole_numbers_keep_their_trailing_zeros(answer, expected, units, shown):
    assert check(answer, expected, units=units).message == shown


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
    assert check(1001, 1000.0, rel=0).slip == "off by one"
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
    ("a100-80gb", "right"), ("A100 SXM", "right"), ("NVIDIA A100 80 GB SXM", "right"), ("a100 80gb", "right"),
    ("A100", "wrong"), ("a100 pcie", "wrong"),
    (sm.CATALOG["a100-80gb"], "right"), ("H100", "wrong"), ("l4", "wrong"), (sm.CATALOG["l4"], "wrong"),
    ("nvidia", "wrong"), ("a", "wrong"),
])
def test_a_gpu_by_key_name_or_an_unambiguous_part(answer, status):
    assert check(answer, "a100-80gb", choices=GPU_CHOICES).status == status


def test_an_ambiguous_word_says_which_answers_it_fits():
    message = check("H100", "a100-80gb", choices=GPU_CHOICES).message
    assert "fits more than one answer (h100-sxm, h100-pcie)" in message
    message = check("A100", "a100-80gb", choices=GPU_CHOICES).message
    assert "fits more than one answer (a100-80gb, a100-80gb-pcie)" in message


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


# -- every problem of the course -----------------------------------------------------
# The problems are listed by their labels, read from the solutions without running them; each notebook's checks are
# evaluated (some by the simulator) once, in the process that runs its tests, not in every process that collects them.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_exercises import check_labels, checks_in  # noqa: E402

PROBLEMS = [(path.stem, label) for path in sorted((ROOT / "solutions").glob("*.md")) for label in check_labels(path)]


@functools.lru_cache(maxsize=None)
def checks_of(notebook: str) -> dict:
    """Each check of ``notebook`` evaluated as the notebook evaluates it: label -> (expected, keyword arguments)."""
    found = {}
    for label, expected, keywords in checks_in(ROOT / "solutions" / f"{notebook}.md"):
        if label in found:
            raise ValueError(f"{notebook} checks label={label!r} twice")
        found[label] = (expected, keywords)
    return found


def course_problems():
    """Each problem's check, from solutions/: (notebook, label, expected, keyword arguments)."""
    return [(notebook, label, *checks_of(notebook)[label]) for notebook, label in PROBLEMS]


COUNTED = {"passes", "decode steps", "tokens", "users"}  # the units of an answer that is a count


def is_count(expected, keywords):
    """A whole number of passes, tokens or users. A crossing such as "the cache matches the weights
    at 15.3 users" is in the same units but is a measure, checked with a tolerance."""
    return keywords.get("units") in COUNTED and not isinstance(expected, str) and float(expected).is_integer()


def test_the_course_has_its_107_problems_and_its_counts_are_the_ones_named():
    assert len(PROBLEMS) == 107
    # The labels read without running the solutions are those of the checks they evaluate, each once.
    for notebook in {notebook for notebook, _ in PROBLEMS}:
        assert list(checks_of(notebook)) == [label for name, label in PROBLEMS if name == notebook]
    counts = {}
    for notebook, label, expected, keywords in course_problems():
        if is_count(expected, keywords):
            counts.setdefault(notebook.split("-part-")[0], []).append(label)
    assert counts == {"lesson-1": ["1.1", "1.2", "1.3", "1.5", "1.6", "2.6", "4.5", "4.6"],
                      "plate-xxiii-1": ["6", "7"],
                      "lesson-2": ["3.1", "3.3", "3.4", "3.6"],
                      "plate-xxiii-2": ["2", "4", "5"],
                      "lesson-3": ["1.5", "1.6"],
                      "lesson-4": ["3.2"]}


@pytest.mark.parametrize("notebook, label", PROBLEMS, ids=[f"{p[0]} {p[1]}" for p in PROBLEMS])
def test_every_problem_true_answer_right_counts_exact_slips_wrong(notebook, label):
    expected, keywords = checks_of(notebook)[label]
    expected = expected.item() if hasattr(expected, "item") else expected
    assert check(expected, expected, **keywords).status == "right"
    if isinstance(expected, str):
        for other in keywords.get("choices") or ():
            if other != expected:
                assert check(other, expected, **keywords).score == 0
        return
    units = keywords.get("units", "")
    if is_count(expected, keywords):
        # A count is exact, and one off is a named slip, not right.
        assert keywords.get("rel") == 0, f"{notebook} {label}: a count must be exact"
        for off in (expected - 1, expected + 1):
            result = check(off, expected, **keywords)
            assert (result.status, result.slip) == ("slip", "off by one")
    for slip in SLIPS:
        for wrong in (expected * slip.factor, expected / slip.factor):
            result = check(wrong, expected, **keywords)
            assert result.score == 0, f"{notebook} {label}: off by {slip.name} scored"
            if not slip.applies(units):
                assert result.slip != slip.name, f"{notebook} {label}: {slip.name} named where no {slip.units} are"
    if "GB" not in units:
        assert "GiB" not in check(expected * GIB_IN_GB, expected, **keywords).message


# -- in a notebook: each answer belongs to its problem -------------------------------
def run_cells(*cells):
    """Run cells as a notebook does (module level in __main__); return each cell's last check."""
    namespace = {"__name__": "__main__"}
    exec("from servingmath.checks import check, submit\nanswer = None", namespace)
    shown = []
    for source in cells:
        exec(compile(f"_shown = {source}" if source.startswith(("check(", "submit(")) else source,
                     "<cell>", "exec"), namespace)
        if source.startswith(("check(", "submit(")):
            shown.append(namespace["_shown"])
    return shown


def test_a_check_run_before_its_answer_cell_says_not_answered():
    first, = run_cells('check(answer, 1000.0, rel=0, label="n1")')
    assert first.status == "unanswered"


def test_a_skipped_answer_cell_does_not_check_the_previous_problems_answer():
    right, skipped = run_cells("answer = 1000", 'check(answer, 1000.0, rel=0, label="n2")',
                               'check(answer, 1000.0, rel=0, label="n3")')
    assert right.status == "right" and skipped.status == "unanswered"


def test_a_check_run_again_shows_the_answer_it_read():
    first, again = run_cells("answer = 999", 'check(answer, 1000.0, rel=0, label="n4")',
                             'check(answer, 1000.0, rel=0, label="n4")')
    assert first.slip == again.slip == "off by one" and again.answer == 999


def test_a_scratch_cell_that_raises_after_the_answer_keeps_it():
    def cells():
        yield "answer = 1000"
        yield "try:\n    1 / 0\nexcept ZeroDivisionError:\n    pass"
        yield 'check(answer, 1000.0, rel=0, label="n5")'
    assert run_cells(*cells())[0].status == "right"


def test_submit_records_without_judging_and_reads_each_answer_once():
    recorded, skipped, word, not_a_word = run_cells(
        "answer = 4.8", 'submit(answer, label="g1", units="ms")', 'submit(answer, label="g2", units="ms")',
        'answer = "Memory-bound"', 'submit(answer, label="g3", choices=("memory", "compute"))',
        "answer = [1]", 'submit(answer, label="g4")')
    assert (recorded.status, recorded.record["answer"], recorded.record["expected"]) == ("recorded", 4.8, None)
    assert "right" not in recorded.message.lower() and "4.8 ms" in recorded.message
    assert skipped.status == "unanswered" and word.status == "recorded"
    assert not_a_word.status == "invalid" and "one number" in not_a_word.message
    assert submitted("g1") == 4.8


def test_called_from_a_function_a_check_leaves_the_callers_names_alone():
    answer = 5.0
    assert check(answer, 5.0).status == "right" and answer == 5.0


# -- slips a problem names itself: counts no single factor describes ------------------------------
def test_a_count_problem_names_its_own_slips():
    model, gpu = sm.LLAMA_3_8B, sm.H100_SXM
    right = sm.max_batch(model, gpu, 7000, kv_bits=8)
    slips = {"a 16-bit cache": (sm.max_batch(model, gpu, 7000), "8 bits: 1 byte a value."),
             "decimal gigabytes for the memory": (sm.max_batch(model, gpu.with_changes(memory_bytes=80e9), 7000,
                                                               kv_bits=8), "80 × 2³⁰ bytes."),
             "the reserve forgotten": (sm.max_batch(model, gpu, 7000, kv_bits=8, reserve=0), "0.95 × memory.")}
    assert check(right, right, rel=0, units="users", slips=slips).status == "right"
    for name, (value, hint) in slips.items():
        assert value != right
        result = check(value, right, rel=0, units="users", slips=slips)
        assert (result.status, result.slip, result.score) == ("slip", name, 0) and hint in result.message
        assert result.record["slips"][name] == [value, hint]
    assert check(right + 1, right, rel=0, units="users", slips=slips).slip == "off by one"


def test_binary_and_decimal_gigabytes_are_told_apart_both_ways():
    room = 65.54
    smaller = check(room / GIB_IN_GB, room, units="GB")
    larger = check(room * GIB_IN_GB, room, units="GB")
    assert smaller.slip == larger.slip == "GiB for GB"
    assert "divide bytes by 10⁹, not by 2³⁰" in smaller.message
    assert "multiplied" in larger.message and "divide bytes by 10⁹" not in larger.message


@pytest.mark.parametrize("bad", [[1, 2], {"x": 1}, {"x": (1,)}, {"x": ("one", "hint")}, {1: (1, "hint")}])
def test_a_problem_with_malformed_slips_is_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        check(1, 2, slips=bad)
