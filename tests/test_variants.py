"""Each student's own numbers: every template over a thousand students, the graded notebook showing them.

The grader's expected answers (scripts/variant_answers.py) are computed with the package from the
numbers ``servingmath.variants`` draws; a draw must be a case that can happen (within the model's
window, weights and caches fitting the GPU the question runs them on).
"""
import math
import re
import sys
from collections import Counter
from pathlib import Path

import jupytext
import pytest

import servingmath as sm
from servingmath import variants
from servingmath.hardware import CATALOG

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import grade  # noqa: E402
import variant_answers  # noqa: E402

STUDENTS = [f"S{number:04d}" for number in range(1000)]


def test_every_template_has_an_answer_and_every_answer_a_template():
    assert {name: set(template.statements) for name, template in variants.TEMPLATES.items()} == {
        name: set(answers) for name, answers in variant_answers.ANSWERS.items()}


@pytest.fixture(scope="module", params=sorted(variants.TEMPLATES))
def thousand(request):
    """One notebook's variants for a thousand students: each one's numbers and answers, checked for sense."""
    name = request.param
    answers = {label: [] for label in variants.TEMPLATES[name].statements}
    for student in STUDENTS:
        drawn = variants.numbers(name, student)
        assert variants.sense(name, drawn) == [], (student, drawn)
        for label in answers:
            text = variants.statement(name, label, student)
            assert "{" not in text and "}" not in text
            answers[label].append(variant_answers.expected(name, label, student))
    return name, answers


def test_a_thousand_students_each_get_a_case_that_can_happen(thousand):
    name, answers = thousand
    for label, values in answers.items():
        for value in values:
            if isinstance(value, str):
                assert value in ("memory", "compute") or value in CATALOG or value in variants.CUT_WORDS.values(), (label, value)
            else:
                assert math.isfinite(value) and value > 0, (name, label, value)


def test_classmates_rarely_share_an_answer(thousand):
    """No answer for more than half the class (tests/test_answer_leak.py holds each to 5 % of pairs)."""
    name, answers = thousand
    for label, values in answers.items():
        counts = Counter(values)
        if isinstance(values[0], str):
            # A word to choose: each choice comes up, none for nearly everyone.
            assert len(counts) >= 2 and max(counts.values()) < 0.9 * len(STUDENTS), (label, counts)
        else:
            assert len(counts) >= 2 and max(counts.values()) <= 0.5 * len(STUDENTS), (label, counts.most_common(3))


def test_a_draw_past_the_window_or_the_memory_is_called_out():
    drawn = variants.numbers("lesson-1-part-1", "S1")
    assert variants.sense("lesson-1-part-1", {**drawn, "prompt": 8000, "reply": 500}) == [
        "prompt + reply = 8,500 tokens is past Llama 3 8B's window of 8,192"]
    drawn = variants.numbers("lesson-1-part-3", "S1")
    assert "does not fit" in variants.sense("lesson-1-part-3", {**drawn, "big_model": "llama-3-70b", "big_gpu": "l4"})[0]
    # Problem 3.6 at 150 tokens a second: the H100 SXM and the MI300X both rent for $3 an hour.
    assert variants.sense("lesson-1-part-3", {**drawn, "speed": 150}) == [
        "h100-sxm and mi300x rent for the same least price at 150 tokens a second"]
    assert variants.sense("lesson-1-part-3", {**drawn, "speed": 250}) == []
    drawn = variants.numbers("lesson-3-part-1", "S1")
    assert variants.sense("lesson-3-part-1", {**drawn, "tokens": 1024}) == ["1,024 tokens fill their last block"]
    assert variants.sense("lesson-3-part-1", {**drawn, "prompt": 7500, "cap": 1024, "reply": 300}) == [
        "prompt + cap = 8,524 tokens is past Llama 3 8B's window of 8,192"]


def test_lesson_3_part_4_calls_out_a_knee_rate_that_is_not_past_the_knee():
    drawn = variants.numbers("lesson-3-part-4", "S1")
    assert variants.sense("lesson-3-part-4", {**drawn, "knee_rate": 20}) == ["20 is not past the knee"]


def test_a_class_of_a_thousand_is_kept_in_every_notebook():
    """The grader and these tests ask for each student's numbers notebook after notebook: the cache holds them all."""
    assert variants._numbers.cache_info().maxsize >= len(STUDENTS) * len(variants.TEMPLATES)


