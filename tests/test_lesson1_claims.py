"""Lesson 1's general sentences, each held over the whole catalog or tied to the case it names.

The lesson's rules are stated for dense models: every pass reads every weight, a 16-bit pass
does about one FLOP a byte for each token it carries, and one user's token takes at least the
weights' read. Each is checked here for every dense model of the catalog on every GPU, and
the mixture-of-experts models for which each fails are named, which is why the pages say
"dense". Batching is said to be nearly free while the weights are most of what a step reads,
and the page's "decode never turns compute-bound" is tied to the model and GPU it names.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import servingmath as sm
from servingmath import units
from servingmath.roofline import LESSON, PLATE
from servingmath.serving import LESSON_WITH_CACHE, memory_bound_from_cache, weight_bytes_read_per_token

ROOT = Path(__file__).resolve().parent.parent
DENSE = [m for m in sm.MODELS.values() if not m.mixture_of_experts]
MIXTURES = [m for m in sm.MODELS.values() if m.mixture_of_experts]
GPUS = list(sm.CATALOG.values())


def prose(path):
    text = re.sub(r"```\{code-cell\}.*?\n```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", text)


def test_the_catalog_holds_both_kinds_so_the_word_dense_matters():
    assert len(DENSE) >= 20 and len(MIXTURES) == 9
    assert sm.LLAMA_3_8B in DENSE


# -- "every pass of a dense model reads every weight" ------------------------------------------
@pytest.mark.parametrize("model", DENSE, ids=lambda m: m.name)
def test_a_dense_pass_reads_every_weight_however_many_tokens(model):
    for tokens in (1, 8, 3000):
        assert model.parameters_read(tokens) == model.parameters
        cost = sm.forward_pass(model, tokens, attention="none", kv_cache=False)
        assert cost.weight_bytes == sm.weight_bytes(model.parameters)


@pytest.mark.parametrize("model", MIXTURES, ids=lambda m: m.name)
def test_a_mixture_of_experts_decode_step_reads_only_the_experts_its_token_reaches(model):
    assert model.parameters_read(1) < model.parameters


# -- "dense model, 16-bit weights: FLOP per byte ≈ tokens in the pass" -------------------------
@pytest.mark.parametrize("model", DENSE, ids=lambda m: m.name)
def test_a_dense_16_bit_pass_does_one_flop_a_byte_for_each_token(model):
    for tokens in (1, 200, 3000):
        cost = sm.forward_pass(model, tokens, attention="none", kv_cache=False)
        assert cost.intensity == pytest.approx(tokens, rel=1e-12)


def test_the_rule_fails_for_a_mixture_of_experts():
    # DeepSeek-V3's 3,000-token prefill does far fewer FLOPs a byte than tokens: it is memory-bound.
    deepseek = sm.MODELS["deepseek-v3"]
    cost = sm.forward_pass(deepseek, 3000, attention="none", kv_cache=False)
    assert cost.intensity < 3000 / 10
    assert sm.prefill(deepseek, sm.H100_SXM, 3000).bound == "memory"


# -- "time per token ≥ weight bytes read ÷ memory bandwidth" (one user, a dense model) ---------
@pytest.mark.parametrize("model", DENSE, ids=lambda m: m.name)
def test_no_dense_decode_step_beats_the_read_of_its_weights_on_any_gpu(model):
    for gpu in GPUS:
        floor = weight_bytes_read_per_token(model) / gpu.memory_bandwidth
        for assumptions in (LESSON, LESSON_WITH_CACHE, PLATE):
            for cached in (0, 1000):
                assert sm.decode_step(model, gpu, cached, assumptions=assumptions).time >= floor


def test_a_mixture_of_experts_beats_the_floor_its_total_weights_would_set():
    mixtral = sm.MODELS["mixtral-8x7b"]
    step = sm.decode_step(mixtral, sm.H100_SXM)
    whole_read = sm.weight_bytes(mixtral.parameters) / sm.H100_SXM.memory_bandwidth
    assert units.ms(step.time) == "7.69 ms" and units.ms(whole_read, 1) == "27.9 ms"


def test_the_strict_prefill_leaves_out_only_the_looked_up_embedding_table():
    h100 = sm.H100_SXM
    assert units.ms(sm.serving.strict_prefill_time(sm.LLAMA_3_8B, h100, 3000), 1) == "45.5 ms"
    assert units.ms(sm.request(sm.LLAMA_3_8B, h100, 3000, 250).ttft, 0) == "49 ms"
    for model in DENSE:
        for gpu in GPUS:
            strict = sm.serving.strict_prefill_time(model, gpu, 3000)
            assert strict <= sm.prefill(model, gpu, 3000).time
            if model.tied_embeddings:  # the output layer multiplies by the whole table: nothing is left out
                assert strict == sm.prefill(model, gpu, 3000).time


@pytest.mark.parametrize("bad, error", [("3000", TypeError), (0, ValueError), (-5, ValueError)])
def test_the_strict_prefill_refuses_bad_input_by_name(bad, error):
    with pytest.raises(error, match="prompt_tokens"):
        sm.serving.strict_prefill_time(sm.LLAMA_3_8B, sm.H100_SXM, bad)


# -- "batching barely slows anyone while the weights are most of what a step reads" ------------
@pytest.mark.parametrize("gpu", [g for g in GPUS if sm.memory.fit(sm.LLAMA_3_8B, g).fits], ids=lambda g: g.key)
def test_while_the_caches_are_a_tenth_of_the_weights_each_user_loses_at_most_a_tenth(gpu):
    model = sm.LLAMA_3_8B
    weights = sm.weight_bytes(model.parameters)
    for cached in (0, 100, 1000, 3000):
        alone = sm.batching(model, gpu, 1, cached, price_per_hour=1.0, assumptions=LESSON_WITH_CACHE)
        for users in (2, 8, 32, 128):
            shared = sm.batching(model, gpu, users, cached, price_per_hour=1.0, assumptions=LESSON_WITH_CACHE)
            caches = sm.kv_cache_bytes(model, cached, users)
            if shared.decode.bound == "memory" and caches <= 0.1 * weights:
                assert shared.step_time <= 1.1 * alone.step_time


def test_memory_bound_is_not_enough_each_user_slows_as_the_caches_grow():
    model, h100 = sm.LLAMA_3_8B, sm.H100_SXM
    conversation = 3000 + 250 // 2
    alone = sm.batching(model, h100, 1, conversation, assumptions=LESSON_WITH_CACHE)
    shared = sm.batching(model, h100, 32, conversation, assumptions=LESSON_WITH_CACHE)
    assert alone.decode.bound == shared.decode.bound == "memory"
    # 32 caches of 3,125 tokens weigh most of what the weights do: each user is far slower.
    assert sm.kv_cache_bytes(model, conversation, 32) > 0.8 * sm.weight_bytes(model.parameters)
    assert shared.tokens_per_second_per_user < 0.6 * alone.tokens_per_second_per_user
    for page in (ROOT / "chapters" / "glossary.md", ROOT / "chapters" / "lesson-1" / "part-4-batching.md",
                 ROOT / "chapters" / "lesson-1" / "wrap-up.md"):
        text = prose(page)
        assert "while the pass stays memory-bound" not in text and "while the pass stays {term}`memory-bound`" \
            not in text, page.name
        assert "until the step turns compute-bound" not in text, page.name
        assert "small beside the weights" in text, page.name


# -- "from 420 cached tokens on, no batch turns compute-bound": Llama 3 8B on the H100 ---------
def test_the_never_compute_bound_length_is_stated_for_the_case_it_holds_for():
    assert memory_bound_from_cache(sm.LLAMA_3_8B, sm.H100_SXM) == 420
    # It differs by GPU and by model, so the page names both.
    assert memory_bound_from_cache(sm.LLAMA_3_8B, sm.CATALOG["a100-80gb"]) == 822
    assert memory_bound_from_cache(sm.MODELS["llama-3-70b"], sm.H100_SXM) == 1498
    text = prose(ROOT / "chapters" / "lesson-1" / "part-4-batching.md")
    assert "Llama 3 8B's step on the H100 turns at {glue:}`p4_turn_at_100`" in text
    assert "at real context lengths" not in text


# -- pages that state a rule name dense models ---------------------------------------------------
def test_the_pages_that_state_the_rules_say_they_are_for_dense_models():
    part_2 = prose(ROOT / "chapters" / "lesson-1" / "part-2-same-weights-different-work.md")
    assert "*dense* model" in part_2 and "mixture-of-experts" in part_2
    assert r"\text{dense model, 16-bit weights:}" in part_2
    assert "dense model" in prose(ROOT / "chapters" / "lesson-1" / "part-3-time-on-the-clock.md")
    assert "dense model" in prose(ROOT / "chapters" / "plates" / "xxiii-1-prefill-and-decode.md")
    glossary = prose(ROOT / "chapters" / "glossary.md")
    assert "a pass of a dense model reads every weight" in glossary
    assert "rebuilds the heads' keys and values" not in glossary


def test_the_glossarys_sliding_window_spans_the_catalogs_windows():
    """Gemma 3's layers look back 512 or 1,024 tokens: not "a few thousand"."""
    windows = {m.sliding_window for m in sm.MODELS.values() if m.sliding_layers and m.sliding_window < m.context_window}
    assert min(windows) == 512 < 1000 and max(windows) == 4096
    glossary = prose(ROOT / "chapters" / "glossary.md")
    assert "last few thousand tokens" not in glossary
    assert "{glue:}`glossary_window_low` to {glue:}`glossary_window_high`" in glossary

