"""Lesson 2's index and wrap-up: the headline figures, the editable script, the quiz, the glossary's
new terms and the sources each page cites."""
import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import servingmath as sm
from servingmath import cache, quiz, units, variants
from servingmath.memory import fit, kv_cache_bytes, max_batch
from servingmath.quiz import LESSON_2_QUESTIONS
from servingmath.quiz import Quiz
from wrapup_script import run_script, script_cell

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "chapters" / "lesson-2"
M, G = sm.LLAMA_3_8B, sm.H100_SXM


def test_the_index_headlines():
    assert units.gb(kv_cache_bytes(M, 3000, batch=32), 1) == "12.6 GB"
    assert units.dollars(cache.cached_decode(M, G, 32, 3000).cost_per_million_tokens, 3) == "$0.223"
    assert units.gb(kv_cache_bytes(M, 3000, batch=296), 0) == "116 GB"


def test_what_vllm_would_report_by_the_lessons_arithmetic():
    budget = fit(M, G)
    tokens = (budget.usable_bytes - budget.weight_bytes) / kv_cache_bytes(M, 1)
    assert units.number(units.round_to(tokens, 3)) == "500,000"
    assert units.number(tokens / 8192) == "61" and max_batch(M, G, 8192) == 61


# -- the script the reader edits -------------------------------------------------------
@pytest.fixture(scope="module")
def script_source():
    return script_cell(LESSON / "wrap-up.md", "def estimate(")


def test_the_script_stands_alone(script_source):
    assert "import" not in script_source and "servingmath" not in script_source


def test_the_script_prints_the_published_figures(script_source):
    assert run_script(script_source) == [
        "cache: 131,072 bytes a token",
        " 1,000 tokens each: 500 users fit",
        " 8,000 tokens each: 62 users fit",
        "32,000 tokens each: past the model's 8,192-token window",
        "32 users of 3,000 tokens: 8.55 ms a step, $0.223 a million tokens",
    ]


@pytest.mark.parametrize("gpu_key", ["h200", "a100-80gb", "mi300x"])
def test_the_script_agrees_with_the_package_on_other_gpus(script_source, gpu_key):
    gpu = sm.gpu(gpu_key)
    call = (f"estimate(gpu_memory={gpu.memory_bytes!r}, gpu_flops={gpu.peak_flops!r}, "
            f"gpu_bandwidth={gpu.memory_bandwidth!r}, price_per_hour={gpu.price_per_hour!r}, users=64)")
    lines = run_script(script_source, call)
    assert lines[2] == f" 8,000 tokens each: {units.number(max_batch(M, gpu, 8000))} users fit"
    served = cache.cached_decode(M, gpu, 64, 3000)
    assert lines[-1] == (f"64 users of 3,000 tokens: {units.ms(served.step_time)} a step, "
                         f"{units.dollars(served.cost_per_million_tokens, 3)} a million tokens")


def test_the_script_with_an_8_bit_cache_fits_twice_the_users(script_source):
    assert run_script(script_source, "estimate(bits_per_cached_value=8)")[2] == " 8,000 tokens each: 125 users fit"


def test_the_script_refuses_a_length_past_the_window(script_source):
    assert run_script(script_source, "estimate(lengths=(32_000,))")[1] == (
        "32,000 tokens each: past the model's 8,192-token window")


def test_the_script_with_multi_head_attention(script_source):
    multi_head = replace(M, kv_heads=M.heads)
    lines = run_script(script_source, f"estimate(kv_heads=32, parameters={multi_head.parameters})")
    assert lines[0] == f"cache: {units.number(kv_cache_bytes(multi_head, 1))} bytes a token"


# -- the quiz --------------------------------------------------------------------------
def test_four_questions_each_with_one_right_answer_and_feedback_for_every_option():
    assert len(LESSON_2_QUESTIONS) == 4
    for question in LESSON_2_QUESTIONS:
        verdicts = [question.answer(i).correct for i in range(len(question.options))]
        assert verdicts.count(True) == 1


def test_the_quizs_feedback_quotes_the_packages_figures():
    text = quiz.markdown(LESSON_2_QUESTIONS)
    for figure in ("2,900", "512 KiB", "128 KiB", units.number(max_batch(M, G, 6000)), units.number(max_batch(M, G, 3000)),
                   units.dollars(cache.cached_decode(M, G, quiz.QUESTION_4_USERS[0], 3000).cost_per_million_tokens, 3).replace("$", r"\$")):
        assert figure in text


