"""int8 against fp32, output by output: the figures the quality gate checks against its floors.

:class:`QualityMeter` takes pairs of outputs of the same text (fp32 reference, int8) as they
come, so ``poolq encode --report-quality`` measures a whole file without keeping it in memory:

* ``embed``: cosine per text -> ``min_cosine``, ``mean_cosine``;
* ``token_embed``: cosine per token row -> ``min_cosine``, ``mean_cosine``;
* ``sparse``: overlap of the top-k terms (shared / k, k = ``min(topk, fp32 non-zeros)``) ->
  ``min_topk_overlap``, ``mean_topk_overlap``; relative L2 error of the weights
  ``|w8 - w32| / |w32|`` -> ``mean_weight_error``, ``max_weight_error``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from poolq.worker.engine.checkpoints.description import Int8Floors
from poolq.worker.engine.cpu.int8_report import Check, QualityReport
from poolq.worker.pooling.outputs import PoolerOutput, SparseEmbedding

GATED_TASKS = ("embed", "token_embed", "sparse")
__all__ = ["GATED_TASKS", "Check", "QualityMeter", "QualityReport"]


@dataclass
class _Stat:
    n: int = 0
    total: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf

    def add(self, values: torch.Tensor) -> None:
        if values.numel() == 0:
            return
        v = values.double()
        self.n += int(v.numel())
        self.total += float(v.sum())
        self.lo = min(self.lo, float(v.min()))
        self.hi = max(self.hi, float(v.max()))

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan


@dataclass
class QualityMeter:
    floors: Int8Floors
    vocab_size: int = 0  # sparse outputs' width
    texts: int = 0
    _stats: dict[tuple[str, str], _Stat] = field(default_factory=dict)

    def _stat(self, task: str, figure: str) -> _Stat:
        return self._stats.setdefault((task, figure), _Stat())

    def add(self, ref: dict[str, PoolerOutput], got: dict[str, PoolerOutput]) -> None:
        """One text's outputs: fp32 ``ref`` and int8 ``got``, task -> output."""
        self.texts += 1
        for task, r in ref.items():
            g = got[task]
            if task in ("embed", "token_embed"):
                assert isinstance(r, torch.Tensor) and isinstance(g, torch.Tensor)
                if r.shape != g.shape:
                    raise ValueError(
                        f"{task}: fp32 shape {tuple(r.shape)} vs int8 {tuple(g.shape)}"
                    )
                cos = F.cosine_similarity(
                    r.float().reshape(-1, r.shape[-1]), g.float().reshape(-1, g.shape[-1]), dim=-1
                )
                self._stat(task, "cosine").add(cos)
            elif task == "sparse":
                assert isinstance(r, SparseEmbedding) and isinstance(g, SparseEmbedding)
                self._add_sparse(r, g)

    def _add_sparse(self, r: SparseEmbedding, g: SparseEmbedding) -> None:
        width = max(
            self.vocab_size,
            int(r.indices.max()) + 1 if r.indices.numel() else 0,
            int(g.indices.max()) + 1 if g.indices.numel() else 0,
        )
        a, b = r.to_dense(width).double(), g.to_dense(width).double()  # [V]
        nnz = int((a > 0).sum())
        if nnz == 0:
            return  # nothing to compare: fp32 gives the text no term
        k = min(self.floors.topk, nnz)
        top_a = set(a.topk(k).indices.tolist())
        top_b = set(b.topk(k).indices.tolist())
        self._stat("sparse", "topk_overlap").add(torch.tensor([len(top_a & top_b) / k]))
        err = (a - b).norm() / a.norm()
        self._stat("sparse", "weight_error").add(err.reshape(1))

    def report(self) -> QualityReport:
        f = self.floors
        checks: list[Check] = []
        if (s := self._stats.get(("embed", "cosine"))) is not None:
            checks += [
                Check("embed", "min_cosine", s.lo, f.min_cosine),
                Check("embed", "mean_cosine", s.mean, f.mean_cosine),
            ]
        if (s := self._stats.get(("token_embed", "cosine"))) is not None:
            checks += [
                Check("token_embed", "min_cosine", s.lo, f.token_min_cosine),
                Check("token_embed", "mean_cosine", s.mean, f.token_mean_cosine),
            ]
        if (s := self._stats.get(("sparse", "topk_overlap"))) is not None:
            e = self._stats[("sparse", "weight_error")]
            checks += [
                Check("sparse", "min_topk_overlap", s.lo, f.min_topk_overlap),
                Check("sparse", "mean_topk_overlap", s.mean, f.mean_topk_overlap),
                Check("sparse", "mean_weight_error", e.mean, f.mean_weight_error, False),
                Check("sparse", "max_weight_error", e.hi, f.max_weight_error, False),
            ]
        return QualityReport(self.texts, checks)
