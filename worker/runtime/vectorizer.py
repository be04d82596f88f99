"""Turns chunk texts into a profile's named vectors and labels: one engine per model, every
vector (and label) that names the model served by the same forward pass of each chunk; a
classifier on a vector model's backbone reads that model's forward (``labels.py``). Queries go
to the same engines, in the query lane (``lanes.py``): the engine's query slot runs them beside
ingestion; so does the reranker (``reranking.py``), on an engine of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from tokenizers import Encoding

from poolq.sinks.points import SparseValues, VectorValue
from poolq.sinks.schema import VectorSpec
from poolq.worker.chunks.chunking import Chunk, Chunker, TokenCounter
from poolq.worker.chunks.context import CONTEXT_TOKENS
from poolq.worker.config.profile import Profile
from poolq.worker.config.versions import profile_version
from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.checkpoints.description import ModelDescription
from poolq.worker.engine.checkpoints.fingerprints import cached_fingerprint
from poolq.worker.engine.checkpoints.loader import load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.pooling import PoolingParams, SparseEmbedding
from poolq.worker.pooling.token_pooling import pool_tokens
from poolq.worker.runtime.labels import LabelReader, label_plan, read_labels
from poolq.worker.runtime.reranking import Reranker, start_reranker


@dataclass
class Encoded:
    """One chunk's outputs: its named vectors and its payload's ``labels`` (name -> value)."""

    vectors: dict[str, VectorValue]
    labels: dict[str, Any] = field(default_factory=dict)


@dataclass
class Vectorizer:
    profile: Profile
    engines: dict[str, AsyncEngine]  # profile model name -> engine (chunks go through each)
    chunker: Chunker
    version: str = ""  # profile version (worker/config/versions.py), recorded on every point
    # per engine (model name): the label readers of its classify output (labels.py)
    label_readers: dict[str, list[LabelReader]] = field(default_factory=dict)
    reranker: Reranker | None = None  # the profile's [reranker] (reranking.py)
    _parsed_chunker: Chunker | None = field(default=None, repr=False)  # chunk_parsed_many's

    @classmethod
    async def start(
        cls, profile: Profile, *, device: str | None = None, max_batch_tokens: int | None = None
    ) -> Vectorizer:
        rerank = profile.reranker
        names = profile.models + ([rerank.model] if rerank is not None else [])
        configs = {}
        for model in dict.fromkeys(names):
            cfg = profile.model_config(model)
            if device is not None and cfg.device is None:
                cfg = replace(cfg, device=device)
            configs[model] = cfg
        # start-up: the models load side by side (tokenizer, weights and torch ops release the
        # GIL), and their folders are fingerprinted meanwhile (cached: fingerprints.py)
        fingerprinting = {
            m: asyncio.create_task(asyncio.to_thread(cached_fingerprint, configs[m].model))
            for m in profile.models
        }
        loaded = await asyncio.gather(*(asyncio.to_thread(load_model, c) for c in configs.values()))
        models = dict(zip(configs, loaded, strict=True))
        for model, pooling_model in models.items():
            for v in profile.vectors_of(model):
                try:
                    pooling_model.pooler.validate([v.params()], [f"vector {v.name!r}"])
                except ValueError as exc:
                    raise ValueError(f"profile: model {model!r}: {exc}") from None
        readers = label_plan(profile, models)
        engines: dict[str, AsyncEngine] = {}
        for model in profile.models:
            if model in readers or profile.vectors_of(model):  # else: read on another's forward
                engines[model] = await AsyncEngine(
                    models[model], max_batch_tokens=max_batch_tokens
                ).start()
        reranker = await start_reranker(rerank, models[rerank.model]) if rerank else None
        counters = [
            chunk_counter(e.description, e.model.tokenizer.backend) for e in engines.values()
        ]
        chunker = Chunker(
            counters,
            max_tokens=profile.chunk_max_tokens,
            overlap_tokens=profile.chunk_overlap_tokens,
        )
        fingerprints = {m: await task for m, task in fingerprinting.items()}
        version = profile_version(profile, fingerprints)
        return cls(profile, engines, chunker, version, readers, reranker)

    async def stop(self) -> None:
        engines = list(self.engines.values())
        if self.reranker is not None:
            engines.append(self.reranker.engine)
        await asyncio.gather(*(e.stop() for e in engines))

    def _params(self, model: str) -> list[PoolingParams]:
        """What ``model``'s engine computes for each chunk: its vectors, then its labels'
        ``classify`` scores."""
        params = [v.params() for v in self.profile.vectors_of(model)]
        if model in self.label_readers:
            params.append(PoolingParams("classify"))
        return params

    def vector_specs(self) -> list[VectorSpec]:
        specs = []
        for v in self.profile.vectors:
            desc = self.engines[v.model].description
            size = None if v.task == "sparse" else (v.dimensions or desc.output_dim(v.task))
            specs.append(VectorSpec(v.name, v.kind, size, desc.model_id))  # type: ignore[arg-type]
        return specs

    def last_served(self, group: str) -> float | None:
        """When ``group`` last moved in an engine (time.monotonic(); ``progress_of``), if ever."""
        times = [t for e in self.engines.values() if (t := e.progress_of(group)) is not None]
        return max(times) if times else None

    def forget_group(self, group: str) -> None:
        for e in self.engines.values():
            e.forget_group(group)

    def model_ids(self) -> dict[str, str]:
        return {v.name: v.model for v in self.profile.vectors}

    def chunk(self, text: str) -> list[Chunk]:
        return self.chunker.chunk(text)

    def chunk_many(self, texts: Sequence[str]) -> list[list[Chunk]]:
        """:meth:`chunk` of each text (one tokenizer call for all: the GIL released for it)."""
        return self.chunker.chunk_many(texts)

    def chunk_parsed_many(self, texts: Sequence[str]) -> list[list[Chunk]]:
        """The sections of parsed files, cut to leave room for each chunk's context (its title
        and headings, which the models read with it: ``chunks/context.py``)."""
        if self._parsed_chunker is None:
            self._parsed_chunker = self.chunker.narrower(CONTEXT_TOKENS)
        return self._parsed_chunker.chunk_many(texts)

    async def encode(
        self,
        texts: Sequence[str],
        ids: Sequence[str],
        *,
        group: str | None = None,
        lane: Lane = Lane.BULK,
        on_queued: Callable[[], None] | None = None,
        encodings: Sequence[tuple[Encoding | list[int] | None, ...] | None] | None = None,
    ) -> list[Encoded | Exception]:
        """Per text, every vector and label of the profile (or the error that kept it from
        being encoded).
        ``on_queued()``: called once the texts wait in every model's engine. ``encodings``: per
        text, the chunker's tokens of it (``Chunk.encodings``, one per model) or None: the
        engines add special tokens to them instead of tokenizing the text again."""
        models = list(self.engines)
        waiting = len(models)

        def queued() -> None:
            nonlocal waiting
            waiting -= 1
            if waiting == 0 and on_queued is not None:
                on_queued()

        per_model = await asyncio.gather(
            *(
                self.engines[m].encode(
                    texts,
                    self._params(m),
                    request_ids=ids,
                    group=group,
                    lane=lane,
                    return_exceptions=True,
                    on_queued=queued,
                    pretokenized=self._pretokenized(m, encodings),
                )
                for m in models
            )
        )
        out: list[Encoded | Exception] = []
        for i in range(len(texts)):
            done = Encoded({})
            error: Exception | None = None
            for m, results in zip(models, per_model, strict=True):
                res: Any = results[i]
                if isinstance(res, Exception):
                    error = res
                    break
                for v in self.profile.vectors_of(m):
                    done.vectors[v.name] = to_qdrant_value(res[v.task])
                if m in self.label_readers:
                    done.labels.update(read_labels(self.label_readers[m], res["classify"]))
            out.append(error if error is not None else done)
        pooled = {v.name: f for v in self.profile.vectors if (f := v.pool_factor or 1) > 1}
        if pooled:  # documents only (queries: encode_query); CPU work, off the event loop
            await asyncio.to_thread(pool_documents, out, pooled)
        return out

    def _pretokenized(
        self, model: str, encodings: Sequence[tuple[Encoding | list[int] | None, ...] | None] | None
    ) -> list[Encoding | list[int] | None] | None:
        """``model``'s share of the chunker's encodings (its counters follow the engines)."""
        if encodings is None or len(self.chunker.counters) != len(self.engines):
            return None
        k = list(self.engines).index(model)
        return [e[k] if e is not None else None for e in encodings]

    async def encode_query(
        self, text: str, vector_names: Sequence[str] | None = None, *, request_id: str = "query"
    ) -> dict[str, VectorValue]:
        """The query's vectors (all of the profile's, or only ``vector_names``), encoded the way
        queries are: in the query lane (never behind an ingestion batch), with the model's
        ``query`` prompt and its query input form where it defines them. Raises the encoding
        error, naming ``request_id``."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"query: expected a non-empty string, got {text!r}")
        wanted = [v for v in self.profile.vectors if vector_names is None or v.name in vector_names]
        unknown = set(vector_names or ()) - {v.name for v in wanted}
        if unknown:
            raise ValueError(
                f"query: unknown vectors {sorted(unknown)}; the profile has "
                f"{[v.name for v in self.profile.vectors]}"
            )
        models = list(dict.fromkeys(v.model for v in wanted))

        async def one(model: str) -> tuple[str, Any]:
            engine = self.engines[model]
            params = [v.params() for v in wanted if v.model == model]
            idf = engine.model.query_idf
            if idf is not None and all(p.task == "sparse" for p in params):
                # inference-free query: its tokens weighted by the model's idf.json
                ids = engine.model.tokenizer.encode_batch([text])[0].ids
                return model, {p.task: idf.encode(ids, p.top_k) for p in params}
            res = await engine.encode_one(
                text,
                params,
                request_ids=[request_id],
                lane=Lane.QUERY,
                prompt_name=query_prompt_name(engine.description),
                input_form="query",
            )
            return model, res

        results = dict(await asyncio.gather(*(one(m) for m in models)))
        return {v.name: to_qdrant_value(results[v.model][v.task]) for v in wanted}


