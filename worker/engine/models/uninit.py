"""Layers built without random initialisation, for weights that are loaded right after.

PyTorch initialises every ``nn.Linear`` / ``nn.Embedding`` at construction (kaiming uniform,
normal): about half of a MiniLM load. The meta device avoids it but, in torch 2.13,
``to_empty`` / ``normal_`` on meta tensors import ``torch._dynamo`` and sympy (~2 s). These
subclasses keep ``torch.empty`` storage (uninitialised memory) instead: load before use.
"""

from __future__ import annotations

from torch import nn


class EmptyLinear(nn.Linear):
    def reset_parameters(self) -> None:
        pass  # loaded from a checkpoint right after construction


class EmptyEmbedding(nn.Embedding):
    def reset_parameters(self) -> None:
        pass  # loaded from a checkpoint right after construction
