"""What the engine knows of one checkpoint kind (``encoder``, ``colbert``, ``masked_lm``, ...), as
one frozen entry (vLLM's model registry), and the ordered lookup over the entries: the first that
claims a checkpoint names it, so the catch-all (``encoder``) comes last. Adding a kind: see
``worker/engine/README.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from poolq.worker.engine.checkpoints.description import ModelConfig
from poolq.worker.engine.checkpoints.input_forms import InputForms
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.pair_forms import PairForm
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.pooling import DispatchPooler
from poolq.worker.pooling.tasks import PoolingTask


@dataclass(frozen=True)
class CheckpointKind:
    name: str  # the description's ``kind``; what ``Architecture.kinds`` lists
    # does this checkpoint hold this kind? (asked only if no kind ahead of it claimed it)
    recognize: Callable[[Checkpoint], bool]
    # the tasks it serves and each one's output size, in the order a description lists them
    tasks: Callable[[Checkpoint], dict[PoolingTask, int]]
    # its poolers, keyed by task (a DispatchPooler), from the loaded weights and tokenizer
    build_poolers: Callable[[PoolerInputs], DispatchPooler]
    # the ``embed`` task's method (CLS / MEAN / LAST) under the user's choices; None: no embed
    pooling: Callable[[Checkpoint, ModelConfig], str] | None = None
    # whether the sentence-transformers Normalize module decides ``normalize`` (else True)
    st_normalize: bool = False
    # whether ``max_seq_length`` is a model limit (PyLate rewrites it per call: not one)
    st_max_length: bool = True
    # whether its heads are read from the main weights even when the padded transformers
    # fallback runs the backbone (the native path loads them anyway)
    head_weights: bool = False
    # query / document forms (ColBERT) from the folder, tokenizer and max length; None: one form
    input_forms: Callable[[Checkpoint, TextTokenizer, int], InputForms] | None = None
    # how it reads a (query, text) pair (the score task) from the folder, tokenizer, max length
    # and the user's choices; None: it reads no pairs
    pair_form: Callable[[Checkpoint, TextTokenizer, int, ModelConfig], PairForm] | None = None


class KindRegistry:
    """The kinds in precedence order: the first whose ``recognize`` holds names a checkpoint."""

    def __init__(self, kinds: Iterable[CheckpointKind]) -> None:
        self._kinds: tuple[CheckpointKind, ...] = ()
        for kind in kinds:
            if kind.name in self.names:
                raise ValueError(f"checkpoint kind {kind.name!r} is already registered")
            self._kinds = (*self._kinds, kind)

    @property
    def kinds(self) -> tuple[CheckpointKind, ...]:
        return self._kinds

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self._kinds)

    def recognize(self, ck: Checkpoint) -> CheckpointKind:
        for kind in self._kinds:
            if kind.recognize(ck):
                return kind
        raise ValueError(
            f"model {ck.model_id!r}: no checkpoint kind recognises it; kinds: {list(self.names)}"
        )

    def by_name(self, name: str) -> CheckpointKind:
        for kind in self._kinds:
            if kind.name == name:
                return kind
        raise ValueError(f"no checkpoint kind {name!r}; kinds: {list(self.names)}")
