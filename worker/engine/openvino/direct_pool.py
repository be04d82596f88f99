"""``embed`` pooling of one padded OpenVINO call, on numpy, for the encode that imports no torch
(``direct_plan.py``). The same arithmetic as the torch poolers it stands in for
(``pooling/methods.py`` CLS/LAST/MEAN, ``pooling/heads.py`` ``EmbeddingHead`` without a
projector): fp32 throughout, the mean a sum over a text's real rows divided by their count,
then ``x / max(|x|_2, 1e-12)`` where normalised. Only the summation order differs (a batched
matmul against the mask here, ``index_add_`` there): the same vectors to float32 rounding,
checked against the torch backend (``tests/engine/test_openvino_direct.py``).

Why a second definition rather than the torch poolers on host tensors: this path exists so that
``poolq encode --backend openvino`` starts without torch (``import torch`` costs more than the
whole encode of a small folder). Only the three ``embed`` methods are repeated here; every other
task (``sparse``, ``token_embed``, classifier heads) has the one torch definition in
``pooling/``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NORM_EPS = 1e-12  # torch.nn.functional.normalize's eps


def pool_rows(hidden: np.ndarray, lens: Sequence[int], method: str) -> np.ndarray:
    """``hidden`` ``[rows, L, H]`` fp32 (rows right-padded), ``lens`` each row's real tokens
    (>= 1) -> ``[rows, H]`` fp32: the first row (CLS), the last real row (LAST) or the mean of
    the real rows (MEAN)."""
    rows, length, _ = hidden.shape
    n = np.asarray(lens, dtype=np.int64)
    if n.shape != (rows,) or (rows and (n.min() < 1 or n.max() > length)):
        raise ValueError(f"lens: expected {rows} counts in 1..{length}, got {list(lens)}")
    if method == "CLS":
        return np.array(hidden[:, 0], dtype=np.float32)
    if method == "LAST":
        return np.array(hidden[np.arange(rows), n - 1], dtype=np.float32)
    if method != "MEAN":
        raise ValueError(f"pooling method: expected CLS, LAST or MEAN, got {method!r}")
    mask = (np.arange(length)[None, :] < n[:, None]).astype(np.float32)  # [rows, L]
    sums = np.matmul(mask[:, None, :], hidden)[:, 0]  # [rows, 1, L] @ [rows, L, H] -> [rows, H]
    return (sums / n[:, None].astype(np.float32)).astype(np.float32, copy=False)


def normalized(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` ``[n, H]`` divided by their L2 norm (at least ``NORM_EPS``)."""
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norm, np.float32(NORM_EPS))).astype(np.float32, copy=False)
