"""Lesson 1's wrap-up: the editable script, the quiz, the Ollama helper, the glossary."""
import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import servingmath as sm
from servingmath import ollama, quiz, units
from servingmath.quiz import LESSON_1_QUESTIONS, Question
from servingmath.serving import decode_ceiling
from servingmath.quiz import Quiz
from wrapup_script import run_script, script_cell

ROOT = Path(__file__).resolve().parent.parent
WRAP_UP = ROOT / "chapters" / "lesson-1" / "wrap-up.md"
M, H100 = sm.LLAMA_3_8B, sm.H100_SXM


# -- the script the reader edits -------------------------------------------------------
@pytest.fixture(scope="module")
def script_source():
    return script_cell(WRAP_UP, "def estimate(")


def test_the_script_stands_alone(script_source):
    assert "import" not in script_source
    assert "servingmath" not in script_source


def test_the_script_prints_the_published_figures(script_source):
    assert run_script(script_source) == [
        "first token after 49 ms; later ones at 209 tokens/s",
        "all 250 tokens: 1.24 s, 96 % of it decoding",
        "batch of  1: $3.995 a million tokens",
        "batch of 32: $0.125 a million tokens",
    ]


def test_the_script_with_8_bit_weights_gets_417_tokens_a_second(script_source):
    first_line = run_script(script_source, "estimate(bits_per_weight=8)")[0]
    assert first_line == "first token after 49 ms; later ones at 417 tokens/s"


@pytest.mark.parametrize("gpu_key", ["h200", "a100-80gb", "l4", "b200"])
def test_the_script_agrees_with_the_package_on_other_gpus(script_source, gpu_key):
    gpu = sm.gpu(gpu_key)
    call = (f"estimate(gpu_flops={gpu.peak_flops!r}, gpu_bandwidth={gpu.memory_bandwidth!r}, "
            f"price_per_hour={gpu.price_per_hour!r}, batches=(1, 64, 1024))")
    timed = sm.request(M, gpu, 3000, 250)
    expected = [f"first token after {units.ms(timed.ttft, 0)}; later ones at {units.number(timed.tokens_per_second)} "
                "tokens/s",
                f"all 250 tokens: {units.seconds(timed.total_time)}, {units.percent(timed.decode_share)} of it decoding"]
    expected += [f"batch of {users:>2}: {units.dollars(sm.batching(M, gpu, users).cost_per_million_tokens, 3)} "
                 "a million tokens" for users in (1, 64, 1024)]
    assert run_script(script_source, call) == expected


def test_past_the_ridge_batching_stops_cutting_the_cost(script_source):
    # The page's suggestion: conversations short enough that 512 users' caches fit the H100.
    lines = run_script(script_source, "estimate(prompt_tokens=100, reply_tokens=100, batches=(64, 256, 512))")
    costs = [float(re.search(r"\$([\d.,]+)", line).group(1)) for line in lines[2:]]
    # 64 and 256 users are still memory-bound; at 512, past the ridge, each step's arithmetic grows with the batch.
    assert costs[0] > costs[1] > costs[2]
    assert costs[2] == float(units.dollars(sm.batching(sm.LLAMA_3_8B, sm.H100_SXM, 296).cost_per_million_tokens,
                                           3).removeprefix("$"))
    assert sm.memory.fit(sm.LLAMA_3_8B, sm.H100_SXM, 100 + 100, 512).fits
    wrap_up = (Path(__file__).resolve().parent.parent / "chapters" / "lesson-1" / "wrap-up.md").read_text()
    assert "estimate(prompt_tokens=100, reply_tokens=100, batches=(64, 256, 512))" in wrap_up
    assert "4096)" not in wrap_up


# -- the quiz ----------------------------------------------------------------------------
def test_lesson_1_has_four_questions_of_four_options():
    assert [len(question.options) for question in LESSON_1_QUESTIONS] == [4, 4, 4, 4]
    assert [question.correct for question in LESSON_1_QUESTIONS] == [2, 1, 0, 0]


@pytest.mark.parametrize("question_index", range(4))
def test_every_option_gives_its_own_feedback_and_only_the_right_one_says_right(question_index):
    question = LESSON_1_QUESTIONS[question_index]
    shown = Quiz(LESSON_1_QUESTIONS)
    messages = []
    for option_index, explanation in enumerate(question.feedback):
        feedback = shown.choose(question_index, option_index)
        right = option_index == question.correct
        assert feedback.correct is right
        assert feedback.message == ("Right. " if right else "Not quite. ") + explanation
        assert feedback.message in shown.feedback[question_index].value.replace("&#x27;", "'")
        styles = [button.button_style for button in shown.buttons[question_index]]
        chosen_style = "success" if right else "danger"
        assert styles == [chosen_style if index == option_index else "" for index in range(4)]
        assert shown.score == int(right)
        messages.append(feedback.message)
    assert len(set(messages)) == 4


