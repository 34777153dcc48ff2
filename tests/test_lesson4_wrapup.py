"""Lesson 4's wrap-up: the engines' flags table, the editable script, the quiz and its figures, the sources."""
import re
from pathlib import Path

import pytest
import yaml

import servingmath as sm
from servingmath import engines, parallel, quiz, units
from servingmath.memory import DoesNotFit
from wrapup_script import run_script, script_cell

ROOT = Path(__file__).resolve().parent.parent
WRAP_UP = ROOT / "chapters" / "lesson-4" / "wrap-up.md"


# -- where you'll meet it ----------------------------------------------------------------
def test_every_idea_has_a_flag_in_both_engines_each_with_where_it_was_read():
    ideas = {row[0] for row in engines.MULTI_GPU_FLAGS}
    assert len(ideas) == 4 and all(f"(Part {n})" in " ".join(ideas) for n in range(1, 5))
    for idea in ideas:
        assert {row[1] for row in engines.MULTI_GPU_FLAGS if row[0] == idea} == {"vLLM", "SGLang"}
    for _, _, flags, read in engines.MULTI_GPU_FLAGS:
        assert flags and all(flag.startswith("--") for flag in flags) and read.strip()


def test_the_flags_table_is_one_row_an_idea_and_survives_markdown():
    table = engines.multi_gpu_table().splitlines()
    assert table[0] == "| idea | vLLM | SGLang |" and len(table) == 2 + 4
    # A bar inside a cell would split it: every row has the header's three cells.
    assert all(line.count("|") == 4 for line in table)
    assert "`--tensor-parallel-size` (docs at commit f948f41e; V1 engine)" in table[2] and "`--pp-size`" in table[3]


def test_every_vllm_row_names_the_documentation_the_bibliography_cites_and_the_engine_it_runs_on():
    # The lessons run 0.9.2; 0.8.0 to 0.8.4 fell back to V0 on --kv-transfer-config, 0.8.5 opened V1's KV-connector
    # API (pull request 15960), 0.9.0 added NixlConnector; 0.9.2's V1 runs pipeline stages on multiprocessing too.
    # Each row's documentation, by version or commit, is a page references.bib cites.
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    for idea, engine, flags, read in engines.MULTI_GPU_FLAGS:
        if engine == "vLLM":
            docs = re.match(r"(\d+\.\d+\.\d+) docs|docs at commit ([0-9a-f]{7,})", read)
            assert docs and ("V1" in read or "V0" in read), read
            assert (f"{{vLLM}} {docs[1]} documentation" if docs[1] else f"commit {docs[2]}") in bib, read
    rows = {flags: read for _, engine, flags, read in engines.MULTI_GPU_FLAGS if engine == "vLLM"}
    assert "V1 from 0.8.5" in rows["--kv-transfer-config",] and "NixlConnector from 0.9.0" in rows["--kv-transfer-config",]
    assert "V0" not in rows["--kv-transfer-config",] and "only with Ray" not in rows["--pipeline-parallel-size",]


def test_the_vllm_tensor_parallel_flag_is_the_simulators():
    # The engine profile takes tensor_parallel_size; the command line spells it with dashes.
    assert engines.TENSOR_PARALLEL_FLAGS["vllm"].replace("_", "-") == "tensor-parallel-size"
    assert engines.TENSOR_PARALLEL_FLAGS["sglang"].replace("_", "-") == "tp-size"
    flags = {(row[0], row[1]): row[2] for row in engines.MULTI_GPU_FLAGS}
    assert flags["split each layer (Part 1)", "vLLM"] == ("--tensor-parallel-size",)
    assert flags["split each layer (Part 1)", "SGLang"] == ("--tp-size",)


# -- the script the reader edits -----------------------------------------------------------
@pytest.fixture(scope="module")
def script_source():
    return script_cell(WRAP_UP, "def split(")


def test_the_script_prints_the_packages_figures(script_source):
    figures = quiz.lesson_4_figures()
    lines = run_script(script_source)
    assert lines[1] == "  split by layer: 11.52 ms a token, 8% of it in all-reduces"
    assert lines[2] == "  split by stage: 42.24 ms a token, 10.87 ms in the slowest stage"
    assert f"{figures['tensor_4'].time * 1e3:.2f}" in lines[1]
    assert f"{figures['pipeline_4'].token_time * 1e3:.2f}" in lines[2]


SUGGESTIONS = ['split(gpus=8)', 'split(gpu="h100-pcie", link="pcie5")',
               'split(model="llama-3.2-1b", gpu="h100-pcie", gpus=2, link="pcie5")']


def engines_cards():
    from servingmath.variants import CARDS
    return CARDS


def test_the_page_suggests_exactly_the_calls_tested_here():
    page = WRAP_UP.read_text().split("Now make it yours:")[1].split("## ")[0]
    assert re.findall(r"`(split\([^`]*\))`", page.replace("\n", " ")) == SUGGESTIONS