def test_the_seed_is_the_notebook_and_the_id_and_nothing_else():
    assert variants.numbers("lesson-1-part-1", " s1 ") == variants.numbers("lesson-1-part-1", "S1")
    assert variants.numbers("lesson-1-part-1", "S1") != variants.numbers("lesson-1-part-1", "S2")
    assert variants.seed("lesson-1-part-1", "S1") != variants.seed("lesson-1-part-2", "S1")
    with pytest.raises(ValueError, match="student_id is empty"):
        variants.numbers("lesson-1-part-1", "  ")
    with pytest.raises(TypeError, match="student_id must be your student ID as text"):
        variants.student_key(None)


def test_the_practice_release_and_the_solutions_keep_their_fixed_numbers():
    for folder in ("exercises", "solutions"):
        text = (ROOT / folder / "lesson-1-part-1.md").read_text(encoding="utf-8")
        assert "800-token prompt" in text and "sheet(" not in text and "mine.show" not in text
    graded = (ROOT / "exercises" / "graded" / "lesson-1-part-1.md").read_text(encoding="utf-8")
    assert "800-token prompt" not in graded and graded.count("mine.show(") == 6


def test_the_graded_notebook_shows_the_students_own_numbers_and_whose_they_are(tmp_path):
    notebook = jupytext.read(ROOT / "exercises" / "graded" / "lesson-1-part-1.md")
    setup = next(cell for cell in notebook.cells if 'STUDENT_ID = ""' in cell.source)
    setup.source = setup.source.replace('STUDENT_ID = ""', 'STUDENT_ID = "S1001"')
    jupytext.write(notebook, tmp_path / "mine.ipynb")
    ran = grade.run_notebook(tmp_path / "mine.ipynb", 60)
    assert ran.problems == [] and ran.shown_ids == ["s1001"]
    blank = grade.run_notebook(ROOT / "exercises" / "graded" / "lesson-1-part-1.md", 60)
    assert blank.problems == [] and blank.shown_ids == []
    shown = variants.Sheet("lesson-1-part-1", "S1001").text("1.1")
    drawn = variants.numbers("lesson-1-part-1", "S1001")
    assert shown.startswith("*Student S1001's numbers:* Someone sends a ") and f"{drawn['prompt']:,}-token" in shown
    assert variants.Sheet("lesson-1-part-1", "").text("1.1").startswith("**Your numbers are not shown yet:** "
                                                                        "student_id is empty")


def test_variant_answers_agree_with_the_worked_arithmetic():
    """The grader's answers, against the solutions' own working done by hand on each student's numbers."""
    from servingmath.models import MODELS

    for student in STUDENTS[:200]:
        n = variants.numbers("lesson-1-part-1", student)
        by_hand = {"1.1": n["reply"], "1.2": n["reply"] - 1, "1.3": n["summary"], "1.4": n["story"] / n["summary"],
                   "1.5": n["requests"] * n["day_reply"],
                   "1.6": n["requests"] * (n["day_prompt"] + n["day_reply"] - 1)}
        for label, value in by_hand.items():
            assert variant_answers.expected("lesson-1-part-1", label, student) == pytest.approx(value, rel=1e-12)
        n = variants.numbers("lesson-1-part-2", student)
        assert variant_answers.expected("lesson-1-part-2", "2.3", student) == pytest.approx(
            MODELS[n["model"]].parameters * n["bits"] / 8 / 1e9, rel=1e-12)
        gpu = CATALOG[n["ridge_gpu"]]
        # The FLOPs done at the reached rate in the time one read of Llama 3 8B's 16-bit weights takes.
        read = MODELS["llama-3-8b"].parameters * 2 / (gpu.memory_bandwidth * n["ridge_memory"] / 100)
        assert variant_answers.expected("lesson-1-part-2", "2.4", student) == pytest.approx(
            gpu.peak_flops * n["ridge_compute"] / 100 * read, rel=1e-12)
        # Problem 4.6: compute-bound past the reached ridge scaled by the weights' bits (16-bit arithmetic).
        n = variants.numbers("lesson-1-part-4", student)
        gpu = CATALOG[n["flip_gpu"]]
        past = gpu.peak_flops * n["flip_compute"] / (gpu.memory_bandwidth * n["flip_memory"]) * n["flip_bits"] / 16
        assert variant_answers.expected("lesson-1-part-4", "4.6", student) == math.floor(past) + 1
        n = variants.numbers("lesson-2-part-2", student)
        model = MODELS[n["small"]]
        assert variant_answers.expected("lesson-2-part-2", "2.1", student) == pytest.approx(
            2 * model.layers * model.kv_heads * model.head_dim * n["small_bits"] / 8, rel=1e-12)


