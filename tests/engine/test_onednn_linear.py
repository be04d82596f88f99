"""oneDNN linears with fused epilogues against the unfused formula: ``post(x W^T + b)`` and
``x W^T + b + residual``; the fp32 CPU loader uses them, other precisions do not."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from poolq.worker.engine import onednn_linear
from poolq.worker.engine.hidden_act import GELUTanh
from poolq.worker.engine.onednn_linear import OneDNNLinear, post_op_for

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
def test_the_fp32_cpu_loader_fuses_and_other_precisions_do_not(minilm, splade, monkeypatch):
    from poolq.worker.engine import loader
    from poolq.worker.engine.loader import ModelConfig, load_model

    monkeypatch.setattr(loader, "FUSE_ONEDNN", True)  # off by default (measured no faster)
    fp32 = load_model(ModelConfig(minilm, dtype="float32", device="cpu"))
    layer = fp32.encoder.layers[0]
    assert isinstance(layer.qkv, OneDNNLinear) and (layer.ffn_in.post, layer.ffn_in.algorithm) == (
        "gelu",
        "none",
    )
    assert isinstance(layer.act, nn.Identity)
    head = (
        load_model(ModelConfig(splade, dtype="float32")).pooler.poolers_by_task["sparse"].mlm_head
    )
    assert isinstance(head.decoder, OneDNNLinear)
    bf16 = load_model(ModelConfig(minilm, dtype="bfloat16", device="cpu"))
    assert type(bf16.encoder.layers[0].qkv) is not OneDNNLinear  # autocast needs real Linears
