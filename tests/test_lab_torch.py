"""The lab's PyTorch path: the same model, the same weights, the same answers.

Skipped where PyTorch is not installed: the course does not need it, and the pinned
build environment leaves it out.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed; the lab's torch path is optional")

import servingmath as sm  # noqa: E402 (after the skip)
from servingmath import lab, lab_torch  # noqa: E402

SMALL = sm.Model("small", layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=160, vocab=97,
                 tied_embeddings=True)


@pytest.fixture(scope="module")
def decoders():
    numpy_decoder = lab.Decoder.random(SMALL, seed=3)
    return numpy_decoder, numpy_decoder.on(lab_torch.TorchOps("cpu", torch.float32))


def test_torch_model_gives_the_numpy_models_logits(decoders):
    numpy_decoder, torch_decoder = decoders
    tokens = np.random.default_rng(7).integers(0, SMALL.vocab, 11)
    expected = numpy_decoder.forward(tokens, numpy_decoder.new_cache(11))
    logits = torch_decoder.forward(tokens, torch_decoder.new_cache(11))
    assert isinstance(logits, torch.Tensor) and tuple(logits.shape) == (11, SMALL.vocab)
    np.testing.assert_allclose(torch_decoder.ops.to_numpy(logits), expected, rtol=1e-4, atol=1e-5)
    assert torch_decoder.parameters == SMALL.parameters


def test_torch_prefill_equals_torch_decode_steps(decoders):
    _, torch_decoder = decoders
    tokens = np.random.default_rng(8).integers(0, SMALL.vocab, 9)
    at_once = torch_decoder.forward(tokens, torch_decoder.new_cache(9))
    cache = torch_decoder.new_cache(9)
    steps = torch.cat([torch_decoder.forward(tokens[i:i + 1], cache) for i in range(9)])
    torch.testing.assert_close(at_once, steps, rtol=1e-4, atol=1e-5)


def test_sixteen_bit_ops_count_two_bytes_a_number():
    ops = lab_torch.TorchOps("cpu", torch.float16)
    assert ops.weight_bits == 16 and ops.bytes_per_number == 2 and "float16" in ops.name


def test_on_a_processor_the_prediction_uses_the_measured_machine():
    processor = lab.this_machine(10e9, 100e9, memory_bytes=16e9)
    ops = lab_torch.best_ops()
    assert ops.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    if ops.device.type == "cpu":
        assert lab_torch.machine_for(ops, processor, lab.settings("quick")) is processor


def test_torch_timing_and_measurements_run_through_the_same_functions(decoders):
    _, torch_decoder = decoders
    sweep = lab.time_prefill(torch_decoder, [1, 8], repeats=2)
    assert np.all(sweep.seconds > 0)
    assert lab.time_decode(torch_decoder, 5, steps=2).seconds > 0
    ops = torch_decoder.ops
    assert lab.measure_bandwidth(8e6, 2, ops).per_second > 1e8
    assert lab.measure_matmul_flops(128, 2, ops).work == 2 * 128**3


def test_torch_threads_are_limited_inside_the_context_only():
    ops = lab_torch.TorchOps("cpu", torch.float32)
    before = torch.get_num_threads()
    with ops.threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
