"""A start whose OpenVINO model is already in the disk cache builds no torch encoder.

With ``backend = "openvino"`` and a model the backend runs, the loader asks :func:`lazy_start`
first: the checkpoint's tensors come as :class:`LazyWeights`, read one at a time on first use,
so building the poolers reads their heads only (a SPLADE MLM head, ColBERT's projection, a
classifier) and never the backbone. Then :func:`cached_encoder`: when the converted fp32 model
is cached (``cache.py``), the encoder is an :class:`UnbuiltEncoder` that ``apply_backend``
replaces by the compiled model; else the loader reads the weights whole and builds the torch
encoder to convert. ``auto`` always builds it: it compares with torch, and may keep
it.

:class:`LazyWeights` has the names :func:`checkpoint.load_weights` gives (legacy LayerNorm names
normalised) and the same tensors; only safetensors checkpoints (one file or an index of shards)
are read this way (a ``pytorch_model.bin`` is read whole, and builds the encoder).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import safe_open
from torch import nn

from poolq.worker.engine.checkpoints.checkpoint import _rename_legacy

if TYPE_CHECKING:
    from poolq.worker.engine.checkpoints.description import ModelDescription
    from poolq.worker.pooling import DispatchPooler


class LazyWeights(Mapping[str, torch.Tensor]):
    """``name -> tensor`` over safetensors files; a tensor is read when first looked up."""

    def __init__(self, files: list[Path]) -> None:
        self._where: dict[str, tuple[str, str]] = {}
        for f in files:
            with safe_open(str(f), "pt") as st:
                for k in st.keys():  # noqa: SIM118 - safe_open is not a mapping
                    self._where[_rename_legacy(k)] = (str(f), k)
        self._read: dict[str, torch.Tensor] = {}

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self._read:
            file, key = self._where[name]
            with safe_open(file, "pt") as st:
                self._read[name] = st.get_tensor(key)
        return self._read[name]

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    @property
    def read(self) -> tuple[str, ...]:
        """The names read so far (tests: a cached start reads the heads only)."""
        return tuple(self._read)


def lazy_weights(path: Path) -> LazyWeights | None:
    """The checkpoint's main weights, read on demand; None when they are no safetensors."""
    single = path / "model.safetensors"
    index = path / "model.safetensors.index.json"
    if single.is_file():
        return LazyWeights([single])
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return LazyWeights([path / s for s in shards])
    return None


class UnbuiltEncoder(nn.Module):
    """The torch encoder a cached OpenVINO start did not build; ``apply_backend`` replaces it
    before any forward."""

    causal = False

    def forward(self, *args: object, **kwargs: object) -> torch.Tensor:
        raise RuntimeError("the torch encoder was not built: the OpenVINO backend runs this model")


def lazy_start(
    path: Path, desc: ModelDescription, device: torch.device, precision: str
) -> LazyWeights | None:
    """Weights read on demand when backend ``openvino`` runs this model; else None (the loader
    reads them whole and builds the torch encoder)."""
    from poolq.worker.engine.openvino.backend import why_not
    from poolq.worker.engine.process_options import process_options

    if process_options().backend != "openvino" or why_not(desc, device, precision) is not None:
        return None
    return lazy_weights(path)


def cached_encoder(desc: ModelDescription, pooler: DispatchPooler) -> UnbuiltEncoder | None:
    """An :class:`UnbuiltEncoder` when the converted fp32 model for this pooler is in the disk
    cache (int8 is quantized from it, or read from the cache too); else None."""
    from poolq.worker.engine.openvino import cache
    from poolq.worker.engine.openvino.backend import graph_head

    key = cache.cache_key(desc.path, sparse_head=graph_head(pooler), precision="float32")
    return UnbuiltEncoder() if cache.has(key) else None
