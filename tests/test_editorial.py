"""The claims lesson 1, the plate, the lab and the front page make in words, held by the package.

Each test here pins a sentence a reader meets: what the price does past the ridge, when
decode stays memory-bound, what a prompt costs a server, what the decode floor assumes,
and how the pages are written (objectives once, titled exercises, no promise left unkept).
"""
from __future__ import annotations

import math
import os
import collections
import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import servingmath as sm
from servingmath import units
from servingmath.serving import (LESSON_WITH_CACHE, compute_bound_batch, memory_bound_from_cache, shared_decode,
                                 strict_decode_floor, weight_bytes_read_per_token)

ROOT = Path(__file__).resolve().parent.parent
MODEL, H100 = sm.LLAMA_3_8B, sm.H100_SXM
LESSON_PAGES = sorted((ROOT / "chapters" / "lesson-1").glob("*.md"))
PARTS = sorted((ROOT / "chapters" / "lesson-1").glob("part-*.md"))
PLATE = ROOT / "chapters" / "plates" / "xxiii-1-prefill-and-decode.md"
LAB = ROOT / "chapters" / "lab" / "measure-your-machine.md"
WRAP_UP = ROOT / "chapters" / "lesson-1" / "wrap-up.md"
EDITED = [ROOT / "index.md", *LESSON_PAGES, PLATE, LAB, ROOT / "chapters" / "glossary.md"]


def prose(path):
    """A page's Markdown outside its code cells, its lines run together."""
    text = re.sub(r"```\{code-cell\}.*?\n```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"[ \t]*\n[ \t]*(?!\n)", " ", text)


# -- Part 4: the price past the ridge, and the ridge with a cache -------------------------------


def test_the_price_of_a_million_tokens_flattens_once_a_step_is_compute_bound():
    turning = compute_bound_batch(MODEL, H100)
    at_turn, crowded = (sm.batching(MODEL, H100, users) for users in (turning, 1024))
    assert turning == 296 and at_turn.decode.bound == crowded.decode.bound == "compute"
    assert math.isclose(at_turn.cost_per_million_tokens, crowded.cost_per_million_tokens, rel_tol=1e-12)
    assert units.dollars(at_turn.cost_per_million_tokens, 4) == units.dollars(crowded.cost_per_million_tokens, 4) \
        == "$0.0135"
    # Below the ridge it still falls in proportion to the users.
    one, many = sm.batching(MODEL, H100, 1), sm.batching(MODEL, H100, turning - 1)
    assert math.isclose(one.cost_per_million_tokens / many.cost_per_million_tokens, turning - 1)


def test_with_each_users_cache_read_decode_turns_later_and_then_never():
    assert compute_bound_batch(MODEL, H100, 100, assumptions=LESSON_WITH_CACHE) == 389
    assert memory_bound_from_cache(MODEL, H100) == 420
    assert compute_bound_batch(MODEL, H100, 419, assumptions=LESSON_WITH_CACHE) is not None
    for cached in (420, 500, 4000):
        assert compute_bound_batch(MODEL, H100, cached, assumptions=LESSON_WITH_CACHE) is None
    # Counting the weights alone, no cache ever keeps a batch memory-bound.
    assert memory_bound_from_cache(MODEL, H100, assumptions=sm.LESSON) is None


def test_memory_bound_from_cache_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="longest"):
        memory_bound_from_cache(MODEL, H100, longest=-1)


# -- Part 4: what a prompt costs a server -------------------------------------------------------


def test_thirty_two_prefills_cost_more_gpu_time_than_the_decode_they_share():
    workload = shared_decode(MODEL, H100, 32, 3000, 250)
    assert workload.prefill_time > workload.decode_time
    assert units.seconds(workload.prefill_time) == "1.56 s" and units.seconds(workload.decode_time) == "1.19 s"
    assert math.isclose(workload.prefill_time, 32 * sm.prefill(MODEL, H100, 3000).time)
    assert math.isclose(workload.decode_time, 249 * sm.batching(MODEL, H100, 32).step_time)


def test_with_the_caches_read_the_shared_decode_is_the_bigger_bill_and_the_page_says_so():
    """The weights alone make the prefills the bigger bill; the 32 users' caches, read each step, reverse it."""
    cached = shared_decode(MODEL, H100, 32, 3000, 250, assumptions=LESSON_WITH_CACHE)
    assert cached.decode_time > cached.prefill_time
    assert units.seconds(cached.decode_time) == "2.17 s"
    assert units.dollars(cached.cost_per_million_reply_tokens, 2) == "$0.40"
    text = prose(PARTS[3])
    assert "Here prefill is the bigger bill" not in text
    assert "{glue:}`p4_w_decode_cached`" in text and "{glue:}`p4_w_cost_cached`" in text