def chunk_counter(description: ModelDescription, tokenizer: Any) -> TokenCounter:
    """Token counting for chunking: the model's max length, or for a model with a document
    input form (ColBERT), the text tokens that form leaves room for (marker included)."""
    counter = TokenCounter(tokenizer, description.max_length)
    forms = description.input_forms
    if forms is not None:
        counter.max_length = forms.document.content_tokens + counter.special_tokens
    return counter


def query_prompt_name(description: ModelDescription) -> str | None:
    """The sentence-transformers prompt for queries, when the model defines one."""
    return "query" if "query" in dict(description.prompts) else None


def pool_documents(encoded: list[Encoded | Exception], pool_factors: dict[str, int]) -> None:
    """Replace, in place, each named multi-vector by its hierarchical token pooling."""
    for done in encoded:
        if isinstance(done, Encoded):
            for name, factor in pool_factors.items():
                value = done.vectors[name]
                if isinstance(value, np.ndarray):
                    done.vectors[name] = pool_tokens(value, factor)


def to_qdrant_value(output: object) -> VectorValue:
    """Sparse -> ``SparseValues``; dense/multi -> float32 numpy arrays (no Python float lists on
    the event loop; the writer turns them into lists only for a Qdrant server)."""
    if isinstance(output, SparseEmbedding):
        return SparseValues(output.indices.numpy(), output.values.float().numpy())
    if isinstance(output, torch.Tensor):
        return output.numpy()
    raise TypeError(f"unexpected pooled output {type(output).__name__}")