# -- "Llama 3 8B's 16-bit weights do not fit a T4" ---------------------------------------------
def test_the_t4_lists_16_gb_but_holds_15_gib_with_ecc_so_llama_3_8b_in_16_bits_does_not_fit():
    t4 = sm.CATALOG["t4"]
    assert t4.listed_memory == "16 GB" and t4.memory_bytes == 15 * 2**30   # 15,360 MiB, as nvidia-smi shows
    assert "ECC" in t4.source
    assert not sm.memory.fit(sm.LLAMA_3_8B, t4).fits
    assert sm.memory.fit(sm.LLAMA_3_8B, t4, weight_bits=8).fits
    with pytest.raises(ValueError, match="does not fit on one NVIDIA T4.*15 GiB"):
        sm.memory.fit(sm.LLAMA_3_8B, t4).require()
    # The catalog's GPUs too small for the lesson's model in 16 bits: the T4, and the laptop's (below).
    assert [g.key for g in GPUS if not sm.memory.fit(sm.LLAMA_3_8B, g).fits] == ["t4", "laptop"]


# -- "macOS lets it use two thirds of the 16 GiB, 10.67 GiB or 11.45 GB" ------------------------
APPLE = [g for g in sm.CATALOG.values() if "Apple" in g.name]


@pytest.mark.parametrize("gpu", APPLE, ids=[g.key for g in APPLE])
def test_a_macs_gpu_is_given_metals_working_set_not_the_whole_memory(gpu):
    """Part 3: a Mac's GPU uses at most Metal's recommendedMaxWorkingSetSize, as llama.cpp prints it:
    two thirds of the memory up to 32 GB, three quarters above; the listed memory stays the machine's."""
    listed = float(gpu.listed_memory.removesuffix(" GB")) * 2**30
    share = 2 / 3 if listed <= 32 * 2**30 else 3 / 4
    assert gpu.memory_bytes == pytest.approx(listed * share, rel=1e-12) and gpu.memory_bytes < listed
    assert "recommendedMaxWorkingSetSize" in sm.hardware.metal_working_set.__doc__