def test_clicking_a_button_answers_as_choose_does():
    shown = Quiz(LESSON_1_QUESTIONS)
    shown.buttons[0][2].click()
    shown.buttons[1][0].click()
    assert shown.choices == {0: 2, 1: 0}
    assert shown.score == 1
    assert "Right." in shown.feedback[0].value and "Not quite." in shown.feedback[1].value
    assert shown.feedback[2].value == ""


def test_the_feedback_quotes_figures_the_package_computes():
    first, second, _, fourth = LESSON_1_QUESTIONS
    assert "0.050 %" in first.feedback[2] and "1,999 decode steps" in first.feedback[2]
    assert "21 %" in first.feedback[0] and "2.2 %" in first.feedback[1] and "3.9 %" in first.feedback[3]
    assert "209 tokens a second" in second.feedback[1] and "about 104" in second.feedback[1]
    assert "16.06 GB" in fourth.feedback[0] and "$0.50 instead of $4.00" in fourth.feedback[0]
    assert "8 operations per byte" in fourth.feedback[3] and "ridge of 295" in fourth.feedback[0]


def test_a_wrong_index_is_refused_by_name():
    shown = Quiz(LESSON_1_QUESTIONS)
    with pytest.raises(ValueError, match="question_index must be from 0 to 3, got 4"):
        shown.choose(4, 0)
    with pytest.raises(ValueError, match="question_index"):
        shown.choose(True, 0)
    with pytest.raises(ValueError, match="option_index must be from 0 to 3, got 4"):
        shown.choose(0, 4)
    with pytest.raises(ValueError, match="option_index must be at least 0"):
        shown.choose(0, -1)
    assert shown.choices == {}


def test_a_quiz_needs_questions():
    with pytest.raises(ValueError, match="at least one Question"):
        Quiz([])
    with pytest.raises(TypeError, match=r"questions\[0\] must be a Question"):
        Quiz(["Which phase is slower?"])


def test_a_question_checks_its_own_data():
    with pytest.raises(ValueError, match="feedback must hold one line per option"):
        Question("Q?", ("a", "b"), 0, ("why a",))
    with pytest.raises(ValueError, match="correct must be from 0 to 1, got 2"):
        Question("Q?", ("a", "b"), 2, ("why a", "why b"))
    with pytest.raises(ValueError, match="options must hold 2"):
        Question("Q?", ("a",), 0, ("why a",))
    with pytest.raises(ValueError, match="options must be non-empty strings"):
        Question("Q?", ("a", " "), 0, ("why a", "why b"))


def test_the_website_version_hides_each_answer_in_a_dropdown():
    text = quiz.markdown(LESSON_1_QUESTIONS)
    blocks = text.split(":::{dropdown}")
    assert len(blocks) == 5 and text.count("\n:::\n") == 4
    for number, (question, answer) in enumerate(zip(LESSON_1_QUESTIONS, blocks[1:]), 1):
        assert answer.startswith(f" Answer to question {number}\n**{quiz.LETTERS[question.correct]}.** Right.")
        for option in range(4):
            assert question.answer(option).message.replace("$", r"\$") in answer
    # Options come before their answer, and every dollar sign is kept out of inline maths.
    assert blocks[0].count("- **A.**") == 1 and "$" not in text.replace(r"\$", "")


# -- the Ollama helper -----------------------------------------------------------------
@pytest.mark.parametrize("written, seconds", [
    ("32.51ms", 0.03251), ("1.234567s", 1.234567), ("2m3.5s", 123.5), ("850µs", 850e-6),
    ("850μs", 850e-6), ("850us", 850e-6), ("12ns", 12e-9), ("1h2m3s", 3723.0), (" 741.203ms ", 0.741203),
])
def test_durations_as_go_prints_them(written, seconds):
    assert ollama.parse_duration(written) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("written", ["12", "ms", "1.2 s", "1.2sec", "", "-3s"])
def test_a_duration_without_its_unit_is_refused(written):
    with pytest.raises(ValueError, match="duration with its unit"):
        ollama.parse_duration(written)


