"""The async engine, one per model: callers ``await`` pooled outputs; packed batches of every
lane (queries, interactive and bulk work) are cut from its one scheduler by its batch slots
(``model_thread.py``: one for every lane, one that takes only queries).

- Tokenization runs in a small thread pool (the Rust tokenizer releases the GIL), overlapping
  the forward pass of the batch in flight; the event loop never blocks.
- The :class:`Scheduler` owns the queue. Requests that arrive while a batch runs join the next
  one. Each request's :class:`~poolq.worker.engine.batching.lanes.Lane` (query, interactive, bulk) and
  its group's fair share decide who runs next (``lanes.py``, the one place for that policy).
- Backpressure: at most ``queue_limit_tokens`` tokens wait in the queue; further callers wait,
  in lane order (a single submission larger than the bound is admitted alone into an empty
  queue); queries never wait for room.
- Cancelling a caller's task cancels its futures; their queue places are freed at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from tokenizers import Encoding

from poolq.worker.engine.batching.group_progress import GroupProgress
from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.batching.queue_room import QueueRoom
from poolq.worker.engine.batching.requests import (
    CallResults,
    EncodeRequest,
    EncodeResult,
    anonymous_group,
)
from poolq.worker.engine.batching.scheduler import Scheduler
from poolq.worker.engine.checkpoints.input_forms import FormedInput, InputForm, InputFormName
from poolq.worker.engine.checkpoints.loader import PoolingModel
from poolq.worker.engine.engine_api import EngineObserver, EngineStats, TaskSpec
from poolq.worker.engine.engine_api import InputTooLongError as InputTooLongError  # callers'
from poolq.worker.engine.engine_inputs import (
    checked_form,
    checked_ids,
    checked_pairs,
    checked_params,
    fitting,
    tokenize,
    tokenize_pairs,
)
from poolq.worker.engine.execution.model_thread import BatchSlot, model_loop
from poolq.worker.engine.execution.runner import ModelRunner
from poolq.worker.engine.execution.thread_names import thread_initializer
from poolq.worker.pooling import PoolingParams

log = logging.getLogger(__name__)


def default_batch_tokens(device: torch.device) -> int:
    """Tokens per forward. On CPU ~2k-token batches run fastest per token (the GEMM operands
    stay in cache, which 16k-token batches overflow); GPUs want large batches."""
    return 16384 if device.type == "cuda" else 2048


QUERY_BATCH_TOKENS = 1024  # the query slot's batches: queries are short and few
MAX_BATCH_REQUESTS = 512  # requests in one batch, whatever their tokens


class AsyncEngine:
    def __init__(
        self,
        model: PoolingModel,
        *,
        max_batch_tokens: int | None = None,
        max_batch_requests: int = MAX_BATCH_REQUESTS,
        queue_limit_tokens: int = 1 << 20,
        tokenizer_threads: int = 1,
        record_batches: bool = False,
        lane: Lane = Lane.BULK,
        query_batch_tokens: int = QUERY_BATCH_TOKENS,
    ) -> None:
        """``lane``: the lane of requests that name none; ``query_batch_tokens``: the most
        tokens in one batch of the query slot (``model_thread.py``)."""
        self.model = model
        self.lane = lane
        self.description = model.description
        if max_batch_tokens is None:
            max_batch_tokens = default_batch_tokens(model.device)
        self.scheduler = Scheduler(max_batch_tokens, max_batch_requests)
        self.scheduler.chunked_prefill = bool(getattr(model.encoder, "causal", False))
        # a hard cap on this engine's own queue (queue_room.py), not the worker's admission bound
        self.room = QueueRoom(queue_limit_tokens, lambda: self.scheduler.queued_tokens)
        self.runner = ModelRunner(model)
        self.stats = EngineStats(batch_sizes=[] if record_batches else None)  # ingestion
        self.query_stats = EngineStats(batch_sizes=[] if record_batches else None)
        self.query_batch_tokens = query_batch_tokens
        self.slots = (
            BatchSlot("poolq-model"),
            BatchSlot("poolq-query", Lane.QUERY, query_batch_tokens),
        )
        self._tok_pool = ThreadPoolExecutor(
            tokenizer_threads,
            thread_name_prefix="poolq-tokenize",
            initializer=thread_initializer("poolq-tokenize"),
        )
        self._threads: list[threading.Thread] = []
        self.event_loop: asyncio.AbstractEventLoop | None = None
        self._running = False
        self.observer: EngineObserver | None = None  # ingestion (interactive and bulk lanes)
        self.query_observer: EngineObserver | None = None
        self.groups = GroupProgress()  # progress per group (group_progress.py)

    def set_observer(self, observer: EngineObserver | None, *, queries: bool = False) -> None:
        """Report timings of ingestion (or, with ``queries``, of the query lane) to
        ``observer`` (``None``: stop reporting)."""
        if queries:
            self.query_observer = observer
        else:
            self.observer = observer
        self.runner.timing = self.observer is not None or self.query_observer is not None

    # Lifecycle -------------------------------------------------------------------------------
    async def start(self) -> AsyncEngine:
        if self._running:
            return self
        self.event_loop = self.room.event_loop = asyncio.get_running_loop()
        self._running = True
        self._threads = [
            threading.Thread(target=model_loop, args=(self, slot), name=slot.name, daemon=True)
            for slot in self.slots
        ]
        for t in self._threads:
            t.start()
        return self

    async def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        self.scheduler.close()
        for t in self._threads:
            await asyncio.to_thread(t.join)
        for req in self.scheduler.drain():
            if not req.future.done():
                req.future.set_exception(RuntimeError("the engine stopped before this request ran"))
        self._tok_pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncEngine:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # API -------------------------------------------------------------------------------------
    def _check_running(self) -> asyncio.AbstractEventLoop:
        if not self._running or self.event_loop is None:
            raise RuntimeError(
                "the engine is not started (use 'async with engine' or 'await engine.start()')"
            )
        return self.event_loop

    async def encode(
        self,
        texts: Sequence[str],
        tasks: Sequence[TaskSpec] | Sequence[Sequence[TaskSpec]] = ("embed",),
        *,
        request_ids: Sequence[str] | None = None,
        lane: Lane | None = None,
        truncate: bool = True,
        prompt_name: str | None = None,
        return_exceptions: bool = False,
        group: str | None = None,
        input_form: InputFormName = "document",
        on_queued: Callable[[], None] | None = None,
        pretokenized: Sequence[Encoding | list[int] | None] | None = None,
    ) -> list[EncodeResult]:
        """Encode ``texts``; ``tasks`` is one task list for all texts or one per text.

        ``input_form``: write the texts as documents (what ingestion sends) or as queries, for
        models with such forms (ColBERT: marker token, query expansion, punctuation skipping;
        ``description.input_forms`` is set). Other models ignore it, so callers may always pass it.

        A bad request (wrong type, unsupported task, over-long with ``truncate=False``) raises an
        error naming it, and nothing is queued; with ``return_exceptions=True`` its place in the
        result list holds the error instead and the other texts are encoded normally.

        ``lane`` (default: the engine's) and ``group`` (who asks: a job id; None, the call is a
        group of its own) place the texts in the queue (``lanes.py``): the groups of one lane
        share it by tokens. ``on_queued()`` is called once the texts are in the queue (or none
        will be: all refused).

        ``pretokenized``: per text, its tokens as this model's tokenizer splits it, without
        special tokens (what chunking found: ``Chunk.encodings``), or None. They are used when
        the text is sent as it is (no prompt, no input form): only the special tokens are added.

        Task ``score`` reads (query, text) pairs: :meth:`score`.
        """
        loop = self._check_running()
        form = checked_form(self.description, input_form)
        n = len(texts)
        if n == 0:
            if on_queued is not None:
                on_queued()
            return []
        ids = checked_ids(n, request_ids, pretokenized)
        params, errors = checked_params(self.model.pooler, texts, tasks, ids)
        if any(p.task == "score" for ps in params for p in ps):
            raise ValueError("task 'score' reads (query, text) pairs: use AsyncEngine.score")
        if errors and not return_exceptions:
            raise errors[min(errors)]
        ok = [i for i in range(n) if i not in errors]
        prefix = self.description.prompt(prompt_name)
        inputs = [prefix + texts[i] for i in ok]
        pre = [pretokenized[i] for i in ok] if pretokenized and not prefix and not form else None
        lane = self.lane if lane is None else Lane(lane)
        observer = self.query_observer if lane == Lane.QUERY else self.observer
        tokenized = await loop.run_in_executor(
            self._tok_pool, self._tokenize, inputs, form, pre, observer
        )
        max_length = form.max_length if form is not None else self.description.max_length
        accepted = fitting(ok, tokenized, ids, errors, truncate, input_form, form, max_length)
        if errors and not return_exceptions:
            raise errors[min(errors)]
        formed = dict(zip(ok, tokenized, strict=True))
        return await self._run(n, ids, params, formed, accepted, errors, lane, group, on_queued)

    async def score(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        request_ids: Sequence[str] | None = None,
        lane: Lane | None = None,
        truncate: bool = True,
        use_activation: bool | None = None,
        return_exceptions: bool = False,
        group: str | None = None,
        on_queued: Callable[[], None] | None = None,
    ) -> list[EncodeResult]:
        """Score (query, text) ``pairs`` with a cross-encoder or an LLM reranker: each result's
        ``"score"`` is a ``float32`` scalar, activated as the model says
        (``use_activation=False``: the raw logit). Each pair is written in the model's pair form
        (``description.pair_form``: its tokenizer's two segments and their token type ids, or
        the reranker's prompt) and cut to the model's window, the query first
        (``pair_forms.py``). ``lane``, ``group``, ``truncate``, ``return_exceptions`` and
        ``on_queued`` are :meth:`encode`'s."""
        loop = self._check_running()
        pair_form = self.description.pair_form
        if pair_form is None or "score" not in self.description.supported_tasks:
            raise ValueError(
                f"model {self.description.model_id!r} does not score pairs (task 'score' needs a "
                f"one-label *ForSequenceClassification cross-encoder or an LLM reranker); its "
                f"tasks: {list(self.description.supported_tasks)}"
            )
        n = len(pairs)
        if n == 0:
            if on_queued is not None:
                on_queued()
            return []
        ids = checked_ids(n, request_ids, None)
        shared = (PoolingParams("score", use_activation=use_activation),)
        errors = checked_pairs(pairs, ids)
        if errors and not return_exceptions:
            raise errors[min(errors)]
        ok = [i for i in range(n) if i not in errors]
        lane = self.lane if lane is None else Lane(lane)
        observer = self.query_observer if lane == Lane.QUERY else self.observer
        tokenized = await loop.run_in_executor(
            self._tok_pool,
            tokenize_pairs,
            pair_form,
            self.model.tokenizer,
            [pairs[i] for i in ok],
            observer,
        )
        max_length = self.description.max_length
        accepted = fitting(ok, tokenized, ids, errors, truncate, "pair", None, max_length)
        if errors and not return_exceptions:
            raise errors[min(errors)]
        formed = dict(zip(ok, tokenized, strict=True))
        return await self._run(
            n, ids, [shared] * n, formed, accepted, errors, lane, group, on_queued
        )

    async def _run(
        self,
        n: int,
        ids: Sequence[str],
        params: Sequence[tuple[PoolingParams, ...]],
        formed: dict[int, FormedInput],
        accepted: Sequence[int],
        errors: dict[int, Exception],
        lane: Lane,
        group: str | None,
        on_queued: Callable[[], None] | None,
    ) -> list[EncodeResult]:
        """Queue the ``accepted`` inputs (``formed``, by index) and wait for their results; the
        list holds ``errors`` in their places."""
        assert self.event_loop is not None
        # one future for the call: the caller wakes once, when its last request is done
        call = CallResults(self.event_loop.create_future(), len(accepted))
        share = group if group is not None else anonymous_group()  # one call, one share
        requests = [
            EncodeRequest(
                ids[i],
                formed[i].ids,
                formed[i].truncated,
                params[i],
                lane,
                call.slot(j),
                share,
                key_mask_cpu=formed[i].key_mask_cpu,
                keep_rows_cpu=formed[i].keep_rows_cpu,
                token_type_ids=formed[i].type_ids,
            )
            for j, i in enumerate(accepted)
        ]
        if requests:
            await self.room.admit(sum(r.num_tokens for r in requests), lane)
            self.scheduler.add(requests)
            if group is not None:
                self.groups.track(group, len(requests), call.future)
        if on_queued is not None:
            on_queued()
        by_index: dict[int, Any] = dict(errors)
        if requests:
            try:
                done = await call.future
            except BaseException:
                call.future.cancel()
                if any([self.scheduler.cancel(r) for r in requests]):  # each one, no short cut
                    self.notify_space()
                raise
            by_index.update(zip(accepted, done, strict=True))
        return [by_index[i] for i in range(n)]

    async def encode_one(
        self, text: str, tasks: Sequence[TaskSpec] = ("embed",), **kw: object
    ) -> EncodeResult:
        return (await self.encode([text], tasks, **kw))[0]  # type: ignore[arg-type]

    def _tokenize(
        self,
        texts: list[str],
        form: InputForm | None,
        pretokenized: list[Encoding | list[int] | None] | None = None,
        observer: EngineObserver | None = None,
    ) -> list[FormedInput]:
        """Runs in the tokenizer pool (``engine_inputs.tokenize``)."""
        return tokenize(self.model.tokenizer, texts, form, pretokenized, observer)

    def progress_of(self, group: str) -> float | None:
        """When ``group`` last moved here (``GroupProgress.of``)."""
        return self.groups.of(group)

    def forget_group(self, group: str) -> None:
        """The group is done: drop its progress record."""
        self.groups.forget(group)

    def stats_snapshot(self, *, queries: bool = False) -> dict[str, float | int]:
        """Ingestion's batches (or, with ``queries``, the query slot's) and the queue now."""
        return {
            **(self.query_stats if queries else self.stats).snapshot(),
            "queued_tokens": self.scheduler.queued_tokens,
            "queued_requests": self.scheduler.queued_requests,
        }

    def notify_space(self) -> None:
        """(Any thread) Tokens left the queue (``queue_room.py``)."""
        self.room.freed()