def test_the_laptops_gpu_cannot_hold_llama_3_8b_in_16_bits():
    laptop = sm.CATALOG["laptop"]
    assert laptop.listed_memory == "16 GB" and laptop.memory_bytes / 2**20 == pytest.approx(10_922.67, abs=0.01)
    assert "recommendedMaxWorkingSetSize" in laptop.source and units.gb(laptop.memory_bytes) == "11.45 GB"
    # llama.cpp's log: true megabytes now (ggml-metal-device.m divides by 1e6), MiB in 2023's builds.
    assert units.number(laptop.memory_bytes / 1e6, 2) == "11,453.25" and "11,453.25 MB" in laptop.source
    assert "in MiB, 10,922.67" in laptop.source
    assert units.number(laptop.memory_bytes / 2**30, 2) == "10.67"      # GiB: two thirds of 16
    assert not sm.memory.fit(sm.LLAMA_3_8B, laptop).fits          # 16.06 GB of weights
    assert sm.memory.fit(sm.LLAMA_3_8B, laptop, 8000, weight_bits=8).fits
    with pytest.raises(ValueError, match="unified_bytes"):
        sm.hardware.metal_working_set(-1)


def test_a_listed_memory_must_be_a_positive_number():
    with pytest.raises(ValueError, match="listed_memory_bytes"):
        sm.CATALOG["t4"].with_changes(listed_memory_bytes=-1)


# -- quiz question 1: every request inside Llama 3 8B's window, its answer right however it is counted --
def test_quiz_question_1s_requests_fit_the_window_and_its_answer_holds_under_every_count():
    from servingmath import quiz

    question = quiz.LESSON_1_QUESTIONS[0]
    requests = quiz.QUESTION_1_REQUESTS
    assert "Llama 3 8B on one H100" in question.prompt
    for (prompt, reply), option in zip(requests, question.options):
        assert prompt + reply <= sm.LLAMA_3_8B.context_window
        assert units.number(prompt) in option and units.number(reply) in option
    for assumptions in (LESSON, LESSON_WITH_CACHE, PLATE):
        shares = [sm.request(sm.LLAMA_3_8B, sm.H100_SXM, prompt, reply, assumptions=assumptions).decode_share
                  for prompt, reply in requests]
        assert shares.index(max(shares)) == question.correct, assumptions.label
        assert shares.index(min(shares)) == 0 and min(shares) > 0.5   # the report: prefill's largest share
    with pytest.raises(sm.models.ContextTooLong):
        quiz._prefill_share(8000, 500)