def test_the_example_outputs_parse_exactly():
    short, article, story = (ollama.parse_verbose(text) for text in ollama.EXAMPLES.values())
    assert article == ollama.VerboseTimings(
        prompt_eval_rate=950.76, eval_rate=62.06, prompt_eval_count=3412, prompt_eval_duration=3.588712,
        eval_count=46, eval_duration=0.741203, total_duration=4.355622541, load_duration=0.021107)
    assert (short.prompt_eval_count, short.eval_count, short.eval_rate) == (32, 174, 64.0)
    assert (story.prompt_eval_rate, story.eval_duration) == (355.33, 11.213414)


def test_each_example_rate_is_its_count_over_its_duration():
    for text in ollama.EXAMPLES.values():
        timings = ollama.parse_verbose(text)
        assert f"{timings.prompt_eval_count / timings.prompt_eval_duration:.2f}" == f"{timings.prompt_eval_rate:.2f}"
        assert f"{timings.eval_count / timings.eval_duration:.2f}" == f"{timings.eval_rate:.2f}"


def test_compare_sets_the_long_article_against_a_laptops_ceiling():
    laptop = sm.gpu("laptop")
    result = ollama.compare(ollama.EXAMPLES["a long article to summarise"], laptop.memory_bandwidth, 1.3e9)
    assert result.ceiling == pytest.approx(100e9 / 1.3e9)
    assert result.prefill_over_decode == pytest.approx(950.76 / 62.06)
    assert result.share_of_ceiling == pytest.approx(62.06 * 1.3e9 / 100e9)
    assert result.prefill_share_of_time == pytest.approx(3.588712 / (3.588712 + 0.741203))
    assert str(result).splitlines() == [
        "prefill (prompt eval rate): 951 tokens/s",
        "decode (eval rate): 62 tokens/s",
        "prefill read 15× as many tokens a second as decode wrote",
        "time reading the prompt: 83 % of the two phases together",
        "decode ceiling: 100 GB/s ÷ 1.30 GB = 77 tokens/s",
        "decode reached 81 % of the ceiling",
    ]


def test_short_prompts_spend_their_time_in_eval_and_the_article_in_prompt_eval():
    shares = {name: ollama.compare(text, 100e9, 1.3e9).prefill_share_of_time
              for name, text in ollama.EXAMPLES.items()}
    assert shares["a long article to summarise"] > 0.5 > shares["a short question"] > shares["a 500-word story"]


# A paste from a Windows terminal: the reply, the prompt, CRLF line endings, a first run's long load.
WINDOWS_PASTE = (
    ">>> Summarise this in one line: ...\r\n"
    "The report says the pilot worked and should be extended.\r\n\r\n"
    "total duration:       1m2.0374812s\r\n"
    "load duration:        1.8126537s\r\n"
    "prompt eval count:    6021 token(s)\r\n"
    "prompt eval duration: 58.6409s\r\n"
    "prompt eval rate:     102.68 tokens/s\r\n"
    "eval count:           14 token(s)\r\n"
    "eval duration:        1.5801s\r\n"
    "eval rate:            8.86 tokens/s\r\n"
    ">>> Send a message (/? for help)\r\n"
)


def test_a_windows_paste_with_the_reply_around_it_is_read():
    timings = ollama.parse_verbose(WINDOWS_PASTE)
    assert timings.total_duration == pytest.approx(62.0374812)
    assert (timings.prompt_eval_count, timings.prompt_eval_rate, timings.eval_rate) == (6021, 102.68, 8.86)


def test_only_the_two_rates_are_needed():
    result = ollama.compare("prompt eval rate: 500 tokens/s\neval rate: 50 tokens/s", 100e9, 1e9)
    assert result.prefill_share_of_time is None
    assert result.timings.eval_count is None
    assert "time reading the prompt" not in str(result)
    assert str(result).splitlines()[-1] == "decode reached 50 % of the ceiling"


def test_nothing_pasted_says_so():
    with pytest.raises(TypeError, match="text must be the text Ollama printed, as a string; got None"):
        ollama.parse_verbose(None)
    for blank in ("", "  \n\t\n"):
        with pytest.raises(ValueError, match="text is empty: paste every line Ollama prints"):
            ollama.parse_verbose(blank)


def test_text_without_eval_lines_names_both_missing_lines():
    with pytest.raises(ValueError, match="text has no 'prompt eval rate:' or 'eval rate:' line"):
        ollama.parse_verbose("Sunlight is scattered by the air.\n>>> Send a message")


def test_text_missing_the_decode_lines_names_only_those():
    only_prefill = "\n".join(ollama.EXAMPLES["a short question"].splitlines()[:8])
    with pytest.raises(ValueError, match=r"text has no 'eval rate:' line") as raised:
        ollama.parse_verbose(only_prefill)
    assert "prompt eval rate" not in str(raised.value)