def test_each_suggestion_shows_what_the_page_says(script_source):
    """A slow link: the all-reduces' share grows well past NVLink's; a model too small to split: two cards take
    longer than one."""
    def layer(call):
        return run_script(script_source, call)[1]

    share = {call: int(re.search(r"(\d+)% of it", layer(call)).group(1)) for call in ("split()", SUGGESTIONS[1])}
    assert share[SUGGESTIONS[1]] > 2 * share["split()"]
    # A machine that is sold: GPUs joined by PCIe alone are PCIe cards (SXM modules come on an NVSwitch board).
    for call in SUGGESTIONS:
        settings = eval(f"dict{call[len('split'):]}")
        if settings.get("link", "").startswith("pcie"):
            assert settings.get("gpu") in engines_cards(), call
    times = [float(re.search(r"([\d.]+) ms a token", layer(SUGGESTIONS[2].replace("gpus=2", f"gpus={n}"))).group(1))
             for n in (1, 2)]
    assert times[1] > times[0]


@pytest.mark.parametrize("call", SUGGESTIONS)
def test_the_pages_suggestions_run_and_agree_with_the_package(script_source, call):
    lines = run_script(script_source, call)
    settings = dict(model="llama-3-70b", gpu="h100-sxm", gpus=4, link="nvlink4")
    settings.update(eval(f"dict{call[len('split'):]}"))
    group = parallel.group(sm.CATALOG[settings["gpu"]], settings["gpus"], settings["link"])
    model = sm.MODELS[settings["model"]]
    tensor = parallel.tensor_parallel_step(model, group, cached_tokens=1000)
    stages = parallel.pipeline_parallel_step(model, group, settings["gpus"], cached_tokens=1000)
    assert f"{tensor.time * 1e3:.2f} ms a token" in lines[1]
    assert f"{stages.token_time * 1e3:.2f} ms a token" in lines[2]


def test_the_script_refuses_a_model_that_does_not_fit(script_source):
    with pytest.raises(DoesNotFit):
        run_script(script_source, 'split(gpus=1, link=None)')


def test_on_more_stages_a_token_takes_longer_and_the_all_reduces_take_a_larger_share(script_source):
    model, gpu = sm.MODELS["llama-3-70b"], sm.H100_SXM
    steps = {n: (parallel.tensor_parallel_step(model, parallel.group(gpu, n, "nvlink4"), cached_tokens=1000),
                 parallel.pipeline_parallel_step(model, parallel.group(gpu, n, "nvlink4"), n, cached_tokens=1000))
             for n in (2, 4, 8)}
    assert [steps[n][0].communication_share for n in (2, 4, 8)] == sorted(s[0].communication_share for s in steps.values())
    # Split by stage, one user's token never beats the split by layer on the same GPUs.
    assert all(stage.token_time > layer.time for layer, stage in steps.values())


# -- the quiz --------------------------------------------------------------------------------
def test_four_questions_each_with_one_right_answer_and_feedback_for_every_option():
    questions = quiz.LESSON_4_QUESTIONS
    assert len(questions) == 4
    assert len({q.correct for q in questions}) > 1          # the right answer is not always the same letter
    for q in questions:
        assert [q.answer(i).correct for i in range(len(q.options))].count(True) == 1


def test_the_quizs_feedback_quotes_the_packages_figures():
    from servingmath.explorers import clock

    figures = quiz.lesson_4_figures()
    first, second, _, fourth = (q.answer(q.correct).message for q in quiz.LESSON_4_QUESTIONS)
    assert clock(figures["small_one"].time) in first and clock(figures["small_two"].time) in first
    assert figures["small_two"].time > figures["small_one"].time
    assert clock(figures["pipeline_4"].token_time) in second and clock(figures["tensor_4"].time) in second
    assert clock(figures["over_network"][2000]) in fourth and clock(figures["prefill"][2000].time) in fourth


def test_the_first_question_says_its_verdict_rests_on_the_measured_pcie_latency():
    """Two PCIe cards lose to one only at the course's 20 µs all-reduce (Part 1: below 19 µs they would win)."""
    from servingmath import hardware

    latency = hardware.link("h100-pcie", "pcie5").latency
    assert f"{latency * 1e6:.0f} µs" in quiz.LESSON_4_QUESTIONS[0].prompt and "course's model" in quiz.LESSON_4_QUESTIONS[0].prompt


def test_the_fourth_question_says_a_short_prompts_arithmetic_hides_under_the_weights_read():
    from servingmath.explorers import clock

    from servingmath.workload import SHAREGPT

    # The short prompt is ShareGPT's, whose replies are longer too (Part 4's "short prompts and longer replies").
    assert quiz.LESSON_4_SHORT == round(SHAREGPT.mean_prompt) and SHAREGPT.mean_reply > SHAREGPT.mean_prompt
    short = quiz.lesson_4_figures()["prefill"][quiz.LESSON_4_SHORT].compute
    fourth = quiz.LESSON_4_QUESTIONS[3]
    assert "short prompts and longer replies" in fourth.options[fourth.correct]
    assert f"about {quiz.LESSON_4_SHORT} tokens" in fourth.answer(fourth.correct).message
    assert short.compute_time < short.memory_time
    assert clock(short.compute_time) in fourth.answer(fourth.correct).message
    assert clock(short.memory_time) in fourth.answer(fourth.correct).message
    assert "a stage left idle" in fourth.options[fourth.correct]


