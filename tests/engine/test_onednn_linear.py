"""oneDNN linears with fused epilogues against the unfused formula: ``post(x W^T + b)`` and
``x W^T + b + residual``; the fp32 CPU loader uses them, other precisions do not."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.variants import onednn_linear
from benchmarks.variants.onednn_linear import OneDNNLinear, fuse_onednn, post_op_for
from poolq.worker.engine.models.hidden_act import GELUTanh

pytestmark = pytest.mark.skipif(not onednn_linear.available(), reason="torch built without oneDNN")


@pytest.mark.parametrize(
    ("act", "formula"),
    [
        (nn.GELU(), F.gelu),
        (GELUTanh(), lambda y: F.gelu(y, approximate="tanh")),
        (nn.ReLU(), torch.relu),
        (nn.SiLU(), None),  # no exact epilogue: not fused
    ],
)
def test_fused_epilogues_compute_the_unfused_formula(act, formula):
    lin = nn.Linear(48, 96)
    x = torch.randn(37, 48)
    post = post_op_for(act)
    assert (post is None) == (formula is None)
    if post is None:
        return
    with torch.no_grad():
        torch.testing.assert_close(
            OneDNNLinear(lin, post)(x), formula(x @ lin.weight.T + lin.bias), atol=1e-5, rtol=1e-5
        )


def test_plus_adds_the_residual_inside_the_gemm_call():
    lin = nn.Linear(64, 32)
    x, r = torch.randn(50, 64), torch.randn(50, 32)
    with torch.no_grad():
        want = x @ lin.weight.T + lin.bias + r
        torch.testing.assert_close(OneDNNLinear(lin).plus(x, r), want, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(OneDNNLinear(lin)(x), want - r, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_the_benchmark_variant_fuses_and_equals_the_loaded_model(minilm, splade):
    """Not in poolq's hot path (measured no faster): the loader never fuses; the benchmark
    variant does, with the same outputs."""
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model

    fp32 = load_model(ModelConfig(minilm, dtype="float32", device="cpu"))
    assert type(fp32.encoder.layers[0].qkv) is not OneDNNLinear  # the loader never fuses
    ids = torch.tensor([101, 7592, 1010, 2088, 999, 102, 101, 2023, 102])
    with torch.inference_mode():
        want = fp32.encoder(ids, [6, 3])
        fuse_onednn(fp32)
        got = fp32.encoder(ids, [6, 3])
    layer = fp32.encoder.layers[0]
    assert isinstance(layer.qkv, OneDNNLinear) and (layer.ffn_in.post, layer.ffn_in.algorithm) == (
        "gelu",
        "none",
    )
    assert isinstance(layer.act, nn.Identity)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    splade_model = load_model(ModelConfig(splade, dtype="float32"))
    fuse_onednn(splade_model)
    assert isinstance(splade_model.pooler.poolers_by_task["sparse"].mlm_head.decoder, OneDNNLinear)
