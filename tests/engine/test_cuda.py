"""CUDA path (pinned inputs, autocast, async host copies); skipped where there is no GPU."""

import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
TEXTS = ["gpu pooling", "a somewhat longer text about continuous batching on a GPU worker"] * 8


async def test_cuda_matches_cpu(minilm, splade):
    for path, tasks in ((minilm, ["embed", "token_embed"]), (splade, ["sparse"])):
        outs = {}
        for device, dtype in (("cpu", "float32"), ("cuda", "float32"), ("cuda", "bfloat16")):
            async with AsyncEngine(
                load_model(ModelConfig(path, device=device, dtype=dtype))
            ) as engine:
                outs[(device, dtype)] = await engine.encode(TEXTS, tasks)
        for a, b in zip(outs[("cpu", "float32")], outs[("cuda", "float32")], strict=True):
            for t in tasks:
                if t == "sparse":
                    torch.testing.assert_close(
                        a.sparse().to_dense(30522), b.sparse().to_dense(30522), atol=1e-3, rtol=1e-3
                    )
                else:
                    torch.testing.assert_close(a.tensor(t), b.tensor(t), atol=1e-3, rtol=1e-3)
        for a, b in zip(outs[("cpu", "float32")], outs[("cuda", "bfloat16")], strict=True):
            if "embed" in tasks:
                assert float(a.tensor("embed") @ b.tensor("embed")) > 0.999
