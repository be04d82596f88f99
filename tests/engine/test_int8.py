"""int8 linear layers against a hand-written quantization formula (not against themselves):
per-output-channel symmetric int8 weights, per-tensor asymmetric uint8 activations chosen from
the input's min and max, integer products, fp32 result; SmoothQuant's column scaling."""

import pytest
import torch
from torch import nn

from poolq.worker.engine.cpu import int8
from poolq.worker.engine.cpu.int8 import Int8Linear, input_absmax, quantize_linears
from tests.cpu import VNNI

torch.manual_seed(0)


def reference_int8_linear(x: torch.Tensor, lin: nn.Linear, reduce_range: bool) -> torch.Tensor:
    """The formula, in float64: what an int8 kernel with these scales must compute."""
    x, w = x.detach().double(), lin.weight.detach().double()
    s_w = w.abs().amax(1) / 127  # [out]
    w_hat = torch.clamp(torch.round(w / s_w[:, None]), -128, 127) * s_w[:, None]
    qmax = 127 if reduce_range else 255
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / qmax
    zp = round(-lo / scale)
    xq = torch.clamp(torch.round(x / scale) + zp, 0, qmax)
    x_hat = (xq - zp) * scale
    return x_hat @ w_hat.T + lin.bias.detach().double()


def activation_quantum(x: torch.Tensor, reduce_range: bool) -> float:
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    return (hi - lo) / (127 if reduce_range else 255)


FULL_RANGE = pytest.param(
    False,
    marks=pytest.mark.skipif(not VNNI, reason="no VNNI: 8-bit activations saturate (tests/cpu.py)"),
)


@pytest.mark.parametrize("reduce_range", [FULL_RANGE, True])
@pytest.mark.parametrize(("t", "k", "n"), [(37, 64, 96), (300, 384, 1152)])
def test_int8_linear_computes_the_quantization_formula(t, k, n, reduce_range):
    lin = nn.Linear(k, n)
    x = torch.randn(t, k) * 2 + 0.3
    got = Int8Linear(lin, reduce_range=reduce_range)(x)
    want = reference_int8_linear(x, lin, reduce_range)
    exact = lin(x).detach().double()
    # the kernel is the formula up to fp32 rounding: x / scale computed in fp32 lands a few
    # activations (of t * k) one quantum away from the float64 formula's rounding
    kernel_err = float((got.double() - want).abs().max())
    bound = 3 * activation_quantum(x, reduce_range) * float(lin.weight.detach().abs().max())
    assert got.dtype == torch.float32 and got.shape == (t, n)
    assert kernel_err <= bound, f"kernel vs formula {kernel_err:.2e} > 3 quanta {bound:.2e}"
    rel = (got.double() - exact).norm() / exact.norm()
    assert 1e-4 < rel < (0.03 if reduce_range else 0.015), f"relative error vs fp32 {rel:.4f}"


def test_smoothing_scales_columns_and_divides_the_input():
    lin = nn.Linear(48, 20)
    x = torch.randn(64, 48)
    x[:, 5] *= 30  # an outlier channel, as after BERT's LayerNorms
    amax = x.abs().amax(0)
    layer = Int8Linear(lin, input_absmax=amax, alpha=0.7, reduce_range=not VNNI)
    s = amax.pow(0.7) / lin.weight.abs().amax(0).pow(0.3)  # SmoothQuant's formula
    torch.testing.assert_close(layer.input_scale, 1 / s)
    smoothed = nn.Linear(48, 20)
    with torch.no_grad():
        smoothed.weight.copy_(lin.weight * s)
        smoothed.bias.copy_(lin.bias)
    want = reference_int8_linear(x / s, smoothed, reduce_range=not VNNI)
    got = layer(x)
    bound = 3 * activation_quantum(x / s, not VNNI) * float(smoothed.weight.detach().abs().max())
    assert float((got.double() - want).abs().max()) <= bound
    # and the outlier no longer sets the activation scale: closer to fp32 than unsmoothed
    exact = lin(x)
    plain = Int8Linear(lin, reduce_range=not VNNI)(x)
    assert (got - exact).norm() < 0.5 * (plain - exact).norm()


def test_input_absmax_records_per_channel_maxima_of_every_linear():
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Sequential(nn.Linear(16, 4)))
    a, b = torch.randn(5, 8), torch.randn(7, 8) * 3
    with input_absmax(model) as seen:
        model(a)
        model(b)
    assert set(seen) == {"0", "2.0"}
    torch.testing.assert_close(seen["0"], torch.cat([a, b]).abs().amax(0))
    hidden = torch.cat([model[1](model[0](a)), model[1](model[0](b))])
    torch.testing.assert_close(seen["2.0"], hidden.abs().amax(0))
    model(a)  # hooks are gone once the block exits
    assert seen["0"].shape == (8,)


def test_quantize_linears_replaces_every_linear_in_place_and_keeps_other_modules():
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.Sequential(nn.Linear(16, 4)))
    x = torch.randn(3, 8)
    with input_absmax(model) as seen:
        before = model(x)
    assert quantize_linears(model, seen) == 2
    assert isinstance(model[0], Int8Linear) and isinstance(model[2][0], Int8Linear)
    assert isinstance(model[1], nn.LayerNorm)
    assert model[0].input_scale is not None
    after = model(x)
    assert after.shape == before.shape and not torch.equal(after, before)
    assert torch.nn.functional.cosine_similarity(after, before).min() > 0.99
    assert quantize_linears(model) == 0  # nothing left to convert


def test_weight_scales_are_absmax_over_127_per_output_channel(monkeypatch):
    w = torch.tensor([[1.0, -2.54, 0.5], [0.0, 0.0, 0.0], [0.127, 0.0, -0.1]])
    torch.testing.assert_close(int8.weight_scales(w), torch.tensor([0.02, 1e-12 / 127, 0.001]))
