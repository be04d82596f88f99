import pytest
import torch
from torch import nn
from torch.testing import assert_close

from poolq.worker.pooling import ClassifierHead, EmbeddingHead, PoolingParams, TokenEmbedHead
from poolq.worker.pooling.activations import activation_from_name, classification_activation
from tests.pooling.builders import seeded_linear


def l2(x):
    return x / x.norm(dim=-1, keepdim=True)


def test_embedding_head_projects_truncates_then_normalises():
    proj = seeded_linear(6, 5, 0)
    head = EmbeddingHead(5, proj, is_matryoshka=True)
    pooled = torch.randn(4, 6, dtype=torch.bfloat16)
    params = [
        PoolingParams("embed"),
        PoolingParams("embed", dimensions=3),
        PoolingParams("embed", use_activation=False),
        PoolingParams("embed", dimensions=2, use_activation=False),
    ]
    out = head(pooled, params)
    full = proj(pooled.float())  # head dtype is fp32
    assert all(o.dtype == torch.float32 for o in out)
    assert_close(out[0], l2(full[0]))
    assert_close(out[1], l2(full[1, :3]))  # truncate BEFORE normalising
    assert abs(float(out[1].norm()) - 1) < 1e-6
    assert_close(out[2], full[2])
    assert_close(out[3], full[3, :2])


def test_embedding_head_model_default_without_normalisation():
    head = EmbeddingHead(3, normalize=False)
    x = torch.randn(2, 3)
    out = head(x, [PoolingParams("embed"), PoolingParams("embed", use_activation=True)])
    assert_close(out[0], x[0])
    assert_close(out[1], l2(x[1]))


def test_classifier_head_calibration_and_activation():
    lin = seeded_linear(4, 3, 0)
    head = ClassifierHead(
        lin, classification_activation(None, 3), num_labels=3, logit_mean=0.5, logit_sigma=2.0
    )
    x = torch.randn(2, 4)
    out = head(x, [PoolingParams("classify"), PoolingParams("classify", use_activation=False)])
    logits = (lin(x) - 0.5) / 2.0
    assert_close(out[0], torch.softmax(logits[0], -1))
    assert_close(out[1], logits[1])


@pytest.mark.parametrize(
    ("problem_type", "num_labels", "expected"),
    [
        (None, 1, nn.Sigmoid),  # a reranker: one label + sigmoid
        (None, 4, nn.Softmax),
        ("single_label_classification", 4, nn.Softmax),
        ("multi_label_classification", 4, nn.Sigmoid),
        ("regression", 1, nn.Identity),
    ],
)
def test_activation_from_problem_type(problem_type, num_labels, expected):
    assert isinstance(classification_activation(problem_type, num_labels), expected)


def test_only_torch_nn_activations_allowed():
    assert isinstance(activation_from_name("torch.nn.modules.activation.Sigmoid"), nn.Sigmoid)
    assert isinstance(activation_from_name("torch.nn.Tanh"), nn.Tanh)
    assert isinstance(activation_from_name("Identity"), nn.Identity)
    for bad in (
        "os.system",
        "builtins.eval",
        "subprocess.Popen",
        "torch.nn.Linear",
        "my.module.Sigmoid",
        "torch.load",
    ):
        with pytest.raises(ValueError, match="not allowed"):
            activation_from_name(bad)
    with pytest.raises(ValueError, match="unknown problem_type"):
        classification_activation("ranking", 2)


def test_token_embed_head_projection_and_normalisation():
    proj = seeded_linear(6, 4, 0, bias=False)
    head = TokenEmbedHead(4, proj)
    rows = [torch.randn(3, 6), torch.randn(2, 6), torch.randn(1, 6)]
    params = [
        PoolingParams("token_embed"),
        PoolingParams("token_embed"),
        PoolingParams("token_embed", use_activation=False),
    ]
    out = head(rows, params)
    assert_close(out[0], l2(proj(rows[0])))
    assert_close(out[1], l2(proj(rows[1])))
    assert_close(out[2], proj(rows[2]))
    assert head([], []) == []


def test_token_embed_head_drops_special_tokens_and_first():
    head = TokenEmbedHead(6, skip_token_ids=[101, 102, 0], drop_first_token=False)
    assert head.requires_token_ids
    rows = [torch.randn(5, 6), torch.randn(2, 6)]
    ids = [torch.tensor([101, 7, 8, 102, 0]), torch.tensor([101, 102])]
    out = head(rows, [PoolingParams("token_embed")] * 2, ids)
    assert_close(out[0], l2(rows[0][[1, 2]]))
    assert out[1].shape == (0, 6)
    head2 = TokenEmbedHead(6, drop_first_token=True)
    out2 = head2(rows, [PoolingParams("token_embed")] * 2)
    assert_close(out2[0], l2(rows[0][1:]))