def test_counting_the_prompts_a_million_reply_tokens_cost_more_than_decode_alone():
    workload = shared_decode(MODEL, H100, 32, 3000, 250)
    assert units.dollars(workload.decode_only_cost_per_million, 3) == "$0.125"
    assert math.isclose(workload.decode_only_cost_per_million, sm.batching(MODEL, H100, 32).cost_per_million_tokens)
    assert workload.cost_per_million_reply_tokens > workload.decode_only_cost_per_million
    assert units.dollars(workload.cost_per_million_reply_tokens, 2) == "$0.29"
    hours = workload.gpu_time / 3600
    assert math.isclose(workload.cost_per_million_reply_tokens, H100.price_per_hour * hours / (32 * 250 / 1e6))


def test_a_short_prompt_prefilled_alone_costs_a_read_of_the_weights_like_a_decode_step():
    workload = shared_decode(MODEL, H100, 32, 20, 250)
    assert workload.prefill.bound == "memory" and workload.users == 32
    assert math.isclose(workload.prefill_time, 32 * sm.decode_step(MODEL, H100).time)
    assert workload.prefill_time < workload.decode_time


@pytest.mark.parametrize("argument, value, error", [
    ("users", 0, ValueError), ("users", 2.5, ValueError), ("prompt_tokens", -3, ValueError),
    ("reply_tokens", "many", TypeError), ("users", np.array([1, 2]), TypeError),
])
def test_shared_decode_refuses_bad_input_by_name(argument, value, error):
    given = dict(users=32, prompt_tokens=3000, reply_tokens=250)
    given[argument] = value
    with pytest.raises(error, match=argument):
        shared_decode(MODEL, H100, **given)


# -- Part 3: the summary's split and the decode floor's fine print ------------------------------


def test_the_8000_token_summary_spends_more_time_decoding_than_prefilling_however_it_is_counted():
    # The seed's 20,000-token report is past Llama 3 8B's window; 8,000 tokens and a 100-token summary fit it.
    with pytest.raises(sm.ContextTooLong, match="8,192"):
        sm.request(MODEL, H100, 20_000, 100)
    assert 8000 + 100 <= MODEL.context_window
    summary = sm.request(MODEL, H100, 8000, 100)
    assert units.ms(summary.ttft, 0) == "130 ms" and units.ms(summary.decode_time, 0) == "475 ms"
    assert summary.decode_share > 0.5 and units.percent(summary.decode_share) == "79 %"
    # ... although 98.8 % of its tokens go through prefill,
    assert units.percent(sm.serving.request_passes(8000, 100).prefill_share_of_tokens, 1) == "98.8 %"
    # and whether attention and the cache are counted at the lesson's peaks or under the plate's assumptions.
    for assumptions in (LESSON_WITH_CACHE, sm.PLATE):
        assert sm.request(MODEL, H100, 8000, 100, assumptions=assumptions).decode_share > 0.7


def test_the_strict_decode_floor_skips_the_embedding_table_looked_up_a_row_at_a_time():
    assert units.ms(strict_decode_floor(MODEL, H100)) == "4.48 ms"
    assert units.ms(sm.decode_step(MODEL, H100).time) == "4.79 ms"
    table = MODEL.vocab * MODEL.hidden * 2
    assert weight_bytes_read_per_token(MODEL) == sm.weight_bytes(MODEL.parameters) - table + MODEL.hidden * 2


def test_a_tied_embedding_table_is_read_whole_as_the_output_layer():
    tied = sm.MODELS["llama-3.2-1b"]
    assert tied.tied_embeddings
    assert weight_bytes_read_per_token(tied, 8) == sm.weight_bytes(tied.parameters, 8)


def test_the_floor_halves_with_half_the_bits():
    assert math.isclose(strict_decode_floor(MODEL, H100, 8), strict_decode_floor(MODEL, H100) / 2)


