"""The async engine: callers ``await`` pooled outputs; one model thread runs packed batches.

- Tokenization runs in a small thread pool (the Rust tokenizer releases the GIL), overlapping
  the forward pass of the batch in flight; the event loop never blocks.
- The :class:`Scheduler` owns the queue. Requests that arrive while a batch runs join the next
  one. Each request's :class:`~poolq.worker.engine.lanes.Lane` (query, interactive, bulk) and
  its caller's fair share decide who runs next (``lanes.py``, the one place for that policy).
- Backpressure: at most ``queue_limit_tokens`` tokens wait in the queue; further callers wait
  (a single submission larger than the bound is admitted alone into an empty queue).
- Cancelling a caller's task cancels its futures; their queue places are freed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from tokenizers import Encoding

from poolq.worker.engine.compute_thread import CPU_COMPUTE
from poolq.worker.engine.input_forms import INPUT_FORM_NAMES, FormedInput, InputForm, InputFormName
from poolq.worker.engine.lanes import Lane
from poolq.worker.engine.loader import PoolingModel
from poolq.worker.engine.requests import EncodeRequest, EncodeResult, anonymous_caller
from poolq.worker.engine.runner import BatchOutputs, ModelRunner
from poolq.worker.engine.scheduler import Scheduler
from poolq.worker.engine.thread_names import name_os_thread, named
from poolq.worker.pooling import PoolingParams, PoolingTask
from poolq.worker.pooling.params import PoolingParamsError

log = logging.getLogger(__name__)


class InputTooLongError(ValueError):
    pass


@dataclass
class EngineStats:
    batches: int = 0
    texts: int = 0
    tokens: int = 0
    forward_s: float = 0.0
    multi_group_batches: int = 0  # batches holding requests of several groups (jobs)
    batch_sizes: list[int] | None = None  # texts per batch, for tests and benchmarks


class EngineObserver(Protocol):
    """Timings reported where the work happens (the metrics endpoint adapts them); called from
    the tokenizer pool and the model thread, so implementations must be thread-safe and quick."""

    def tokenized(self, seconds: float) -> None:
        """One encode call's texts tokenized (in the tokenizer pool)."""

    def batch(
        self, tokens: int, queue_waits: Sequence[float], forward_s: float, pool_s: float
    ) -> None:
        """One batch finished: its tokens, each text's wait from admission to the scheduler
        until the batch was cut, the encoder forward and the pooler in seconds."""


TaskSpec = str | PoolingParams


def default_batch_tokens(device: torch.device) -> int:
    """Tokens per forward. On CPU ~2k-token batches ran fastest per token (GEMM operands stay
    in cache; 16k-token batches were ~17% slower on MiniLM); GPUs want large batches."""
    return 16384 if device.type == "cuda" else 2048


def _as_params(tasks: Sequence[TaskSpec]) -> tuple[PoolingParams, ...]:
    params = tuple(t if isinstance(t, PoolingParams) else PoolingParams(task=t) for t in tasks)  # type: ignore[arg-type]
    seen = [p.task for p in params]
    if len(set(seen)) != len(seen):
        raise ValueError(f"each task may be asked once per text, got {seen}")
    if not params:
        raise ValueError("at least one task is required")
    return params


