"""A model's description from its files only, for tests that check what the loader would
recognise without building the model (the worker always describes while loading:
``loader._load_model``)."""

from __future__ import annotations

from poolq.worker.engine.checkpoints.description import ModelConfig, ModelDescription
from poolq.worker.engine.checkpoints.kinds import Checkpoint
from poolq.worker.engine.checkpoints.loader import describe


def describe_model(name_or_path: str, config: ModelConfig | None = None) -> ModelDescription:
    """The model's description, from its files only (the model is not run or built)."""
    cfg = config or ModelConfig(model=name_or_path)
    return describe(Checkpoint.open(name_or_path), cfg)