def test_the_fourth_questions_right_answer_follows_from_part_4_at_the_default_budget():
    """Asked against the default budget: there the split beats the colocated GPUs on long prompts over NVLink and
    over the port between servers, and loses on short prompts and with one decode GPU fed by three."""
    from servingmath import disaggregation

    fourth = quiz.LESSON_4_QUESTIONS[3]
    assert "default budget" in fourth.prompt and "slow link" not in fourth.options[fourth.correct]
    split = quiz.lesson_4_split()
    assert split["over_network"] > split["colocated"] and split["nvlink4"] > split["colocated"]
    assert units.number(split["over_network"], 1) in fourth.answer(0).message
    short = {layout.name: disaggregation.goodput(layout, 0.4, 0.015, "sharegpt") for layout in disaggregation.layouts(4)}
    assert max(short, key=short.get) == "4 colocated"
    long = {layout.name: disaggregation.goodput(layout, 0.4, 0.015, "long") for layout in disaggregation.layouts(4)}
    assert long["3 prefill + 1 decode"] < long["4 colocated"]


def test_part_4_the_wrap_up_and_the_quiz_say_the_same_of_the_split():
    """No slow link among the split's losses (it wins over every link an H100 has); one name for the port between
    servers; the page's own target, the mean time per token; the 33.5 ms prefill said to be at the spec sheet's
    peak; the runs' prompts by their mean, not as all of one length; the tuned result said to be the simulator's."""
    part_4 = (ROOT / "chapters" / "lesson-4" / "part-4-disaggregation.md").read_text()
    wrap_up = WRAP_UP.read_text()
    # The wrap-up's script shows a slow link's all-reduces (Parts 1 and 2); the split's losses name none.
    for text in (part_4, quiz.LESSON_4_QUESTIONS[3].options[1]):
        assert "slow link" not in text
    for text in (part_4, wrap_up, quiz.LESSON_4_QUESTIONS[3].answer(1).message):
        assert "slowest steps" not in text and "InfiniBand" not in text
    for text in (part_4, wrap_up):
        assert "RoCE" in text and "mean time per token within its target" in text and "simulator" in text
        assert "spec sheet's peak" in text and "2,000-token prompts" not in text
    assert "spec sheet's peak" in quiz.LESSON_4_QUESTIONS[3].answer(1).message
    assert "mean_lengths(" in part_4 and "mean_lengths(" in wrap_up


def test_part_4_the_wrap_up_and_the_quiz_time_the_same_prefill():
    """One convention for a 2,000-token prompt of Llama 3 8B on an H100: the step Part 1 times, attention counted."""
    prefill = quiz.lesson_4_figures()["prefill"][2000]
    assert prefill.time == parallel.tensor_parallel_step(sm.LLAMA_3_8B, parallel.group(sm.H100_SXM), new_tokens=2000).time
    for page in ("part-4-disaggregation.md", "wrap-up.md"):
        text = (ROOT / "chapters" / "lesson-4" / page).read_text()
        assert "sm.prefill(" not in text and ('figures["prefill"]' in text or "new_tokens=2000" in text), page


def test_the_stages_question_says_about_four_times_and_the_figures_agree():
    figures = quiz.lesson_4_figures()
    ratio = figures["pipeline_4"].token_time / figures["tensor_4"].time
    assert 3.5 < ratio < 4.5
    assert "about four times" in quiz.LESSON_4_QUESTIONS[1].options[0]


# -- the page's parts ---------------------------------------------------------------------------
def page_citations():
    return set(re.findall(r"\{cite:[pt]\}`([^`]+)`", WRAP_UP.read_text()))


def test_every_citation_is_in_the_bibliography():
    bibliography = (ROOT / "references.bib").read_text()
    keys = {key.strip() for cited in page_citations() for key in cited.split(",")}
    assert keys and all(f"{{{key}," in bibliography for key in keys)


def test_the_glossary_defines_every_term_the_page_links():
    glossary = (ROOT / "chapters" / "glossary.md").read_text().lower()
    terms = re.findall(r"\{term\}`([^`<]+)`", WRAP_UP.read_text())
    assert terms and all(f"\n{term.lower()}\n" in glossary for term in terms)


def test_the_wrap_up_closes_lesson_4_in_the_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]
    lesson = [name for name in files if name.startswith("chapters/lesson-4/")]
    assert lesson[0] == "chapters/lesson-4/index" and lesson[-1] == "chapters/lesson-4/wrap-up"