def test_lesson_4_part_1_cache_problem_draws_only_caches_kept_per_kv_head():
    """Problem 1.4's worked method (copies = max(1, GPUs ÷ KV heads)) holds for every case drawn: no latent attention,
    and a model with sliding windows asked for a token within every layer's window."""
    from servingmath.models import MODELS

    assert variants.kv_cases() and not any(MODELS[key].latent_attention for key, _ in variants.kv_cases())
    for student in STUDENTS[:200]:
        n = variants.numbers("lesson-4-part-1", student)
        model = MODELS[n["kv_model"]]
        by_hand = model.kv_bytes_per_token(n["kv_bits"]) * max(1, n["kv_gpus"] // model.kv_heads) / n["kv_gpus"]
        assert variant_answers.expected("lesson-4-part-1", "1.4", student) == pytest.approx(by_hand, rel=1e-12)
        # every layer counted: for a sliding window's layers, the statement asks for a token within the window
        said = variants.statement("lesson-4-part-1", "1.4", student)
        assert said.endswith("within every layer's sliding window?" if model.sliding_layers else "a user holds?")


def test_lesson_4_part_2_stage_weights_agree_with_the_worked_method():
    """Problem 2.2's worked method (the layers as vLLM splits them, an equal share each, the input table on the first
    stage, the output head and final norm on the last, the fullest stage's) holds for every case drawn: none tied."""
    from servingmath import parallel
    from servingmath.models import MODELS

    assert variants._stage_splits() and not any(MODELS[key].tied_embeddings for key, _, _ in variants._stage_splits())
    for student in STUDENTS[:200]:
        n = variants.numbers("lesson-4-part-2", student)
        model = MODELS[n["split"]]
        table = model.vocab * model.hidden
        layer = (model.parameters - 2 * table - model.hidden) / model.layers
        held = [count * layer for count in parallel.stage_split(model, n["parts"])]
        held[0] += table
        held[-1] += table + model.hidden
        by_hand = max(held) * n["split_bits"] / 8 / 1e9
        assert variant_answers.expected("lesson-4-part-2", "2.2", student) == pytest.approx(by_hand, rel=1e-12)


def test_lesson_4_part_4_split_answers_agree_with_the_worked_method():
    """Problems 4.3 and 4.4 by hand (every split tried, the slower stage's rate), and 4.1's trip as latency +
    bytes ÷ bandwidth, for every student drawn."""
    from servingmath import hardware
    from servingmath.memory import kv_cache_bytes
    from servingmath.models import MODELS

    for student in STUDENTS[:200]:
        n = variants.numbers("lesson-4-part-4", student)
        served = {p: min(p * n["p_rate"], (n["pool"] - p) * n["d_rate"]) for p in range(1, n["pool"])}
        best = max(served, key=lambda p: (served[p], -p))
        assert variant_answers.expected("lesson-4-part-4", "4.3", student) == served[best]
        assert variant_answers.expected("lesson-4-part-4", "4.4", student) == pytest.approx(
            served[best] / n["pool"] / n["colo_rate"])
        link = hardware.link("h100-sxm", n["t_link"])
        trip = link.latency + kv_cache_bytes(MODELS[n["t_model"]], n["t_prompt"]) / link.bandwidth
        assert variant_answers.expected("lesson-4-part-4", "4.1", student) == pytest.approx(trip * 1e3, rel=1e-12)
        # The page's formula, KV bytes a token × the prompt, is the cache the check counts (no sliding window).
        model = MODELS[n["t_model"]]
        assert kv_cache_bytes(model, n["t_prompt"]) == pytest.approx(model.kv_bytes_per_token(16) * n["t_prompt"])


def test_lesson_4_part_4_draws_no_case_that_cannot_happen_nor_one_the_page_works():
    """Over 5,000 raw draws: one GPU doing both phases serves fewer requests a second than either stage's GPU, and
    no problem repeats a case Part 4 works (its 2,000-token trip and prefill of Llama 3 8B, its Your turn)."""
    import random

    template = variants.TEMPLATES["lesson-4-part-4"]
    for k in range(5000):
        n = template.draw(random.Random(k))
        assert 0.5 <= n["colo_rate"] < min(n["p_rate"], n["d_rate"]), n
        assert template.sense(n) == [], n
    practice = variants.practice("lesson-4-part-4")
    assert variants.sense("lesson-4-part-4", {**practice, "colo_rate": 4.0}) == [
        "colo_rate 4.0 is not below min(p_rate, d_rate) = 4.0"]
    assert variants.sense("lesson-4-part-4", {**practice, "t_model": "llama-3-8b", "t_prompt": 2000,
                                               "pf_model": "llama-3-8b", "pf_gpu": "h100-sxm", "pf_prompt": 2000,
                                               "s_prompt": 12000, "s_ttft": 1000}) == [
        "4.1's llama-3-8b at 2,000 tokens is the page's trip", "4.2's llama-3-8b on h100-sxm at 2,000 tokens is the page's prefill",
        "4.5's llama-3.3-70b at 12,000 tokens is the Your turn's trip"]
    # The page prints the trip itself: against any other target, over RoCE or InfiniBand alike, the answer is one
    # division from it.
    assert variants.sense("lesson-4-part-4", {**practice, "s_prompt": 12000, "s_ttft": 700,
                                               "s_link": "infiniband-ndr"}) == [
        "4.5's llama-3.3-70b at 12,000 tokens is the Your turn's trip"]


def test_lesson_4_part_4_trips_cross_between_two_gpus_each_holding_its_model_whole():
    """Problem 4.1's models: none keeps a sliding window, and each fits one H100 SXM in 16 bits with a full cache."""
    from servingmath import parallel
    from servingmath.models import MODELS

    for key in variants.TRIP_MODELS:
        model = MODELS[key]
        assert model.sliding_window == 0, key
        assert parallel.fit(model, parallel.group("h100-sxm", 1), min(32000, model.context_window)).fits, key


def test_lesson_4_part_4_first_token_targets_are_ones_the_prefill_can_meet():
    """Problem 4.5 names a target that the prompt's prefill, on the GPUs that hold the model, meets alone; the
    practice too. The trip is the share asked."""
    from servingmath import parallel
    from servingmath.models import MODELS

    drawn = [variants.practice("lesson-4-part-4")] + [variants.numbers("lesson-4-part-4", s) for s in STUDENTS[:200]]
    for n in drawn:
        group = parallel.group("h100-sxm", variants.LONG_GROUP, "nvlink4")
        prefill = parallel.tensor_parallel_step(MODELS[n["s_model"]], group, new_tokens=n["s_prompt"]).time
        assert prefill < n["s_ttft"] / 1e3 and variants.long_prefill(n["s_model"], n["s_prompt"]) == prefill, n
        assert n["s_prompt"] < MODELS[n["s_model"]].context_window
    assert len({n["s_model"] for n in drawn}) == len(variants.LONG_MODELS)


def test_lesson_4_part_4_prefill_is_timed_as_the_lesson_times_it():
    """Problem 4.2's answer is Part 1's step with attention counted, as its statement names it."""
    from servingmath import parallel

    for student in STUDENTS[:50]:
        n = variants.numbers("lesson-4-part-4", student)
        step = parallel.tensor_parallel_step(sm.MODELS[n["pf_model"]], parallel.group(sm.CATALOG[n["pf_gpu"]]),
                                             new_tokens=n["pf_prompt"])
        assert variant_answers.expected("lesson-4-part-4", "4.2", student) == pytest.approx(1 / step.time, rel=1e-12)
    assert "parallel.tensor_parallel_step(" in variants.fill("lesson-4-part-4", "4.2", variants.practice("lesson-4-part-4"))


# Lesson 3's grader answers against the solutions' working by hand, a test for each notebook, so that each runs in
# the process that draws that notebook's class (tests/conftest.py) and no process draws a class another has drawn.
PER_TOKEN = sm.LLAMA_3_8B.kv_bytes_per_token()


def test_lesson_3_part_1_answers_agree_with_the_worked_arithmetic():
    """Blocks of 16 and the cache blocks that fit, worked by hand."""
    from servingmath.simulator import Server

    for student in STUDENTS[:200]:
        n = variants.numbers("lesson-3-part-1", student)
        gpu = CATALOG[n["gpu"]]
        room = gpu.memory_bytes * (1 - n["reserve"]) - sm.LLAMA_3_8B.parameters * n["bits"] / 8
        blocks = Server(sm.LLAMA_3_8B, gpu, weight_bits=n["bits"], reserve=n["reserve"]).cache_blocks
        assert blocks == math.floor(room / (16 * PER_TOKEN))
        by_hand = {"1.1": 100 * (n["prompt"] + n["reply"]) / (n["prompt"] + n["cap"]),
                   "1.2": math.ceil(n["tokens"] / 16),
                   "1.3": 100 * (math.ceil(n["tokens"] / 16) * 16 - n["tokens"]) / (math.ceil(n["tokens"] / 16) * 16),
                   "1.5": blocks // (8192 // 16), "1.6": blocks // math.ceil((n["prompt"] + n["reply"]) / 16)}
        for label, value in by_hand.items():
            assert variant_answers.expected("lesson-3-part-1", label, student) == pytest.approx(value, rel=1e-12)


def test_lesson_3_part_3_answers_agree_with_the_worked_arithmetic():
    """A cache's bytes and its copy to the host, and a chunked prompt's first token at the end of the step that
    reads its last chunk."""
    from servingmath.simulator import Server, simulate
    from servingmath.workload import workload

    for student in STUDENTS[:200]:
        n = variants.numbers("lesson-3-part-3", student)
        assert variant_answers.expected("lesson-3-part-3", "3.4", student) == pytest.approx(
            n["swap_tokens"] * PER_TOKEN / 1e6, rel=1e-12)
        assert variant_answers.expected("lesson-3-part-3", "3.5", student) == pytest.approx(
            n["swap_tokens"] * PER_TOKEN / 32e9 * 1e3, rel=1e-12)
    for student in STUDENTS[:50]:
        n = variants.numbers("lesson-3-part-3", student)
        run = simulate(Server(sm.LLAMA_3_8B, CATALOG[n["gpu"]], policy="chunked", step_tokens=n["steps_budget"]),
                       workload([0.0, 0.0], [1, n["steps_prompt"]], [2000, 1]))
        step = math.ceil(n["steps_prompt"] / (n["steps_budget"] - 1))
        assert run.first_token[1] == run.step_end[step - 1]
        assert variant_answers.expected("lesson-3-part-3", "3.2", student) == pytest.approx(
            run.step_end[step - 1] * 1e3, rel=1e-12)


def test_lesson_3_part_2_answers_agree_with_the_worked_arithmetic():
    """B arrives during A's prefill and joins the next step, beside A's first decode (Example 2.1's timing)."""
    from servingmath.simulator import Server, StepClock

    for student in STUDENTS[:50]:
        n = variants.numbers("lesson-3-part-2", student)
        prefill = sm.prefill(sm.LLAMA_3_8B, sm.H100_SXM, n["a_prompt"], assumptions=sm.PLATE).time
        assert prefill > 0.001
        joined = StepClock(Server(sm.LLAMA_3_8B, sm.H100_SXM)).check([n["a_prompt"]], [(n["b_prompt"], 0)])
        assert variant_answers.expected("lesson-3-part-2", "2.3", student) == pytest.approx(
            (prefill + joined) * 1e3, rel=1e-9)


def test_lesson_3_part_4_answers_agree_with_the_worked_arithmetic():
    """The GPUs a rate needs: the rate over one GPU's goodput, rounded up."""
    for student in STUDENTS[:50]:
        n = variants.numbers("lesson-3-part-4", student)
        rate = variant_answers.expected("lesson-3-part-4", "4.2", student)
        assert variant_answers.expected("lesson-3-part-4", "4.3", student) == math.ceil(n["many"] / rate)


# -- the templates against the solutions ----------------------------------------------------
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402

RUBRICS = sorted((ROOT / "grading").glob("rubric*.yml"))
PLACE = re.compile(r"\{(\w+)(?::(\w))?\}")


def graded_notebooks() -> list[str]:
    """Every notebook a rubric of the course grades."""
    return sorted({name for rubric in RUBRICS for name in make_exercises.rubric_points(rubric)})


def solution_statements(notebook: str) -> dict[str, str]:
    """Each problem's statement in the worked solution, its whitespace run together: label -> text."""
    text = (ROOT / "solutions" / f"{notebook}.md").read_text(encoding="utf-8")
    return {match.group(2): " ".join(match.group(3).split()) for match in make_exercises.PROBLEM.finditer(text)}


def test_every_graded_problem_has_a_template_and_an_answer():
    assert RUBRICS and graded_notebooks()
    for name in graded_notebooks():
        labels = set(solution_statements(name))
        assert labels, name
        assert labels == set(variants.TEMPLATES[name].statements), name
        assert labels == set(variant_answers.ANSWERS[name]), name


@pytest.mark.parametrize("name", sorted(variants.TEMPLATES))
def test_each_template_is_the_solutions_statement_with_the_practice_numbers_in_their_places(name):
    """A student sees the problem the solution states, word for word, with their own numbers in the places."""
    practice = variants.practice(name)
    assert variants.sense(name, practice) == []
    statements = solution_statements(name)
    for label, template in variants.TEMPLATES[name].statements.items():
        places = list(PLACE.finditer(template))
        pattern, at = "", 0
        for place in places:
            pattern += re.escape(template[at:place.start()]) + "(.+?)"
            at = place.end()
        match = re.fullmatch(pattern + re.escape(template[at:]), statements[label])
        assert match, (name, label, statements[label], variants.fill(name, label, practice))
        for place, found in zip(places, match.groups()):
            key = place.group(1)
            shown = ("{" + key + (":" + place.group(2) if place.group(2) else "") + "}").format_map(
                {key: variants._placed(practice[key])})
            if key.endswith("_named"):
                # The solution may name the GPU or model more shortly, or give its key in the catalog.
                value = practice[key[: -len("_named")]]
                named = CATALOG[value].name if value in CATALOG else variants.MODELS[value].name
                assert f'["{value}"]' in found or found in named, (name, label, key, found)
            else:
                assert found == shown, (name, label, key, found, shown)
        assert variants.fill(name, label, practice) == statements[label] or any(
            place.group(1).endswith("_named") for place in places), (name, label)


def solution_expected(name: str) -> dict[str, object]:
    """Each check's expected answer, as the worked solution's check cells compute it."""
    notebook = jupytext.read(ROOT / "solutions" / f"{name}.md")
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    found = {}

    def check(answer, expected, *, label, slips=None, **_):
        found[label] = expected
        found[label, "slips"] = {name: entry[0] for name, entry in (slips or {}).items()}

    space = {}
    exec(code[0], space)
    space["check"], space["answer"] = check, None
    for source in code[1:]:
        if "check(answer, " in source:
            exec(source, space)
    return found


@pytest.mark.parametrize("name", sorted(variants.TEMPLATES))
def test_the_graders_answer_to_the_practice_numbers_is_the_solutions(name):
    expected = solution_expected(name)
    practice = variants.practice(name)
    for label, answer in variant_answers.ANSWERS[name].items():
        ours, theirs = answer(practice), expected[label]
        if isinstance(theirs, str):
            assert ours == theirs, (name, label)
        else:
            assert float(ours) == pytest.approx(float(theirs), rel=1e-9), (name, label)


@pytest.mark.parametrize("name", sorted(variants.TEMPLATES))
def test_a_problems_own_slips_for_the_practice_numbers_are_the_solutions(name):
    """The slips a solution names (a 16-bit cache, decimal gigabytes...) are named for each student's numbers too."""
    expected = solution_expected(name)
    practice = variants.practice(name)
    for label in variants.TEMPLATES[name].statements:
        ours = variant_answers.SLIPS.get((name, label))
        ours = {} if ours is None else {slip: value for slip, (value, _) in ours(practice).items()}
        assert ours == pytest.approx(expected[label, "slips"], rel=1e-12), (name, label)
    for student in STUDENTS[:50]:
        for label in variants.TEMPLATES[name].statements:
            slips = variant_answers.slips(name, label, student) or {}
            right = variant_answers.expected(name, label, student)
            # A slip that gives the right answer would take a right answer for a slip.
            assert all(value != right for value, _ in slips.values()), (name, label, student, slips)


@pytest.mark.parametrize("name", sorted(variants.TEMPLATES))
def test_the_graded_release_shows_each_templated_problem_with_the_students_numbers(name):
    text = (ROOT / "exercises" / "graded" / f"{name}.md").read_text(encoding="utf-8")
    assert f"mine = sheet({name!r}, STUDENT_ID)" in text
    for label, statement in solution_statements(name).items():
        assert f'mine.show("{label}")' in text, (name, label)
        # The fixed numbers' statement is gone from the graded release: only the student's are shown.
        assert statement not in " ".join(text.split()), (name, label)


# -- no student's draw is a case its lesson page works out ----------------------------------------
def test_no_student_is_set_a_case_whose_answer_the_page_prints():
    """A graded problem drawn onto the page's own example or Your turn would find its answer printed above
    it: the Your turn's 8-bit weights (417 tokens a second), Example 3.1's 3,000-token prompt (49 ms), the
    eight users of Part 4's Your turn ($0.499), the plate's 1,000-token cache (6.24 ms) and its H100
    (compute-bound from 222 tokens). No list keeps the draws off them: ``variants`` draws again while the
    pages give an answer away (tests/test_answer_leak.py holds every problem to it)."""
    from servingmath import units

    page = {("lesson-1-part-3", "3.1"): units.number(1 / sm.decode_step(sm.LLAMA_3_8B, sm.H100_SXM, weight_bits=8).time),
            ("lesson-1-part-3", "3.2"): units.ms(sm.prefill(sm.LLAMA_3_8B, sm.H100_SXM, 3000).time, 0),
            ("lesson-1-part-4", "4.1"): units.dollars(sm.batching(sm.LLAMA_3_8B, sm.H100_SXM, 8).cost_per_million_tokens, 3),
            ("plate-xxiii-1", "1"): units.ms(sm.decode_step(sm.LLAMA_3_8B, sm.H100_SXM, 1000, assumptions=sm.PLATE).time),
            ("plate-xxiii-1", "7"): units.number(sm.time_per_token_curve(sm.LLAMA_3_8B, sm.H100_SXM).arithmetic_from)}
    assert list(page.values()) == ["417", "49 ms", "$0.499", "6.24 ms", "222"]
    written = {"3.1": units.number, "3.2": lambda v: units.ms(v / 1e3, 0), "4.1": lambda v: units.dollars(v, 3),
               "1": lambda v: units.ms(v / 1e3), "7": units.number}
    for (name, label), figure in page.items():
        for student in STUDENTS:
            assert written[label](variant_answers.expected(name, label, student)) != figure, (name, label, student)


def test_no_lesson_4_part_2_draw_uses_the_pages_and_explorers_cached_tokens():
    """Parts 1 and 2 and their explorers fix every user's cache at 1,000 tokens and print or read out the step for
    it: a graded 2.1, 2.4 or 2.5 drawn at that cache could be read off the page (2.4's four stages of four
    micro-batches of 64 users is the page's 5,152 tokens a second)."""
    from servingmath.explorers import lesson_4

    assert variants.CACHED_SHOWN == lesson_4.CACHED == 1000
    for student in STUDENTS:
        n = variants.numbers("lesson-4-part-2", student)
        assert variants.CACHED_SHOWN not in (n["context"], n["flight_context"], n["cmp_context"]), student


def test_lesson_4_part_3_statements_count_one_copy_in_the_singular():
    """A group of eight GPUs is one copy: no statement reads "1 copies"."""
    assert (variants._copies(1), variants._copies(4)) == ("1 copy", "4 copies")
    for student in STUDENTS[:300]:
        for label in variants.TEMPLATES["lesson-4-part-3"].statements:
            assert "1 copies" not in variants.statement("lesson-4-part-3", label, student), (student, label)


def test_no_lesson_4_part_1_draw_is_one_division_from_a_page_or_an_explorer_readout():
    """Part 1's explorer prints each GPU's weights for its models (Example 1.1's table those of Llama 3 70B; in 8 bits
    a share is the 16-bit share on twice the GPUs); the explorers read out all of a step's all-reduces (160 of them)
    for batches up to 256; Part 1 prints Llama 3 70B's cache a token and lesson 2 Llama 3 8B's; Part 1's step and
    Your turn use 1,000 cached tokens."""
    from servingmath.explorers import lesson_4

    assert variants.SHOWN_BATCH == max(lesson_4.BATCHES) == max(lesson_4.FINE_BATCHES)
    assert {key for key, _, _ in variants._splits()}.isdisjoint(lesson_4.MODELS_SHOWN)
    for student in STUDENTS:
        one = variants.numbers("lesson-4-part-1", student)
        assert variants.CACHED_SHOWN not in (one["context"], one["small_context"]), student
        assert one["ar_batch"] > variants.SHOWN_BATCH, student


def test_no_lesson_4_part_2_draw_sends_for_a_batch_the_explorers_read_out():
    """Part 2's explorers read out the sends between stages for batches up to 256: a graded send is drawn past them."""
    from servingmath.explorers import lesson_4

    assert variants.SHOWN_BATCH == max(lesson_4.BATCHES) == max(lesson_4.FINE_BATCHES)
    for student in STUDENTS:
        assert variants.numbers("lesson-4-part-2", student)["send_users"] > variants.SHOWN_BATCH, student


def test_no_lesson_4_part_1_cache_problem_draws_a_model_whose_cache_a_token_a_page_prints():
    """Problem 1.4's answer is a model's cache a token over its GPUs' share: a model whose cache a token (in the bits
    drawn) lesson 2's or Lesson 4's pages print, in bytes or KiB, is one division from it (Llama 3.3 70B's 327,680
    bytes are Llama 3 70B's on Part 1, Mistral 7B's 131,072 Llama 3 8B's on lesson 2)."""
    import json

    from servingmath.leaks import figures
    from servingmath.models import MODELS

    pages = json.loads((ROOT / "src" / "servingmath" / "data" / "leaks.yaml").read_text(encoding="utf-8"))["lessons"]
    printed = {value * size for lesson in ("lesson-2", "lesson-4") for text in pages[lesson].values()
               for value, kind, size, *_ in figures(text) if kind == "bytes"}
    assert {327680, 131072} <= printed
    for student in STUDENTS:
        n = variants.numbers("lesson-4-part-1", student)
        assert MODELS[n["kv_model"]].kv_bytes_per_token(n["kv_bits"]) not in printed, (student, n["kv_model"])


def test_lesson_4_part_1_all_reduce_is_worked_with_the_latency_among_the_drawn_gpus():
    """Problem 1.3's grader times the all-reduce with the link's latency among the group's GPUs (PCIe's grows from two
    to eight); the statement names it, and the worked method (latency_for + 2(N-1)/N S/B) agrees for every student."""
    from servingmath import hardware, parallel
    from servingmath.models import MODELS

    for student in STUDENTS[:300]:
        n = variants.numbers("lesson-4-part-1", student)
        link, count = hardware.link(n["ar_gpu"], n["ar_link"]), n["ar_count"]
        assert f"`.latency_for({count})`" in variants.statement("lesson-4-part-1", "1.3", student)
        by_hand = link.latency_for(count) + 2 * (count - 1) / count * n["ar_batch"] * MODELS["llama-3-70b"].hidden * 2 \
            / link.bandwidth
        assert variant_answers.expected("lesson-4-part-1", "1.3", student) == pytest.approx(by_hand * 1e6, rel=1e-12)


def test_lesson_4_part_3_copies_hold_a_request_of_the_models_whole_window():
    """vLLM V1 refuses to start when its cache cannot hold one request of the model's whole length: Qwen2.5 72B on
    two 80 GB GPUs holds 28,080 tokens of its 131,072."""
    from servingmath import replicas
    from servingmath.models import MODELS

    qwen = replicas.server("qwen2.5-72b", "h100-sxm", 2)
    assert qwen.cache_blocks * qwen.block_tokens < MODELS["qwen2.5-72b"].context_window
    for student in STUDENTS:
        n = variants.numbers("lesson-4-part-3", student)
        for key, gpu, degree in ((n["held_model"], n["held_gpu"], n["held_degree"]),
                                 (n["tbt_model"], n["tbt_gpu"], n["tbt_degree"])):
            copy = replicas.server(key, gpu, degree)
            assert copy.cache_blocks * copy.block_tokens >= MODELS[key].context_window, (student, key, gpu, degree)