class AsyncEngine:
    def __init__(
        self,
        model: PoolingModel,
        *,
        max_batch_tokens: int | None = None,
        max_batch_requests: int = 512,
        queue_limit_tokens: int = 1 << 20,
        tokenizer_threads: int = 1,
        record_batches: bool = False,
        lane: Lane = Lane.BULK,
    ) -> None:
        """``lane``: the lane of requests that name none (``Lane.QUERY`` for a query engine)."""
        self.model = model
        self.lane = lane
        self.description = model.description
        if max_batch_tokens is None:
            max_batch_tokens = default_batch_tokens(model.device)
        self.scheduler = Scheduler(max_batch_tokens, max_batch_requests)
        self.scheduler.chunked_prefill = bool(getattr(model.encoder, "causal", False))
        # a hard cap on this engine's own queue (callers beyond it wait, first come first served);
        # not the worker's admission bound (settings' max_queued_tokens, runtime/admission.py),
        # which keeps the queue far below it by taking jobs only while there is room
        self.queue_limit_tokens = queue_limit_tokens
        self.runner = ModelRunner(model)
        self.stats = EngineStats(batch_sizes=[] if record_batches else None)
        self._tok_pool = ThreadPoolExecutor(
            tokenizer_threads,
            thread_name_prefix="poolq-tokenize",
            initializer=named("poolq-tokenize"),
        )
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._space = asyncio.Condition()
        self._running = False
        self.observer: EngineObserver | None = None
        # Progress per caller, for deadlines that measure progress rather than time queued:
        # group -> time.monotonic() its last request was computed (written by the model thread),
        # the requests each group has queued or in flight (event loop), and when the model
        # thread last cut or finished a batch of anyone's.
        self.served_at: dict[str, float] = {}
        self._pending: dict[str, int] = {}
        self.last_activity = time.monotonic()
        self.busy = False  # the model thread is computing a batch (or finishing one)

    def set_observer(self, observer: EngineObserver | None) -> None:
        """Report timings to ``observer`` (``None``: stop reporting)."""
        self.observer = observer
        self.runner.timing = observer is not None

    # Lifecycle -------------------------------------------------------------------------------
    async def start(self) -> AsyncEngine:
        if self._running:
            return self
        self._loop = asyncio.get_running_loop()
        self._running = True
        self._thread = threading.Thread(target=self._model_loop, name="poolq-model", daemon=True)
        self._thread.start()
        return self

    async def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        self.scheduler.close()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        for req in self.scheduler.drain():
            if not req.future.done():
                req.future.set_exception(RuntimeError("the engine stopped before this request ran"))
        self._tok_pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncEngine:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # API -------------------------------------------------------------------------------------
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
        pretokenized: Sequence[Encoding | None] | None = None,
    ) -> list[EncodeResult]:
        """Encode ``texts``; ``tasks`` is one task list for all texts or one per text.

        ``input_form``: write the texts as documents (what ingestion sends) or as queries, for
        models with such forms (ColBERT: marker token, query expansion, punctuation skipping;
        ``description.has_query_form``). Other models ignore it, so callers may always pass it.

        A bad request (wrong type, unsupported task, over-long with ``truncate=False``) raises an
        error naming it, and nothing is queued; with ``return_exceptions=True`` its place in the
        result list holds the error instead and the other texts are encoded normally.

        ``lane`` (default: the engine's) and ``group`` (the caller: a job id) place the texts in
        the queue (``lanes.py``): callers of one lane share it by tokens. ``on_queued()`` is
        called once the texts are in the queue (or none will be: all refused).

        ``pretokenized``: per text, its tokens as this model's tokenizer splits it, without
        special tokens (what chunking found: ``Chunk.encodings``), or None. They are used when
        the text is sent as it is (no prompt, no input form): only the special tokens are added.
        """
        if not self._running or self._loop is None:
            raise RuntimeError(
                "the engine is not started (use 'async with engine' or 'await engine.start()')"
            )
        if input_form not in INPUT_FORM_NAMES:
            raise ValueError(
                f"input_form must be one of {list(INPUT_FORM_NAMES)}, got {input_form!r}"
            )
        forms = self.description.input_forms
        form = forms.form(input_form) if forms is not None else None
        n = len(texts)
        if n == 0:
            if on_queued is not None:
                on_queued()
            return []
        ids = list(request_ids) if request_ids is not None else [f"#{i}" for i in range(n)]
        if len(ids) != n:
            raise ValueError(f"request_ids: expected {n} entries, got {len(ids)}")
        if pretokenized is not None and len(pretokenized) != n:
            raise ValueError(f"pretokenized: expected {n} entries, got {len(pretokenized)}")
        per_text = bool(tasks) and not isinstance(tasks[0], str | PoolingParams)
        if per_text and len(tasks) != n:
            raise ValueError(f"tasks: expected one task list per text ({n}), got {len(tasks)}")
        shared = None if per_text else _as_params(tasks)  # type: ignore[arg-type]
        errors: dict[int, Exception] = {}
        params: list[tuple[PoolingParams, ...]] = []
        shared_ok = False  # the same tasks for every text: checked once (else per text, below)
        if shared is not None:
            with contextlib.suppress(ValueError):
                self.model.pooler.validate(shared, [ids[0]] * len(shared))
                shared_ok = True
        for i in range(n):
            try:
                ps = shared if shared is not None else _as_params(tasks[i])  # type: ignore[arg-type]
                params.append(ps)
                if not shared_ok:
                    self.model.pooler.validate(ps, [ids[i]] * len(ps))
                if not isinstance(texts[i], str):
                    raise PoolingParamsError(
                        f"request {ids[i]!r}: text must be a string, got {type(texts[i]).__name__}"
                    )
            except ValueError as exc:
                errors[i] = (
                    exc
                    if str(exc).startswith("request ")
                    else PoolingParamsError(f"request {ids[i]!r}: {exc}")
                )
        if errors and not return_exceptions:
            raise errors[min(errors)]
        ok = [i for i in range(n) if i not in errors]
        prefix = self.description.prompt(prompt_name)
        inputs = [prefix + texts[i] for i in ok]
        pre = [pretokenized[i] for i in ok] if pretokenized and not prefix and not form else None
        tokenized = await self._loop.run_in_executor(
            self._tok_pool, self._tokenize, inputs, form, pre
        )
        max_length = form.max_length if form is not None else self.description.max_length
        futures: dict[int, asyncio.Future[EncodeResult]] = {}
        requests: list[EncodeRequest] = []
        lane = self.lane if lane is None else Lane(lane)
        caller = group if group is not None else anonymous_caller()  # one call, one share
        for i, tok in zip(ok, tokenized, strict=True):
            if tok.truncated and not truncate:
                where = f"the {input_form} form's" if form is not None else "the model's"
                errors[i] = InputTooLongError(
                    f"request {ids[i]!r}: input is longer than {where} max length "
                    f"{max_length} tokens and truncate=False"
                )
                continue
            futures[i] = self._loop.create_future()
            requests.append(
                EncodeRequest(
                    ids[i],
                    tok.ids,
                    tok.truncated,
                    params[i],
                    lane,
                    futures[i],
                    group,
                    key_mask_cpu=tok.key_mask_cpu,
                    keep_rows_cpu=tok.keep_rows_cpu,
                    caller=caller,
                )
            )
        if errors and not return_exceptions:
            raise errors[min(errors)]
        if requests:
            await self._admit(sum(r.num_tokens for r in requests))
            for r in requests:
                r.future.add_done_callback(self._cancel_callback(r))
            self.scheduler.add(requests)
            if group is not None:
                self._track(group, [r.future for r in requests])
        if on_queued is not None:
            on_queued()
        try:
            done = await asyncio.gather(*futures.values())
        except BaseException:
            for f in futures.values():
                f.cancel()
            raise
        by_index: dict[int, Any] = dict(zip(futures, done, strict=True))
        by_index.update(errors)
        return [by_index[i] for i in range(n)]

    async def encode_one(
        self, text: str, tasks: Sequence[TaskSpec] = ("embed",), **kw: object
    ) -> EncodeResult:
        return (await self.encode([text], tasks, **kw))[0]  # type: ignore[arg-type]

    def _tokenize(
        self,
        texts: list[str],
        form: InputForm | None,
        pretokenized: list[Encoding | None] | None = None,
    ) -> list[FormedInput]:
        """Runs in the tokenizer pool: tokenize, then write each text in its input form.
        ``pretokenized`` (no form): the texts' tokens already split, used where given."""
        t0 = time.perf_counter()
        if form is None:
            tok = self.model.tokenizer
            todo = [i for i, e in enumerate(pretokenized or ()) if e is None]
            if pretokenized is None or len(todo) == len(texts):
                done = tok.encode_batch(texts)
            else:
                done = tok.post_process([e for e in pretokenized if e is not None])
                fresh = iter(tok.encode_batch([texts[i] for i in todo]) if todo else ())
                reused = iter(done)
                done = [next(fresh) if e is None else next(reused) for e in pretokenized]
            out = [FormedInput(t.ids, t.truncated) for t in done]
        else:
            tokenized = self.model.tokenizer.encode_batch([form.text(t) for t in texts])
            out = [form.apply(t) for t in tokenized]
        if (observer := self.observer) is not None:
            try:
                observer.tokenized(time.perf_counter() - t0)
            except Exception:  # metrics must never fail an encode
                log.exception("engine observer failed")
        return out

    @property
    def supported_tasks(self) -> tuple[PoolingTask, ...]:
        return self.description.supported_tasks

    # Backpressure ----------------------------------------------------------------------------
    async def _admit(self, tokens: int) -> None:
        async with self._space:
            await self._space.wait_for(
                lambda: (
                    self.scheduler.queued_tokens == 0
                    or self.scheduler.queued_tokens + tokens <= self.queue_limit_tokens
                )
            )

    def progress_of(self, group: str) -> float | None:
        """When ``group`` last moved here (time.monotonic()): while it has requests queued or
        in flight, the engine's last batch counts (it waits its turn, it is not stuck), and
        while a batch is being computed, now (a forward slowed by a busy core is not stuck; the
        job's ceiling still bounds a forward that hangs); else its last computed request. None:
        nothing of it ever reached this engine."""
        served = self.served_at.get(group)
        if self._pending.get(group):
            if self.busy:  # a forward is running: slow (a busy core) is not stuck
                return time.monotonic()
            return max(self.last_activity, served or 0.0)
        return served

    def forget_group(self, group: str) -> None:
        """The caller is done: drop its progress record."""
        self.served_at.pop(group, None)
        self._pending.pop(group, None)

    def _track(self, group: str, futures: list[asyncio.Future[EncodeResult]]) -> None:
        self._pending[group] = self._pending.get(group, 0) + len(futures)

        def done(_: asyncio.Future[EncodeResult]) -> None:
            left = self._pending.get(group, 0) - 1
            if left > 0:
                self._pending[group] = left
            else:
                self._pending.pop(group, None)

        for f in futures:
            f.add_done_callback(done)

    def stats_snapshot(self) -> dict[str, float | int]:
        s = self.stats
        return {
            "batches": s.batches,
            "texts": s.texts,
            "tokens": s.tokens,
            "forward_s": round(s.forward_s, 3),
            "multi_group_batches": s.multi_group_batches,
            "mean_batch_tokens": round(s.tokens / s.batches, 1) if s.batches else 0.0,
            "queued_tokens": self.scheduler.queued_tokens,
            "queued_requests": self.scheduler.queued_requests,
        }

    def _cancel_callback(
        self, req: EncodeRequest
    ) -> Callable[[asyncio.Future[EncodeResult]], None]:
        def on_done(fut: asyncio.Future[EncodeResult]) -> None:
            if fut.cancelled() and self.scheduler.cancel(req):
                self._notify_space()

        return on_done

    def _notify_space(self) -> None:
        async def notify() -> None:
            async with self._space:
                self._space.notify_all()

        if self._loop is not None and not self._loop.is_closed():
            asyncio.run_coroutine_threadsafe(notify(), self._loop)

    # Model thread ----------------------------------------------------------------------------
    def _model_loop(self) -> None:
        """Cut a batch, launch it, then finish the previous one: on CUDA the previous batch's
        device-to-host copies complete while this batch's kernels are queued."""
        name_os_thread("poolq-model")
        assert self._loop is not None
        in_flight: tuple[list[EncodeRequest], BatchOutputs, float, list[float]] | None = None
        while True:
            if in_flight is None:
                self.busy = False  # about to wait for work
            batch = self.scheduler.next_batch(timeout_s=0 if in_flight else None)
            if batch is None:
                if in_flight is not None:
                    self._finish(*in_flight)
                    in_flight = None
                    continue
                if self.scheduler.closed:
                    return
                continue
            self._notify_space()
            self.last_activity = time.monotonic()
            self.busy = True
            t0 = time.perf_counter()
            waits: list[float] = []
            if self.observer is not None:
                cut = time.monotonic()
                waits = [cut - r.queued_at for r in batch]
            try:
                launched = self._launch(batch)
            except Exception as exc:
                log.exception("batch of %d texts failed", len(batch))
                self._loop.call_soon_threadsafe(_fail, batch, exc)
                continue
            if in_flight is not None:
                self._finish(*in_flight)
            in_flight = (batch, launched, t0, waits)

    def _launch(self, batch: list[EncodeRequest]) -> BatchOutputs:
        """On the CPU the forward runs on the process's compute thread (one OpenMP team for all
        engines, ``compute_thread.py``); this thread waits for it. CUDA launches from here."""
        if self.model.device.type == "cpu":
            lane = min(r.lane for r in batch)  # the batch runs in its most urgent lane
            return CPU_COMPUTE.run(self.runner.launch, batch, priority=int(lane))
        return self.runner.launch(batch)

    def _finish(
        self, batch: list[EncodeRequest], launched: BatchOutputs, t0: float, waits: list[float]
    ) -> None:
        assert self._loop is not None
        try:
            results = launched.wait()
        except Exception as exc:
            log.exception("batch of %d texts failed", len(batch))
            self._loop.call_soon_threadsafe(_fail, batch, exc)
            return
        s = self.stats
        s.batches += 1
        s.texts += len(batch)
        tokens = sum(r.num_tokens for r in batch)
        s.tokens += tokens
        s.forward_s += time.perf_counter() - t0
        groups = {r.group for r in batch}
        if len(groups) > 1:
            s.multi_group_batches += 1
        served = self.last_activity = time.monotonic()
        for g in groups:  # progress per caller (a job's stall clock reads it)
            if g is not None:
                self.served_at[g] = served
        if s.batch_sizes is not None:
            s.batch_sizes.append(len(batch))
        self._loop.call_soon_threadsafe(_resolve, batch, results, s.batches - 1)
        if (observer := self.observer) is not None:
            try:
                observer.batch(tokens, waits, launched.forward_s, launched.pool_s)
            except Exception:  # metrics must never stop the model thread
                log.exception("engine observer failed")


def _resolve(batch: list[EncodeRequest], results: list[dict | None], batch_index: int) -> None:
    for req, outputs in zip(batch, results, strict=True):
        if outputs is None:  # a chunk of a longer prompt: the request continues in a later batch
            continue
        if not req.future.done():
            req.future.set_result(
                EncodeResult(req.request_id, outputs, req.num_tokens, req.truncated, batch_index)
            )


def _fail(batch: list[EncodeRequest], exc: Exception) -> None:
    for req in batch:
        if not req.future.done():
            req.future.set_exception(exc)