@pytest.mark.parametrize("bad_line, message", [
    ("eval rate:            45.12", "'eval rate' must be a number with its unit, such as '45.12 tokens/s', got '45.12'"),
    ("eval rate:            fast tokens/s", "'eval rate' must be a number with its unit"),
    ("eval duration:        6.26", "'eval duration' must be a duration with its unit"),
    ("eval count:           many token(s)", "'eval count' must be a number with its unit, such as '26 token(s)'"),
])
def test_a_value_without_its_unit_is_named(bad_line, message):
    text = "prompt eval rate: 799.75 tokens/s\n" + bad_line
    with pytest.raises(ValueError, match=re.escape(message)):
        ollama.parse_verbose(text)


def test_two_replies_pasted_together_are_refused():
    with pytest.raises(ValueError, match="more than one 'total duration' line"):
        ollama.parse_verbose(ollama.EXAMPLES["a short question"] + ollama.EXAMPLES["a 500-word story"])


def test_compare_refuses_a_zero_rate_and_bad_machine_figures():
    with pytest.raises(ValueError, match="'eval rate' must be above 0 tokens/s"):
        ollama.compare("prompt eval rate: 500.00 tokens/s\neval rate: 0.00 tokens/s", 100e9, 1e9)
    text = ollama.EXAMPLES["a short question"]
    with pytest.raises(ValueError, match="memory_bandwidth must be greater than 0, got 0"):
        ollama.compare(text, 0, 1.3e9)
    with pytest.raises(TypeError, match="model_bytes must be a number"):
        ollama.compare(text, 100e9, "1.3 GB")


@given(st.text())
def test_any_paste_is_read_or_refused_with_a_value_error(text):
    try:
        ollama.parse_verbose(text)
    except ValueError as problem:
        assert str(problem)


def test_decode_ceiling_is_bandwidth_over_weight_bytes():
    weights = sm.weight_bytes(M.parameters)
    assert decode_ceiling(H100.memory_bandwidth, weights) == pytest.approx(1 / sm.decode_step(M, H100).time)
    assert units.number(decode_ceiling(H100.memory_bandwidth, weights)) == "209"
    small = sm.MODELS["llama-3.2-1b"]
    assert units.gb(sm.weight_bytes(small.parameters, 8)) == "1.24 GB"
    with pytest.raises(ValueError, match="weight_bytes must be greater than 0"):
        decode_ceiling(1e12, 0)
    with pytest.raises(TypeError, match="memory_bandwidth"):
        decode_ceiling(None, 1e9)


# -- the glossary and the table of contents ---------------------------------------------
def test_the_glossary_holds_the_lesson_and_plate_terms():
    text = (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}")[1].split("```")[0]
    terms = {line for line in block.splitlines() if line and not line.startswith(" ")}
    assert {"Prefill", "Decode", "Compute-bound", "Memory-bound", "Arithmetic intensity", "Ridge point", "TTFT",
            "TPOT", "Batching", "KV cache", "Forward pass", "Roofline", "Memory bandwidth",
            "Quantization"} <= terms


def test_the_lesson_opens_with_its_index_and_closes_with_the_wrap_up():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    lesson = [part for part in toc["parts"] if part["caption"] == "Lesson 1: Reading the prompt, writing the reply"]
    assert len(lesson) == 1
    files = [chapter["file"] for chapter in lesson[0]["chapters"]]
    assert files[0] == "chapters/lesson-1/index" and files[-1] == "chapters/lesson-1/wrap-up"


def test_question_2s_rule_holds_for_every_pair_of_dense_models_and_names_them():
    """Twice the weights, half the tokens a second, for one user: exact for dense models on every GPU.

    A mixture of experts reads only the experts its token reaches, so the rule fails there
    (DeepSeek-V2-Lite holds about twice Qwen2.5 7B's weights and decodes faster); the question says "dense".
    """
    assert "dense" in LESSON_1_QUESTIONS[1].prompt
    dense = [m for m in sm.MODELS.values() if not m.mixture_of_experts]
    for gpu in sm.CATALOG.values():
        for small in dense:
            for large in dense:
                ratio = sm.decode_step(large, gpu).time / sm.decode_step(small, gpu).time
                assert math.isclose(ratio, large.parameters / small.parameters, rel_tol=1e-12)
    lite, qwen = sm.MODELS["deepseek-v2-lite"], sm.MODELS["qwen2.5-7b"]
    assert lite.parameters > 2 * qwen.parameters
    assert sm.decode_step(lite, sm.H100_SXM).time < sm.decode_step(qwen, sm.H100_SXM).time