# -- the lab's Your turn, its bandwidth utilisation, and what quick mode reaches ------------------------
def test_the_lab_sets_ollama_against_a_ceiling_read_with_every_core_and_keeps_utilisation_apart():
    from servingmath import lab

    text = prose(ROOT / "chapters" / "lab" / "measure-your-machine.md")
    quick, full = lab.mode_settings("quick"), lab.mode_settings("full")
    # Ollama reads with every core or the GPU; quick mode measures one core, full mode all of them.
    assert quick.threads == 1 and full.threads == lab.usable_cpus()
    assert "Ollama reads with every core or the GPU: use full mode's bandwidth" in text
    # Bandwidth utilisation grades a memory-bound step; it does not decide whether the step is one.
    assert "It does not say whether the step is {term}`memory-bound`" in text
    assert "Near 100 %, the read is all the step costs" in text and "Near 100 %, the step is" not in text
    # Quick mode's passes stop short of the thousands of tokens where attention bends the H100's line: the
    # page says so from what the mode reached, not as a fixed sentence.
    assert max(quick.prompt_tokens) < 2000 <= max(full.prompt_tokens)
    assert "{glue:}`lab_reaches_thousands`" in text and "thousands of tokens" not in text


# -- the Ollama experiment: the context, the versions that time a whole prompt, one session's memory ---
def test_the_ollama_experiment_raises_the_context_names_the_versions_and_clears_between_requests():
    from servingmath import ollama

    wrap_up = prose(ROOT / "chapters" / "lesson-1" / "wrap-up.md")
    lab_page = prose(ROOT / "chapters" / "lab" / "measure-your-machine.md")
    # Ollama keeps 4,096 tokens by default on a small machine, and cuts a longer prompt: the page raises it
    # to a context that holds a few thousand tokens of article and its reply, inside the model's window.
    assert ollama.DEFAULT_CONTEXT_SMALL_MACHINES == 4096 < ollama.ARTICLE_CONTEXT == 8192
    assert ollama.ARTICLE_CONTEXT <= sm.MODELS["llama-3.2-1b"].context_window
    article = ollama.parse_verbose(ollama.EXAMPLES["a long article to summarise"])
    assert article.prompt_eval_count + article.eval_count <= ollama.ARTICLE_CONTEXT
    for page in (wrap_up, lab_page):
        assert "/set parameter num_ctx 8192" in page and "/clear" in page
    # Pull request 12742, first released in v0.12.7: before it, only a prompt's last batch was timed.
    assert ollama.FULL_PROMPT_TIMING_FROM == "0.12.7"
    assert "version {glue:}`ollama_version` or later {cite:p}`ollama2025promptbatches`" in wrap_up
    assert "Versions before {glue:}`lab_ollama_version` timed only the last batch" in lab_page
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    assert "pull/12742" in bib and "first released in Ollama v0.12.7" in bib


# -- problems with one right answer: the arithmetic of 2.7 and the entries plate Problem 6 counts -------
def test_problem_2_7_names_its_arithmetic_where_fp8_would_change_the_answer():
    from servingmath import variants

    statement = variants.TEMPLATES["lesson-1-part-2"].statements["2.7"]
    assert "dense 16-bit rate (`peak_flops`)" in statement and 'l40s.flops("fp8")' in statement
    assert "this problem does not use it" in statement
    l40s = sm.CATALOG["l40s"]
    ridge_16, ridge_fp8 = (sm.ridge_point(flops, l40s.memory_bandwidth) for flops in (l40s.peak_flops, l40s.flops("fp8")))
    assert 1.9 < ridge_fp8 / ridge_16 < 2.1   # "twice as high"
    intensity = sm.forward_pass(sm.LLAMA_3_8B, 300, weight_bits=8, attention="none", kv_cache=False).intensity
    assert intensity == pytest.approx(600) and units.number(ridge_fp8) == "848" and ridge_16 < intensity < ridge_fp8