@pytest.mark.parametrize("call, argument", [
    (lambda: weight_bytes_read_per_token("llama", 16), "model"),
    (lambda: weight_bytes_read_per_token(MODEL, 0), "weight_bits"),
    (lambda: strict_decode_floor(MODEL, "h100"), "gpu"),
])
def test_the_floor_refuses_bad_input_by_name(call, argument):
    with pytest.raises((ValueError, TypeError), match=argument):
        call()


def test_rounding_the_h100_peak_to_990_changes_no_figure_part_3_prints():
    exact = sm.request(MODEL, H100, 3000, 250)
    rounded_peak = units.round_to(H100.peak_flops, 2)
    assert units.tflops(H100.peak_flops, 1) == "989.4 TFLOP/s" and units.tflops(rounded_peak) == "990 TFLOP/s"
    rounded = sm.request(MODEL, H100.with_changes(dense_flops={"bf16": rounded_peak}), 3000, 250)
    for show in (lambda r: units.ms(r.ttft, 0), lambda r: units.ms(r.tpot), lambda r: units.number(r.tokens_per_second),
                 lambda r: units.seconds(r.total_time), lambda r: units.percent(r.decode_share)):
        assert show(rounded) == show(exact)


# -- The front page's hardware table ------------------------------------------------------------


def test_the_catalog_table_shows_a_small_peak_with_its_decimal():
    table = sm.hardware.catalog_markdown()
    laptop = next(line for line in table.splitlines() if line.startswith("| Laptop"))
    assert "| 3.6 TFLOP/s |" in laptop
    assert "| 989 TFLOP/s |" in next(line for line in table.splitlines() if line.startswith("| NVIDIA H100 SXM"))


# -- How the pages are written --------------------------------------------------------------------


def test_objectives_are_listed_once_on_the_lesson_page_not_on_the_front_page_or_each_part():
    assert "What you will be able to do" in (ROOT / "chapters" / "lesson-1" / "index.md").read_text()
    for page in [ROOT / "index.md", *PARTS, WRAP_UP, PLATE, LAB]:
        assert "What you will be able to do" not in page.read_text(), page.name
    for part in PARTS:
        assert prose(part).count("By the end of this part you can") == 1, part.name


@pytest.mark.parametrize("page", sorted(p for p in (ROOT / "chapters").rglob("*.md") if "{exercise-start}" in p.read_text()),
                         ids=lambda p: p.stem)
def test_every_exercise_has_a_title(page):
    starts = re.findall(r"```\{exercise-start\}(.*)", page.read_text())
    assert starts and all(title.strip() for title in starts), page.name


def test_forward_references_are_marked_and_nothing_later_is_linked_as_if_written():
    for page in EDITED:
        text = prose(page)
        # Plate XIII.3 (the roofline) belongs to no page of this course: no page points to it or promises it.
        assert not re.search(r"(?<!X)XIII\.3", text), page.name
        # Plate XXIII.4 is written: every mention links to it.
        for mention in re.finditer(r"plate XXIII\.4[^)]*", text):
            assert "<plate-xxiii-4>" in mention.group(0), (page.name, mention.group(0))
        assert "later lessons" not in text and "next lessons" not in text, page.name
    assert "later parts bring them in" not in prose(PARTS[1])


def test_part_1s_question_about_the_summary_is_answered_in_part_3():
    assert "part-3-time-on-the-clock" in prose(PARTS[0])
    part_3 = prose(PARTS[2])
    assert "{glue:}`p3_summary_prefill`" in part_3 and "{glue:}`p3_summary_decode`" in part_3


def test_part_1_says_why_a_decode_pass_carries_one_new_token():
    assert "{term}`KV cache` ({ref}`lesson 2 <lesson-2-part-1>`)" in prose(PARTS[0])


def test_the_decode_floor_is_stated_with_what_it_assumes():
    for page in (ROOT / "index.md", PARTS[2], WRAP_UP):
        text = prose(page)
        assert "No token comes faster" not in text and "can never get" not in text, page.name
    for page in (PARTS[2], WRAP_UP):
        text = prose(page)
        assert "{glue:}`strict_floor`" in text or "{glue:}`p3_strict_floor`" in text
        assert "speculative decoding" in text and "one token a pass" in text


def test_part_4_says_the_price_flattens_and_decode_with_a_cache_stays_memory_bound():
    text = prose(PARTS[3])
    assert "still gets cheaper" not in text
    assert "{glue:}`p4_turn_at_100`" in text and "{glue:}`p4_never_from`" in text
    assert "{glue:}`p4_w_prefill`" in text and "input tokens" in text


