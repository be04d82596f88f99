"""Heads: what to do with the pooled rows. Every head computes in FP32 (``head_dtype``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from poolq.worker.pooling.activations import apply_rowwise
from poolq.worker.pooling.params import PoolingParams


def _check_dimensions(
    params: PoolingParams,
    output_dim: int,
    matryoshka_dims: Sequence[int] | None,
    is_matryoshka: bool | None,
) -> None:
    """A model that lists its Matryoshka dimensions allows only those; one that declares
    ``is_matryoshka: false`` allows none; otherwise any width ``1..output_dim``."""
    d = params.dimensions
    if d is None:
        return
    if matryoshka_dims:
        if d not in matryoshka_dims:
            raise ValueError(
                f"dimensions={d} is not allowed by this model; allowed: {sorted(matryoshka_dims)}"
            )
    elif is_matryoshka is False:
        raise ValueError(
            f"dimensions={d}: this model declares it does not support Matryoshka truncation; "
            f"allowed: only the full dimension {output_dim} (omit dimensions)"
        )
    elif not 1 <= d <= output_dim:
        raise ValueError(f"dimensions={d} out of range; allowed: 1..{output_dim}")


class EmbeddingHead(nn.Module):
    """stack -> FP32 -> projector -> per-request Matryoshka truncation -> L2 normalisation
    (unless the request sets ``use_activation=False``)."""

    def __init__(
        self,
        output_dim: int,
        projector: nn.Module | None = None,
        *,
        normalize: bool = True,
        is_matryoshka: bool | None = None,
        matryoshka_dims: Sequence[int] | None = None,
        head_dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.output_dim = output_dim
        self.projector = projector.to(head_dtype) if projector is not None else None
        self.normalize = normalize
        self.is_matryoshka = is_matryoshka
        self.matryoshka_dims = tuple(matryoshka_dims) if matryoshka_dims else None
        self.head_dtype = head_dtype

    def check_params(self, params: PoolingParams) -> None:
        _check_dimensions(params, self.output_dim, self.matryoshka_dims, self.is_matryoshka)

    def forward(self, pooled: torch.Tensor, params: Sequence[PoolingParams]) -> list[torch.Tensor]:
        x = pooled.to(self.head_dtype)  # [n, H]
        if self.projector is not None:
            x = self.projector(x)  # [n, D]
        if x.shape[0] == 0:
            return []
        norm = [self.normalize if p.use_activation is None else p.use_activation for p in params]
        dims = [p.dimensions for p in params]
        if all(d is None for d in dims):
            return list(apply_rowwise(x, _L2Normalize(), norm).unbind(0))
        out = []
        for row, d, do_norm in zip(x.unbind(0), dims, norm, strict=True):
            row = row[:d] if d is not None else row  # truncate before normalising
            out.append(F.normalize(row, p=2, dim=-1) if do_norm else row)
        return out


class _L2Normalize(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, p=2, dim=-1)


class ClassifierHead(nn.Module):
    """linear -> optional calibration ``(x - logit_mean) / logit_sigma`` -> activation
    (per request: ``use_activation=False`` returns the calibrated logits)."""

    def __init__(
        self,
        classifier: nn.Module,
        activation: nn.Module,
        *,
        num_labels: int,
        logit_mean: float | None = None,
        logit_sigma: float | None = None,
        head_dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.classifier = classifier.to(head_dtype)
        self.activation = activation
        self.num_labels = num_labels
        self.logit_mean = logit_mean
        self.logit_sigma = logit_sigma
        self.head_dtype = head_dtype

    def forward(self, pooled: torch.Tensor, params: Sequence[PoolingParams]) -> list[torch.Tensor]:
        logits = self.classifier(pooled.to(self.head_dtype))  # [n, num_labels]
        if self.logit_mean is not None:
            logits = logits - self.logit_mean
        if self.logit_sigma is not None:
            logits = logits / self.logit_sigma
        enabled = [p.use_activation is not False for p in params]
        return list(apply_rowwise(logits, self.activation, enabled).unbind(0))


class ScoreHead(nn.Module):
    """One score per request (``score``): ``classifier`` maps the pooled rows to one logit each
    (``[n, 1]``: a cross-encoder's one label, an LLM reranker's "yes" less "no" logit), then
    ``activation`` (per request ``use_activation=False``: the logit). Each output is a
    ``float32`` scalar."""

    output_dim = 1

    def __init__(
        self, classifier: nn.Module, activation: nn.Module, head_dtype: torch.dtype = torch.float32
    ) -> None:
        super().__init__()
        self.classifier = classifier.to(head_dtype)
        self.activation = activation
        self.head_dtype = head_dtype

    def forward(self, pooled: torch.Tensor, params: Sequence[PoolingParams]) -> list[torch.Tensor]:
        logits = self.classifier(pooled.to(self.head_dtype))  # [n, 1]
        if logits.shape[-1] != 1:
            raise ValueError(f"a score head needs one logit per request, got {logits.shape[-1]}")
        enabled = [p.use_activation is not False for p in params]
        return list(apply_rowwise(logits, self.activation, enabled)[:, 0].unbind(0))


class TokenOdds(nn.Module):
    """The LM head for two tokens only: ``hidden [n, H]`` -> ``[n, 1]``, the ``true`` token's
    logit less the ``false`` token's (their rows of the vocabulary projection, ``[2, H]``,
    false then true)."""

    def __init__(self, rows: torch.Tensor) -> None:
        super().__init__()
        if rows.dim() != 2 or rows.shape[0] != 2:
            raise ValueError(f"expected the false and true rows [2, H], got {tuple(rows.shape)}")
        self.rows = nn.Parameter(rows.detach().clone(), requires_grad=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = hidden @ self.rows.T.to(hidden.dtype)  # [n, 2]: false, true
        return (logits[:, 1] - logits[:, 0]).unsqueeze(1)


class TokenEmbedHead(nn.Module):
    """Per-token vectors: optional row filtering (a leading CLS, special/padding/punctuation
    token ids) -> FP32 -> optional projection (ColBERT ``Linear(768, 128)``) -> L2 normalisation.

    All requests' rows are projected in one matmul, then split back per request.
    """

    def __init__(
        self,
        output_dim: int,
        projector: nn.Module | None = None,
        *,
        normalize: bool = True,
        skip_token_ids: Sequence[int] = (),
        drop_first_token: bool = False,
        head_dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.output_dim = output_dim
        self.projector = projector.to(head_dtype) if projector is not None else None
        self.normalize = normalize
        self.skip_token_ids = frozenset(int(t) for t in skip_token_ids)
        self.drop_first_token = drop_first_token
        self.head_dtype = head_dtype

    @property
    def requires_token_ids(self) -> bool:
        return bool(self.skip_token_ids)

    def _keep_mask_cpu(
        self,
        n_rows: int,
        token_ids_cpu: torch.Tensor | None,
        request_keep_cpu: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if request_keep_cpu is not None:
            if request_keep_cpu.shape != (n_rows,):
                raise ValueError(
                    f"row mask: expected shape ({n_rows},), got {tuple(request_keep_cpu.shape)}"
                )
            keep = request_keep_cpu.to(torch.bool).clone()
        else:
            keep = torch.ones(n_rows, dtype=torch.bool)
        if self.drop_first_token and n_rows:
            keep[0] = False
        if self.skip_token_ids:
            assert token_ids_cpu is not None, "token ids are required to skip tokens"
            skip = torch.tensor(sorted(self.skip_token_ids), dtype=token_ids_cpu.dtype)
            keep &= ~torch.isin(token_ids_cpu, skip)
        return keep

    def forward(
        self,
        rows: Sequence[torch.Tensor],
        params: Sequence[PoolingParams],
        token_ids_cpu: Sequence[torch.Tensor] | None = None,
        keep_rows_cpu: Sequence[torch.Tensor | None] | None = None,
    ) -> list[torch.Tensor]:
        """``rows``: per request ``[n_i, H]``. ``keep_rows_cpu``: per request, ``None`` or a host
        bool ``[n_i]`` of rows to keep (an input form's row skipping), combined with the head's
        own filters. Returns per request ``[k_i, D]`` (``k_i <= n_i`` rows kept)."""
        if not rows:
            return []
        x = torch.cat(list(rows)) if len(rows) > 1 else rows[0]  # [R, H]
        counts = [int(r.shape[0]) for r in rows]
        row_masks = list(keep_rows_cpu) if keep_rows_cpu is not None else [None] * len(rows)
        if self.drop_first_token or self.skip_token_ids or any(m is not None for m in row_masks):
            masks = [
                self._keep_mask_cpu(c, None if token_ids_cpu is None else token_ids_cpu[i], m)
                for i, (c, m) in enumerate(zip(counts, row_masks, strict=True))
            ]
            keep_cpu = torch.cat(masks)  # [R] bool
            x = x.index_select(
                0, torch.nonzero(keep_cpu).squeeze(1).to(x.device, non_blocking=True)
            )
            counts = [int(m.sum()) for m in masks]
        x = x.to(self.head_dtype)
        if self.projector is not None:
            x = self.projector(x)  # [R, D]
        norm = [self.normalize if p.use_activation is None else p.use_activation for p in params]
        if all(norm):
            x = F.normalize(x, p=2, dim=-1)
        return [
            F.normalize(chunk, p=2, dim=-1) if do_norm and not all(norm) else chunk
            for chunk, do_norm in zip(torch.split(x, counts), norm, strict=True)
        ]
