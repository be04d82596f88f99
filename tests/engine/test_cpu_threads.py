"""The thread count applied: explicit counts win and are restored, the governor's choice reaches
the thread that runs each CPU forward, and pooled outputs do not depend on the count."""

import asyncio

import numpy as np
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.cpu import cpu_threads
from poolq.worker.engine.cpu.cpu_budget import CpuSample, plan
from poolq.worker.engine.cpu.cpu_threads import CpuProbe, ThreadGovernor
from poolq.worker.engine.engine import AsyncEngine
from tests.texts import varied_texts


def test_explicit_count_wins_no_governor_and_the_count_comes_back(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    probe = CpuProbe.start()
    with probe.applied(3, 0.1) as budget:
        assert (budget.threads, budget.source) == (3, "threads")
        assert torch.get_num_threads() == 3 and cpu_threads._GOVERNOR is None
    assert torch.get_num_threads() == before
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # (POOLQ_THREADS reaches it as the setting)
    with probe.applied(None, 0.1) as budget:
        assert (budget.threads, budget.source) == (1, "OMP_NUM_THREADS")
        assert torch.get_num_threads() == 1 and cpu_threads._GOVERNOR is None
    assert torch.get_num_threads() == before


def test_automatic_count_measures_and_governs(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    with CpuProbe.start().applied(None, 0.1) as budget:
        assert budget.source == "auto" and budget.elsewhere is not None  # measured (Linux)
        assert 1 <= budget.threads <= budget.affinity
        assert torch.get_num_threads() == budget.threads
        assert cpu_threads._GOVERNOR is not None
    assert cpu_threads._GOVERNOR is None and torch.get_num_threads() == before
    with CpuProbe(set(range(4)), None).applied(None, 0.1) as budget:  # nothing measurable
        assert budget.elsewhere is None and cpu_threads._GOVERNOR is None


class _Fixed(ThreadGovernor):
    """A governor that has decided: ``threads``."""

    def __init__(self, threads: int) -> None:
        super().__init__(plan({0}, None, 0.0, None, None), lambda: None)
        self.threads = threads

    def tick(self) -> int:
        return self.threads


async def _encode(model, texts, tasks):
    async with AsyncEngine(model, max_batch_tokens=512) as engine:
        return await engine.encode(texts, tasks)


def test_the_forward_runs_with_the_governed_count_and_outputs_do_not_change(
    minilm, splade, monkeypatch
):
    dense, sparse = load_model(ModelConfig(minilm)), load_model(ModelConfig(splade))
    seen: list[int] = []
    dense.encoder.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    texts = varied_texts(24)
    results = {}
    for threads in (1, 2):
        monkeypatch.setattr(cpu_threads, "_GOVERNOR", _Fixed(threads))
        seen.clear()
        results[threads] = (
            asyncio.run(_encode(dense, texts, ["embed", "token_embed"])),
            asyncio.run(_encode(sparse, texts, ["sparse"])),
        )
        assert seen and set(seen) == {threads}, seen  # every forward, on the compute thread
    (d1, s1), (d2, s2) = results[1], results[2]
    for a, b in zip(d1, d2, strict=True):
        np.testing.assert_allclose(a["embed"], b["embed"], atol=1e-5)
        np.testing.assert_allclose(a["token_embed"], b["token_embed"], atol=1e-5)
    for a, b in zip(s1, s2, strict=True):  # scattered: a weight at ~0 may be kept by one only
        np.testing.assert_allclose(_scatter(a["sparse"]), _scatter(b["sparse"]), atol=1e-5)


def _scatter(sp) -> np.ndarray:
    w = np.zeros(30522, np.float32)
    w[sp.indices.numpy()] = sp.values.numpy()
    return w


def test_cpu_sample_reads_this_machine():
    s = CpuSample.now({0})
    assert s is not None and s.busy_s > 0 and s.own_s > 0