def test_the_wrap_up_merges_its_recaps_and_leaves_ollamas_details_to_the_lab():
    text = prose(WRAP_UP)
    assert "## What to remember" in text and "The lesson on one page" not in text
    assert "One question for each part" not in text
    assert "ollama.compare" not in WRAP_UP.read_text() and "ollama.compare" in LAB.read_text()
    lab = prose(LAB)
    assert "not a measurement" in lab and "not a result" in lab


def test_the_plate_folds_its_attention_count_and_long_prompt_table_into_dropdowns():
    text = PLATE.read_text()
    assert "````{dropdown} How attention is counted" in text and "````{dropdown} Long prompts" in text


def test_part_3_keeps_rounding_choices_out_of_its_prose():
    assert "990" not in prose(PARTS[2]) and "p3_peak_rounded" not in PARTS[2].read_text()


def test_the_lab_does_not_draw_a_conclusion_from_the_edge_of_its_sweep():
    text = LAB.read_text()
    assert "did not reach the turn" in text and "{glue:}`lab_turn`" in text
    assert "{glue:}`lab_two_over_one`" in text
    # Three times past where the catalog's laptop (its GPU) turns compute-bound in 32 bits: 2 × its ridge.
    laptop = sm.CATALOG["laptop"]
    assert sm.ridge_point(laptop.peak_flops, laptop.memory_bandwidth) == 36
    assert sm.lab.mode_settings("quick").prompt_tokens[-1] >= 3 * 2 * 36


# -- The budgets, counted on the built pages --------------------------------------------------------

sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402

# The built pages are read where COURSE_SITE names them: `make book-check` sets it after its build, so there
# these checks must run, never skip. Elsewhere they skip, since `make test` builds the book while the unit
# tests run (COURSE_SITE=_build/html reads a book built before).
BUILT = Path(os.environ.get("COURSE_SITE", "/nonexistent"))
if "COURSE_SITE" in os.environ and not (BUILT / "index.html").is_file():
    raise RuntimeError(f"COURSE_SITE={BUILT} holds no built book")


def test_each_page_has_the_budget_the_course_sets():
    assert bench.prose_budget("index") == 600
    assert bench.prose_budget("chapters/lesson-1/part-3-time-on-the-clock") == 1000
    assert bench.prose_budget("chapters/lesson-1/wrap-up") == 1800
    assert bench.prose_budget("chapters/plates/xxiii-1-prefill-and-decode") == 1400
    assert bench.prose_budget("chapters/lab/measure-your-machine") == 1800
    assert bench.prose_budget("chapters/reality-check-multi-gpu") == 1600
    assert bench.prose_budget("chapters/lesson-1/index") is None and bench.prose_budget("chapters/glossary") is None


