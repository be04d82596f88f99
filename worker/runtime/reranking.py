"""The reranker stage of a search (the profile's ``[reranker]``): the first ``candidates``
chunks the search's mode found (dense, sparse, hybrid or rerank alike) are re-scored as
(query, chunk text) pairs by a cross-encoder or an LLM reranker, on the worker's query lane of
the reranker's engine (never behind ingestion; the pairs of concurrent searches share its
batches), then ranked by that score: ``hit.score`` is the reranker's.

A grouped search (``group_by="doc_id"``) is grouped after the re-scoring: a document's hit is
its best re-scored chunk, with its other candidates, best first, in ``hit.chunks`` (up to
``group_size - 1``). ``score_threshold`` applies to the reranker's scores. A pair longer than
the reranker's window is cut to fit it, the query first (``engine/checkpoints/pair_forms.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from poolq.wire.search_results import ChunkMatch, Hit, SearchRequest
from poolq.worker.config.scoring import RerankerConfig
from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.checkpoints.loader import PoolingModel
from poolq.worker.engine.engine import AsyncEngine, default_batch_tokens


@dataclass
class Reranker:
    name: str  # the model as the profile names it
    engine: AsyncEngine
    candidates: int

    def candidates_request(self, request: SearchRequest) -> SearchRequest:
        """What the store is asked for: chunks, ``candidates`` of them (``limit`` where that
        is more), with no threshold (it applies to the reranker's scores)."""
        return replace(
            request,
            limit=max(self.candidates, request.limit),
            group_by=None,
            score_threshold=None,
        )

    async def rerank(self, query: str, candidates: list[Hit], request: SearchRequest) -> list[Hit]:
        """``candidates`` (chunks, as the store ranked them) re-scored and ranked for
        ``request``: its threshold, grouping and limit."""
        if not candidates:
            return []
        results = await self.engine.score(
            [(query, hit.text or "") for hit in candidates],
            request_ids=[f"candidate {hit.id}" for hit in candidates],
            lane=Lane.QUERY,
        )
        scored = [
            replace(hit, score=float(r.tensor("score")))
            for hit, r in zip(candidates, results, strict=True)
        ]
        scored.sort(key=lambda h: -h.score)  # stable: ties keep the store's order
        if request.score_threshold is not None:
            scored = [h for h in scored if h.score >= request.score_threshold]
        if request.group_by is None:
            return scored[: request.limit]
        return group_by_document(scored, request.group_size)[: request.limit]


def group_by_document(hits: list[Hit], group_size: int) -> list[Hit]:
    """Ranked chunks -> one hit per document (its best chunk), its next ``group_size - 1``
    chunks in ``chunks``, in rank order."""
    best: dict[str, Hit] = {}
    others: dict[str, list[ChunkMatch]] = {}
    for h in hits:
        key = h.doc_id if h.doc_id is not None else h.id
        if key not in best:
            best[key], others[key] = h, []
        elif len(others[key]) < group_size - 1:
            others[key].append(ChunkMatch(h.id, h.score, h.chunk_index, h.text, h.citation))
    return [replace(hit, chunks=others[key]) for key, hit in best.items()]


async def start_reranker(config: RerankerConfig, model: PoolingModel) -> Reranker:
    """The reranker of a profile, its engine started (refused unless the model scores pairs)."""
    if "score" not in model.description.supported_tasks:
        raise ValueError(
            f"profile: [reranker] model {config.model!r} does not score pairs: expected a "
            "one-label *ForSequenceClassification cross-encoder or an LLM reranker "
            f"(classifier_from_token); its tasks: {list(model.description.supported_tasks)}"
        )
    # a search's pairs come many at once, all on the query lane: its query slot takes batches
    # as large as the others
    engine = AsyncEngine(
        model, lane=Lane.QUERY, query_batch_tokens=default_batch_tokens(model.device)
    )
    return Reranker(config.model, await engine.start(), config.candidates)
