"""Frozen descriptions: what the user asks of a model (:class:`ModelConfig`) and what the
checkpoint is (:class:`ModelDescription`, known without running the model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # types only: a start that imports no torch reads Int8Floors from here
    from poolq.worker.engine.checkpoints.input_forms import InputForms
    from poolq.worker.engine.checkpoints.pair_forms import PairForm
    from poolq.worker.pooling.tasks import PoolingTask

# a registered checkpoint kind's name (worker/engine/checkpoints/kinds/): "encoder", "decoder", "colbert",
# "masked_lm", "classifier", "bge_m3", or one added there
ModelKind = str
# "auto": bf16 where the CPU computes it natively (AVX512-BF16, AMX), else fp32; bf16 (or fp16)
# on CUDA. "int8": int8 linear layers on the CPU, behind the quality gate (engine/cpu/int8_gate.py).
Precision = Literal["auto", "float32", "bfloat16", "float16", "int8"]
PRECISIONS: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16", "int8")


@dataclass(frozen=True)
class Int8Floors:
    """Where the int8 quality gate refuses a model: int8 vs fp32 on the calibration sample.
    Cosines are per text (``embed``) or per token row (``token_embed``); the sparse figures
    compare each text's top ``topk`` terms (overlap = shared terms / k) and the relative L2
    error of its weights ``|w8 - w32| / |w32|``."""

    min_cosine: float = 0.97
    mean_cosine: float = 0.99
    token_min_cosine: float = 0.90  # a minimum over thousands of token rows, not texts
    token_mean_cosine: float = 0.99
    topk: int = 32
    min_topk_overlap: float = 0.75
    mean_topk_overlap: float = 0.90
    mean_weight_error: float = 0.08
    max_weight_error: float = 0.15

    @classmethod
    def from_dict(cls, data: dict[str, float]) -> Int8Floors:
        allowed = sorted(cls.__dataclass_fields__)
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ValueError(f"int8_floors: unknown keys {unknown}; expected some of {allowed}")
        bad = [k for k, v in data.items() if isinstance(v, bool) or not isinstance(v, int | float)]
        if bad:
            raise ValueError(f"int8_floors: expected numbers, got {[(k, data[k]) for k in bad]}")
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ModelConfig:
    """Explicit choices; each ``None`` falls back to sentence-transformers metadata, then to the
    architecture's default."""

    model: str
    pooling: Literal["CLS", "MEAN", "LAST"] | None = None
    normalize: bool | None = None
    max_length: int | None = None
    dtype: Precision | None = None  # None: "auto"
    int8_floors: Int8Floors = Int8Floors()
    device: str | None = None  # None: CUDA when present, else CPU
    splade_mode: Literal["max", "sum"] = "max"
    # vLLM removes CLS/SEP; SPLADE and sentence-transformers keep them
    splade_remove_special: bool = False
    token_embed_skip_special: bool = False  # drop CLS/SEP/PAD rows from multi-vectors
    is_matryoshka: bool | None = None
    matryoshka_dims: tuple[int, ...] | None = None
    # an LLM reranker's [false, true] tokens ("no", "yes"), for a causal LM whose files do not
    # say it is one (kinds/lm_reranker.py); vLLM's name
    classifier_from_token: tuple[str, str] | None = None
    # the instruction an LLM reranker's prompt carries (None: the model card's)
    score_instruction: str | None = None


def token_pair(tokens: object) -> tuple[str, str]:
    """``classifier_from_token`` checked: two non-empty tokens, [false, true]."""
    if (
        not isinstance(tokens, list | tuple)
        or len(tokens) != 2
        or not all(isinstance(t, str) and t for t in tokens)
    ):
        raise ValueError(
            f'classifier_from_token: expected two tokens [false, true] such as ["no", "yes"], '
            f"got {tokens!r}"
        )
    return (tokens[0], tokens[1])


@dataclass(frozen=True)
class ModelDescription:
    model_id: str
    path: str
    kind: ModelKind
    architecture: str
    model_type: str
    hidden_size: int
    vocab_size: int
    max_length: int
    pooling: str | None  # the embed task's method (CLS/MEAN/LAST), if the model embeds
    normalize: bool
    supported_tasks: tuple[PoolingTask, ...]
    output_dims: tuple[tuple[PoolingTask, int], ...]
    is_matryoshka: bool | None
    matryoshka_dims: tuple[int, ...] | None
    prompts: tuple[tuple[str, str], ...] = ()
    default_prompt_name: str | None = None
    native_encoder: bool = True
    # ColBERT query/document forms (marker, lengths, expansion, skiplist); None: one form only
    input_forms: InputForms | None = None
    # how a (query, text) pair is written (the score task's models); None: it reads no pairs
    pair_form: PairForm | None = None

    def output_dim(self, task: PoolingTask) -> int:
        dims = dict(self.output_dims)
        if task not in dims:
            raise ValueError(
                f"model {self.model_id!r} has no task {task!r}; supported: {list(self.supported_tasks)}"
            )
        return dims[task]

    def prompt(self, name: str | None) -> str:
        """The text prefix for a prompt name (sentence-transformers ``prompts``); '' if none."""
        prompts = dict(self.prompts)
        name = self.default_prompt_name if name is None else name
        if name is None:
            return ""
        if name not in prompts:
            raise ValueError(
                f"model {self.model_id!r} has no prompt {name!r}; available: {sorted(prompts)}"
            )
        return prompts[name]
