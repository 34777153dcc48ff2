"""Every number the course publishes, computed by the package and compared at the
precision the prose prints it. A change to any constant behind them turns one red."""
import pytest

import servingmath as sm
from servingmath import units
from servingmath.roofline import LESSON, PLATE
from servingmath.serving import batching, decode_step, prefill, request

M = sm.LLAMA_3_8B
G = sm.H100_SXM


@pytest.fixture(scope="module")
def lesson_request():
    return request(M, G, prompt_tokens=3000, reply_tokens=250)


# -- lesson 1 ------------------------------------------------------------------------
def test_example_1_1_and_your_turn_passes():
    assert sm.passes_for_request(2000, 300) == 300
    assert sm.passes_for_request(500, 1000) == 1000


def test_llama_3_8b_parameters_and_weight_bytes():
    assert M.parameters == 8_030_261_248
    assert units.billions(M.parameters) == "8.03 billion"
    assert units.gb(sm.weight_bytes(M.parameters, 16)) == "16.06 GB"


def test_example_2_1_prefill_flops_and_intensity():
    assert units.trillions(sm.linear_flops(M.parameters, 3000)) == "48.2 T"
    prefill_pass = sm.forward_pass(M, 3000, attention="none", kv_cache=False)
    decode_pass = sm.forward_pass(M, 1, attention="none", kv_cache=False)
    assert units.number(prefill_pass.intensity) == "3,000"
    assert units.number(decode_pass.intensity) == "1"


def test_h100_ridge_and_dense_versus_sparse():
    assert units.number(sm.ridge_point(G.peak_flops, G.memory_bandwidth)) == "295"
    assert units.number(G.peak_flops / 1e12, 1) == "989.4"
    assert units.number(G.listed_with_sparsity / 1e12) == "1,979"
    assert G.listed_with_sparsity == pytest.approx(2 * G.peak_flops, rel=1e-3)


def test_your_turn_2_short_prompt_is_memory_bound():
    short = prefill(M, G, 200)
    assert units.number(short.cost.intensity) == "200"
    assert short.bound == "memory"
    assert prefill(M, G, 3000).bound == "compute"


def test_example_3_1(lesson_request):
    assert units.ms(lesson_request.ttft, 0) == "49 ms"
    assert units.ms(lesson_request.tpot) == "4.79 ms"
    assert units.number(lesson_request.tokens_per_second) == "209"
    assert units.seconds(lesson_request.total_time) == "1.24 s"
    assert units.percent(lesson_request.decode_share) == "96 %"
    assert lesson_request.passes == 250


def test_example_3_1_prefill_does_12x_the_arithmetic_in_under_a_twentieth_of_the_time(lesson_request):
    decode_flops = lesson_request.decode_steps * lesson_request.decode.cost.flops
    assert units.times(lesson_request.prefill.cost.flops / decode_flops) == "12×"
    assert lesson_request.ttft < lesson_request.decode_time / 20


def test_your_turn_3_eight_bit_weights():
    assert units.number(1 / decode_step(M, G, weight_bits=8).time) == "417"


@pytest.mark.parametrize("users, per_hour, cost_exact, cost_round", [
    (1, "750,000", "$3.995", "$4.00"),
    (8, "6,000,000", "$0.499", "$0.50"),
    (32, "24,000,000", "$0.125", "$0.12"),
])
def test_example_4_1_and_your_turn_4(users, per_hour, cost_exact, cost_round):
    economics = batching(M, G, users)
    assert units.number(units.round_to(economics.tokens_per_hour, 2)) == per_hour
    assert units.dollars(economics.cost_per_million_tokens, 3) == cost_exact
    assert units.dollars(economics.cost_per_million_tokens, 2) == cost_round


def test_32_users_is_24_million_tokens_an_hour_and_32_times_cheaper():
    one, many = batching(M, G, 1), batching(M, G, 32)
    assert units.millions(many.tokens_per_hour) == "24 million"
    assert units.number(one.cost_per_million_tokens / many.cost_per_million_tokens) == "32"
    assert many.decode.bound == "memory"


def test_where_you_meet_it_16_gb_at_3_35_tb_s():
    assert units.ms(decode_step(M, G).time, 1) == "4.8 ms"


# -- plate XXIII.1 -------------------------------------------------------------------
def test_plate_weights():
    assert units.gb(sm.weight_bytes(M.parameters), 1) == "16.1 GB"


def test_plate_prefill_of_1024_tokens():
    pass_1024 = prefill(M, G, 1024, assumptions=PLATE)
    assert units.ms(pass_1024.time, 1) == "28.4 ms"
    assert units.ms(pass_1024.time_per_token, 4) == "0.0277 ms"


def test_plate_decode_over_a_1000_token_cache():
    step = decode_step(M, G, cached_tokens=1000, assumptions=PLATE)
    per_token_prefill = prefill(M, G, 1024, assumptions=PLATE).time_per_token
    assert units.ms(step.time) == "6.24 ms"
    assert units.number(step.time / per_token_prefill) == "225"
    assert units.number(units.round_to(1 / step.time, 2)) == "160"


def test_plate_per_token_prefill_time_rises_again_past_a_few_thousand_tokens():
    per_token = [prefill(M, G, n, assumptions=PLATE).time_per_token for n in (1024, 2048, 4096, 8192)]
    assert per_token[2] > min(per_token[:2])
    assert per_token[1] < per_token[2] < per_token[3]  # up to Llama 3 8B's window of 8,192 tokens


def test_the_lesson_ignores_what_the_plate_counts():
    assert LESSON.compute_efficiency == LESSON.bandwidth_efficiency == 1 and LESSON.overhead == 0
    assert (PLATE.compute_efficiency, PLATE.bandwidth_efficiency, PLATE.overhead) == (0.6, 0.8, 0.2e-3)