def test_the_quizs_batches_name_their_model_and_fit_its_memory():
    """Question 4's answers hold for the model it names (a latent-attention model would differ), and its
    larger batch fits beside the weights, inside the model's window."""
    asked = LESSON_2_QUESTIONS[3].prompt
    fewer, more = quiz.QUESTION_4_USERS
    assert asked.startswith(M.name) and f"from {fewer} to {more}" in asked and more == 2 * fewer
    assert max_batch(M, G, 3000) >= more and 3000 < M.context_window
    # Neither batch is one of Part 4's table (1, 4, 32, 128, 512 users), which prints its price.
    table = (ROOT / "chapters" / "lesson-2" / "part-4-decode-and-price.md").read_text(encoding="utf-8")
    assert "batches = (1, 4, 32, 128, 512)" in table
    # Nor practice Problem 4.3's batch, whose speed the feedback would print; no graded draw holds 3,000 tokens.
    practice = variants.practice("lesson-2-part-4")
    assert (practice["many"], practice["many_context"]) not in [(users, 3000) for users in quiz.QUESTION_4_USERS]
    assert all(variants.numbers("lesson-2-part-4", f"S{n:04d}")["many_context"] != 3000 for n in range(200))


def test_the_quiz_widget_answers_a_click():
    shown = Quiz(LESSON_2_QUESTIONS)
    assert shown.choose(3, 1).correct and not shown.choose(0, 1).correct
    assert shown.score == 1


# -- glossary, contents and sources ------------------------------------------------------
def test_the_glossary_defines_every_term_the_lesson_links():
    glossary = (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8")
    defined = {line.strip().lower() for line in glossary.splitlines() if line and not line.startswith((" ", "`"))}
    pages = list(LESSON.glob("*.md")) + [ROOT / "chapters" / "plates" / "xxiii-2-the-kv-cache.md"]
    used = set()
    for page in pages:
        for term in re.findall(r"\{term\}`([^`]+)`", page.read_text(encoding="utf-8")):
            used.add((term.split("<")[-1].rstrip(">") if "<" in term else term).strip().lower())
    assert used <= defined, used - defined


def test_every_citation_is_in_the_bibliography():
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, flags=re.M))
    for page in list(LESSON.glob("*.md")) + [ROOT / "chapters" / "plates" / "xxiii-2-the-kv-cache.md"]:
        for cited in re.findall(r"\{cite:[pt]\}`([^`]+)`", page.read_text(encoding="utf-8")):
            assert set(cited.split(",")) <= keys, (page.name, cited)


def test_the_sources_quote_their_numbers_as_stated():
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    assert "20.4--38.2 per cent" in bib and "93.3 per cent" in bib
    assert [units.percent(share, 1) for share in cache.MEASURED_SHARE_HOLDING_TOKENS] == ["20.4 %", "38.2 %"]
    assert units.percent(cache.DEEPSEEK_V2_CACHE_REDUCTION, 1) == "93.3 %"


def test_the_lesson_and_the_plate_are_in_the_contents_after_lesson_1():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    captions = [part["caption"] for part in toc["parts"]]
    assert captions.index("Lesson 2: Each user's state, the KV cache") == captions.index(
        "Lesson 1: Reading the prompt, writing the reply") + 1
    plates = [c["file"] for c in toc["parts"][captions.index("Plates")]["chapters"]]
    assert plates.index("chapters/plates/xxiii-2-the-kv-cache") == plates.index(
        "chapters/plates/xxiii-1-prefill-and-decode") + 1


@pytest.mark.parametrize("page, label", [
    ("index", "lesson-2"), ("part-1-what-the-cache-holds", "lesson-2-part-1"), ("part-2-its-size", "lesson-2-part-2"),
    ("part-3-how-many-users-fit", "lesson-2-part-3"), ("part-4-decode-and-price", "lesson-2-part-4"),
    ("wrap-up", "lesson-2-wrap-up")])
def test_each_page_has_a_stable_label_for_links_into_it(page, label):
    text = (LESSON / f"{page}.md").read_text(encoding="utf-8")
    assert f"({label})=\n# " in text


def test_every_glued_value_is_formatted_by_units_so_it_shows_without_quotes():
    # A plain str glued into prose shows as its repr, in quotation marks; units.Shown does not.
    pages = list(LESSON.glob("*.md")) + [ROOT / "chapters" / "plates" / "xxiii-2-the-kv-cache.md"]
    for page in pages:
        for call in re.findall(r"glue\(f?\"[^\"]+\",\s*([^\n]+)", page.read_text(encoding="utf-8")):
            assert call.startswith(("units.", "Markdown(")), (page.name, call)


def test_ollamas_working_buffer_is_its_graph_size_estimate():
    """fs/ggml/ggml.go, GraphSize, the "llama" case: 4·batch·(1 + 4·embedding + context·(1 + heads)), or the
    output layer's 4·batch·(embedding + vocab) where larger (a short window)."""
    from servingmath import ollama
    small = sm.MODELS["llama-3.2-1b"]
    assert ollama.graph_bytes(small, 32768) == 4 * 512 * (1 + 4 * 2048 + 32768 * 33) == 2_231_371_776
    assert ollama.graph_bytes(small, 1) == 4 * 512 * (2048 + 128256)
    assert ollama.graph_bytes(small, 32768) / kv_cache_bytes(small, 32768) == pytest.approx(2.078, abs=1e-3)
    with pytest.raises(ValueError, match="context"):
        ollama.graph_bytes(small, 0)
