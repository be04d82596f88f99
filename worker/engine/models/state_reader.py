"""Reading a checkpoint's state dict into a packed module: the one loader every family uses.

A checkpoint's keys carry a prefix that depends on how it was saved (``bert.``, ``model.``,
``0.auto_model.``, none): it is found from an anchor key (``embeddings.word_embeddings.weight``,
``embed_tokens.weight``), the shortest key ending in it. The module names each weight it needs
without the prefix; missing keys are collected (all of them reported at once, not the first),
then shapes are checked against the module's own, and only then is anything copied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor


def key_prefix(state: Mapping[str, Tensor], anchor: str) -> str:
    """The prefix before ``anchor`` in the shortest key ending in it."""
    anchors = [k for k in state if k == anchor or k.endswith("." + anchor)]
    if not anchors:
        raise ValueError(f"state dict has no key ending in {anchor!r}")
    return min(anchors, key=len)[: -len(anchor)]


class StateReader:
    """``read(dst, name)`` pairs a module tensor with the checkpoint tensor ``prefix + name``;
    :meth:`load` checks every pair and copies them."""

    def __init__(self, state: Mapping[str, Tensor], anchor: str) -> None:
        self.state = state
        self.prefix = key_prefix(state, anchor)
        self.missing: list[str] = []
        self.pairs: list[tuple[Tensor, Tensor]] = []  # (module tensor, checkpoint tensor)

    def get(self, name: str) -> Tensor | None:
        """The checkpoint tensor ``prefix + name`` (None, recorded as missing, when absent)."""
        key = self.prefix + name
        if key in self.state:
            return self.state[key]
        self.missing.append(key)
        return None

    def read(self, dst: Tensor, name: str) -> None:
        src = self.get(name)
        if src is not None:
            self.pairs.append((dst, src))

    def read_cat(self, dst: Tensor, names: Sequence[str]) -> None:
        """``dst`` is the checkpoint tensors ``names`` stacked along dim 0 (a fused projection)."""
        found = [self.get(n) for n in names]
        if all(t is not None for t in found):
            self.pairs.append((dst, torch.cat(found)))  # type: ignore[arg-type]

    def load(self) -> None:
        """Copy every pair, or raise naming the missing keys or the mismatched shapes."""
        if self.missing:
            raise ValueError(
                f"state dict is missing {len(self.missing)} required keys: {self.missing[:8]}"
            )
        bad = [
            f"{tuple(src.shape)} vs {tuple(dst.shape)}"
            for dst, src in self.pairs
            if src.shape != dst.shape
        ]
        if bad:
            raise ValueError(f"state dict shapes do not match the config: {bad[:5]}")
        with torch.no_grad():
            for dst, src in self.pairs:
                dst.copy_(src)
