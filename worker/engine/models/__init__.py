"""The model registry: one module per architecture family, one entry each (``registry.py``).

``architecture_for(model_type)`` is how the loader, the pooler builder and the checkpoint heads
find what a checkpoint's family can do; ``NATIVE_MODEL_TYPES`` is the one list of model types
the packed engine runs natively (everything else goes to ``fallback.py``).
"""

from __future__ import annotations

from poolq.worker.engine.models.bert import BERT
from poolq.worker.engine.models.distilbert import DISTILBERT
from poolq.worker.engine.models.llama import LLAMA
from poolq.worker.engine.models.modernbert import MODERNBERT
from poolq.worker.engine.models.registry import Architecture, PoolingName

ARCHITECTURES: tuple[Architecture, ...] = (BERT, DISTILBERT, LLAMA, MODERNBERT)

_BY_MODEL_TYPE: dict[str, Architecture] = {
    mt: arch for arch in ARCHITECTURES for mt in arch.model_types
}
NATIVE_MODEL_TYPES: tuple[str, ...] = tuple(_BY_MODEL_TYPE)

# decoders that only the padded transformers fallback runs (recognised as causal: LAST pooling)
FALLBACK_CAUSAL_TYPES: tuple[str, ...] = ("gemma", "gemma2", "gemma3_text", "gpt2", "phi3")


def architecture_for(model_type: object) -> Architecture | None:
    """The registry entry of a ``model_type``; ``None`` when no native family covers it."""
    return _BY_MODEL_TYPE.get(str(model_type))


def require_architecture(model_type: object, what: str) -> Architecture:
    arch = architecture_for(model_type)
    if arch is None:
        raise ValueError(
            f"no native {what} for model_type {model_type!r}; native model types: "
            f"{', '.join(NATIVE_MODEL_TYPES)}"
        )
    return arch


__all__ = [
    "ARCHITECTURES",
    "FALLBACK_CAUSAL_TYPES",
    "NATIVE_MODEL_TYPES",
    "PoolingName",
    "architecture_for",
    "require_architecture",
]