def test_plate_problem_6_says_which_entries_count_where_the_new_one_would_change_the_answer():
    from servingmath import variants

    statement = variants.TEMPLATES["plate-xxiii-1"].statements["6"]
    assert "Count the caches the step reads, not the new tokens' keys and values it writes" in statement
    model = sm.MODELS["llama-3.1-8b"]
    users = variants.practice("plate-xxiii-1")["share_users"]
    weights, per_token = sm.weight_bytes(model.parameters), users * model.kv_bytes_per_token()
    read_only = -(-weights // per_token)
    with_new_entry = -(-(weights - per_token) // per_token)
    assert read_only != with_new_entry and read_only <= model.context_window


# -- the front page: a floor is "at least", and the estimated rows are called estimates ------------------
def test_the_front_page_calls_the_floor_a_floor_and_apples_rates_estimates():
    text = prose(ROOT / "index.md")
    assert "waits, as the lessons count, at least {glue:}`llama_decode_floor`" in text
    assert "close to {glue:}`llama_decode_floor`" not in text
    assert "strictly puts the floor at {glue:}`llama_strict_floor`" in text
    # The rows whose arithmetic rate is a third party's estimate: Apple publishes none for its GPUs.
    estimated = [g for g in sm.CATALOG.values() if "estimate" in g.source]
    assert [g.key for g in estimated] == ["m1-max", "m1-ultra", "m2-ultra"]
    assert all("not Apple's" in g.source for g in estimated)
    assert all("estimate" not in g.source for g in GPUS if g not in estimated)
    assert "those are third-party estimates" in text and "{glue:}`estimated_rows` Apple GPUs" in text


# -- Part 3's box and its strict floor, the convention said once, card 4 beside Part 4's note --------------
def test_part_3s_bound_is_the_strict_one_and_the_lessons_count_is_named_a_convention():
    part_3 = prose(ROOT / "chapters" / "lesson-1" / "part-3-time-on-the-clock.md")
    wrap_up = prose(ROOT / "chapters" / "lesson-1" / "wrap-up.md")
    # The bound is on the bytes a step reads (the strict floor, 4.48 ms); the whole weights are the approximation.
    # Read through the formula's layout (one line wide, or set on several lines for a phone).
    layout = re.compile(r"\\begin\{aligned\}|\\end\{aligned\}|\\quad|\\;|\\\\|&|\s")
    formula = layout.sub("", part_3)
    assert (r"\text{timepertoken}\ge\frac{\text{weightbytesread}}{\text{memorybandwidth}}"
            r"\approx\frac{\text{weightbytes}}{\text{memorybandwidth}}") in formula
    assert "time per token ≥ weight bytes read ÷ memory bandwidth" in wrap_up
    strict = sm.serving.strict_decode_floor(sm.LLAMA_3_8B, sm.H100_SXM)
    assert strict < sm.decode_step(sm.LLAMA_3_8B, sm.H100_SXM).time and units.ms(strict) == "4.48 ms"
    # Example 3.1's 49 ms rests on counting the input embedding table like every other weight: said once.
    assert part_3.count("One convention runs through the lesson's figures") == 1
    assert "{glue:}`p3_strict_prefill`" in part_3


def test_card_4_and_part_4_agree_on_what_limits_a_batch():
    part_4 = prose(ROOT / "chapters" / "lesson-1" / "part-4-batching.md")
    wrap_up = prose(ROOT / "chapters" / "lesson-1" / "wrap-up.md")
    assert "A batch is usually limited by memory before arithmetic" in part_4
    card_4 = wrap_up.split("4. Many users, one read of the weights")[1].split("```{card-footer}")[0]
    assert "while their caches are small beside the weights" in card_4
    assert "each user's cache takes memory and reading time" in card_4
    assert "compute-bound" not in card_4 and "until" not in card_4


def test_quiz_question_4_names_the_dense_model_whose_reads_an_eighth_of_a_batch_of_8_shares():
    """Eight users in one pass read the weights once: an eighth a token for a dense model. A mixture of experts
    sends the eight tokens to different experts, so the question names its model."""
    from servingmath import quiz

    question = quiz.LESSON_1_QUESTIONS[3]
    assert question.prompt.startswith("Llama 3 8B's decode on one H100 is memory-bound")
    for users in (1, 8):
        cost = sm.forward_pass(sm.LLAMA_3_8B, 1, batch=users, attention="none", kv_cache=False)
        assert cost.weight_bytes == sm.weight_bytes(sm.LLAMA_3_8B.parameters)
    assert sm.decode_step(sm.LLAMA_3_8B, sm.H100_SXM).bound == "memory"
    assert sm.serving.batching(sm.LLAMA_3_8B, sm.H100_SXM, 8).decode.bound == "memory"