def test_bench_says_so_when_the_word_counter_is_missing(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(bench, "PROSE_WORDS", tmp_path / "absent")
    bench.print_prose_words(tmp_path)
    assert "skipped" in capsys.readouterr().out


@pytest.mark.skipif(not (BUILT / "index.html").is_file() or not bench.PROSE_WORDS.is_file(),
                    reason="needs a built book and ../shared/tools/prose-words")
def test_every_built_page_keeps_within_its_budget():
    counted = bench.prose_word_counts(BUILT)
    assert {page for page, _, budget in counted if budget} >= {"index", "chapters/lesson-1/wrap-up"}
    over = [(page, words, budget) for page, words, budget in counted if budget and words > budget]
    assert not over


@pytest.mark.skipif(not (BUILT / "index.html").is_file(), reason="needs a built book")
@pytest.mark.parametrize("page", ["index", "chapters/lesson-1/wrap-up", "chapters/plates/xxiii-1-prefill-and-decode",
                                  "chapters/lab/measure-your-machine", "chapters/reality-check-multi-gpu", *(f"chapters/lesson-1/{p.stem}" for p in PARTS)])
def test_no_raw_float_is_printed_on_a_built_page(page):
    html = (BUILT / f"{page}.html").read_text(encoding="utf-8")
    outputs = re.findall(r'<div class="cell_output.*?</div>\s*</div>', html, flags=re.S)
    for output in outputs:
        # A live chart's data (a script's JSON) is read by its script, not by the reader.
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", " ", output, flags=re.S))
        assert not re.search(r"\d\.\d{5,}", text), (page, text.strip()[:200])


@pytest.mark.skipif(not (BUILT / "index.html").is_file(), reason="needs a built book")
def test_every_figure_the_answer_leak_test_reads_is_on_the_built_page():
    """``leaks.yaml`` holds what a reader sees of each lesson's pages, computed by running them (``make
    exercises``); the answer-leak test and the students' draws read it. Each figure it holds of a page is on the
    page the book built, in its article (which holds what it folds too, so this checks one way: nothing the file
    holds is missing from the page)."""
    import json

    from check_site import article, shown_text

    from servingmath.leaks import figures

    held = json.loads((ROOT / "src/servingmath/data/leaks.yaml").read_text(encoding="utf-8"))
    texts = [(page, text) for pages in held["lessons"].values() for page, text in pages.items()]   # the front page in each
    missing, counted = [], 0
    for page, text in texts:
        built = (BUILT / page).with_suffix(".html").read_text(encoding="utf-8")
        assert 'class="bd-article"' in built, f"{page}: no article on the built page"
        shown = shown_text(article(built))
        stored = [round(value, 9) for value, *_ in figures(text)]
        counted += len(stored)
        on_page = {round(value, 9) for value, *_ in figures(shown)}
        missing += [(page, value) for value in stored if value not in on_page]
    assert len({page for page, _ in texts}) > 25 and counted > 1000 and not missing, missing[:20]


@pytest.mark.skipif(not (BUILT / "index.html").is_file(), reason="needs a built book")
def test_no_glued_text_is_quoted_on_a_built_page():
    """A string glued as it is shows as Python writes it, in quotes ('0.9.2'); glued through units.Shown it
    reads as text."""
    quoted = []
    for page in sorted(BUILT.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        quoted += [(str(page.relative_to(BUILT)), found) for found in
                   re.findall(r'<span class="output text_plain">([‘\'"][^<]*[’\'"])</span>', html)]
    assert not quoted, quoted[:10]


def test_the_front_page_names_every_lesson_and_counts_the_plates():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    front = (ROOT / "index.md").read_text(encoding="utf-8")
    lessons = re.findall(r"file: (chapters/lesson-\d+/index)", toc)
    plates = re.findall(r"file: chapters/plates/", toc)
    assert lessons and plates
    assert all(f"<{lesson}>" in front for lesson in lessons)
    spelled = {1: "One plate", 2: "Two plates", 3: "Three plates", 4: "Four plates", 5: "Five plates"}
    assert spelled[len(plates)] in front
    # Each plate is named, and a plate missing from the run of numbers is said not to be written yet.
    numbers = [int(n) for n in re.findall(r'title: "Plate XXIII\.(\d+)', toc)]
    assert all(f"XXIII.{n}" in front for n in numbers)
    for missing in sorted(set(range(1, max(numbers) + 1)) - set(numbers)):
        assert f"plate XXIII.{missing} is not yet written" in front


def test_the_benchmarks_measure_cases_the_package_computes():
    """`make bench` prints figures and asserts no time, but what it times must run: a sweep within the
    model's window, the site's charts, a short stretch of the simulator's traffic."""
    assert bench.sweep().shape == (100_000,)
    assert all("webchart" in fragment for fragment in bench.site_charts())
    assert bench.page_to_touch().is_file()


def _glued_alternatives(page: Path, name: str) -> list[str]:
    """The texts a `glue(name, units.Shown(...))` call in a page's code may show: each branch of its
    conditional, or each value of the table it looks up."""
    import ast

    import jupytext

    for cell in jupytext.read(page).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "glue" and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == name):
                choice = node.args[1].args[0]
                options = [choice.body, choice.orelse] if isinstance(choice, ast.IfExp) else choice.value.values
                return [ast.literal_eval(option) for option in options]
    raise AssertionError(f"{name} is not glued from a choice of texts in {page}")


@pytest.mark.skipif(not (BUILT / "chapters" / "reality-check.html").is_file() or not bench.PROSE_WORDS.is_file(),
                    reason="needs a built book and ../shared/tools/prose-words")
def test_reality_check_built_page_keeps_its_budget_whichever_texts_the_lab_glues(tmp_path):
    # The lab's sentences change with the machine that builds the page (its cache found or assumed,
    # its point above or below its floor): the page keeps its budget with the longest of each.
    import subprocess

    page = ROOT / "chapters" / "reality-check.md"
    html = (BUILT / "chapters" / "reality-check.html").read_text(encoding="utf-8")
    for name in ("rc_llc_source", "rc_llc_clause", "rc_lab_why"):
        # The built page curls the apostrophes.
        options = [option.replace("'", "\u2019") for option in _glued_alternatives(page, name)]
        shown = [option for option in options if option in html]
        assert len(options) >= 2 and len(shown) == 1, (name, shown)
        html = html.replace(shown[0], max(options, key=lambda option: len(option.split())), 1)
    longest = tmp_path / "reality-check.html"
    longest.write_text(html, encoding="utf-8")
    counted = subprocess.run([sys.executable, str(bench.PROSE_WORDS), str(longest)], check=True,
                             capture_output=True, text=True).stdout.split()[0]
    assert int(counted) <= bench.prose_budget("chapters/reality-check") == 1800


def test_every_page_that_cites_lists_its_references():
    """A page's citations resolve only against a bibliography on that page (each is filtered to its own page)."""
    pages = sorted((ROOT / "chapters").rglob("*.md")) + [ROOT / "index.md"]
    missing = [str(page.relative_to(ROOT)) for page in pages if "{cite:" in (text := page.read_text(encoding="utf-8"))
               and "{bibliography}" not in text]
    assert not missing, f"cite sources without a bibliography of their own: {missing}"


def test_the_bibliography_parses_and_names_each_entry_once():
    # What the book's build reads first: one broken or repeated entry stops it (sphinxcontrib-bibtex).
    import pybtex.database

    text = (ROOT / "references.bib").read_text(encoding="utf-8")
    keys = re.findall(r"^@\w+\{([^,]+),", text, flags=re.M)
    assert len(keys) == len(set(keys)), sorted(key for key in keys if keys.count(key) > 1)
    parsed = pybtex.database.parse_string(text, "bibtex")
    assert sorted(parsed.entries) == sorted(keys)


def test_no_page_cites_two_sources_under_one_name_and_year():
    # In the text an entry reads "Zhong et al., 2024": the first author's last name ("et al." past two authors, "and"
    # for two) and the year. Two entries that differ only past the first author read the same on one page, and no
    # "a" or "b" tells them apart; a reader cannot tell which source a claim rests on.
    import pybtex.database

    entries = pybtex.database.parse_file(ROOT / "references.bib").entries

    def shown(key):
        entry, people = entries[key], entries[key].persons.get("author", [])
        names = [" ".join(person.last_names) or str(person) for person in people]
        who = names[0] + (" et al." if len(names) > 2 else f" and {names[1]}" if len(names) == 2 else "")
        return who, entry.fields.get("year")

    clashes = []
    for page in (ROOT / "chapters").rglob("*.md"):
        cited = {key.strip() for keys in re.findall(r"\{cite:[pt]\}`([^`]+)`", page.read_text(encoding="utf-8"))
                 for key in keys.split(",")}
        for key, other in itertools.combinations(sorted(cited), 2):
            same_authors = entries[key].persons.get("author") == entries[other].persons.get("author")
            if shown(key) == shown(other) and not same_authors:
                clashes.append((page.name, key, other, shown(key)))
    assert not clashes, clashes


def test_no_two_entries_print_the_same_label():
    # The author-year label is the author and year alone (a "NVIDIA25"), with "a" and "b" added only where one
    # page cites two entries that share them (sorted by title). Two entries each cited alone on different pages
    # print one label for two sources, and the build's -W stops on sphinxcontrib-bibtex's "duplicate label".
    import pybtex.database

    entries = pybtex.database.parse_file(ROOT / "references.bib").entries

    def base(key):
        entry = entries[key]
        return " and ".join(str(person) for person in entry.persons.get("author", [])), entry.fields.get("year")

    printed = collections.defaultdict(set)
    for page in (ROOT / "chapters").rglob("*.md"):
        cited = {key.strip() for keys in re.findall(r"\{cite:[pt]\}`([^`]+)`", page.read_text(encoding="utf-8"))
                 for key in keys.split(",")}
        shared = collections.defaultdict(list)
        for key in cited:
            shared[base(key)].append(key)
        for label, keys in shared.items():
            ordered = sorted(keys, key=lambda key: entries[key].fields.get("title", ""))
            for suffix, key in zip("abcdefgh" if len(keys) > 1 else [""], ordered):
                printed[label + (suffix,)].add(key)
    clashes = {label: sorted(keys) for label, keys in printed.items() if len(keys) > 1}
    assert not clashes, clashes

