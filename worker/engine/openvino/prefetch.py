"""The cached OpenVINO model compiled while torch is imported.

``poolq encode --backend openvino`` imports torch (the engine and the poolers take torch
tensors), on one core, holding the GIL, before the loader asks for the compiled model.
:func:`start`, called before that import, runs in a thread what a cached start would do first:
import ``openvino``, work out the cache key of the model the loader will compile (``cache.py``:
the checkpoint's fingerprint, the precision, and for int8 the first mode the gate has not
refused), and compile it from OpenVINO's compiled-model cache (OpenVINO releases the GIL while
it compiles). :func:`take`, from ``cache.compile_cached``, returns that compiled model only when
the loader asks for the very same key and settings; otherwise it is dropped and the loader
compiles itself. Nothing here imports torch.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from concurrent.futures import Future
from typing import Any

log = logging.getLogger("poolq.openvino")

# (cache key, the compile settings as JSON, the compiled model); None: nothing was compiled
_Result = tuple[str, str, Any] | None
_pending: Future[_Result] | None = None
_lock = threading.Lock()


def _settings(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def guessed_threads() -> int:
    """The intra-op thread count torch will report at load: ``OMP_NUM_THREADS``, else the CPUs
    this process may use (a wrong guess only costs the prefetched compile: :func:`take` checks)."""
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        n = 0
    return n if n > 0 else len(os.sched_getaffinity(0))


def start(checkpoint: str, precision: str, threads: int | None = None) -> None:
    """Compile, in a thread, the cached model a start of ``checkpoint`` in ``precision``
    (float32 or int8) compiles first. Does nothing when another prefetch is pending."""
    global _pending
    if precision not in ("float32", "int8"):
        return
    with _lock:
        if _pending is not None:
            return
        future: Future[_Result] = Future()
        _pending = future

    def run() -> None:
        try:
            future.set_result(_compile(checkpoint, precision, threads or guessed_threads()))
        except BaseException as exc:  # a failed prefetch only costs the time
            log.debug("openvino prefetch of %s failed: %s", checkpoint, exc)
            future.set_result(None)

    threading.Thread(target=run, name="poolq-ov-prefetch", daemon=True).start()


def _compile(checkpoint: str, precision: str, threads: int) -> _Result:
    import openvino as ov

    from poolq.worker.engine.openvino import cache
    from poolq.worker.engine.openvino.threads import compile_config

    keys = [k for head in (False, True) if (k := _first_key(checkpoint, head, precision))]
    if len(keys) != 1:  # not cached, or a dense and a SPLADE graph: the loader decides
        return None
    config = compile_config(threads)
    path = cache.cache_root() / keys[0] / cache.MODEL_FILE
    compiled = ov.Core().compile_model(
        str(path), "CPU", {**config, "CACHE_DIR": str(path.parent / cache.COMPILED_DIR)}
    )
    return keys[0], _settings(config), compiled


def _first_key(checkpoint: str, head: bool, precision: str) -> str | None:
    """The cached model a start compiles first: float32's, or int8's first mode that is cached,
    has passed the gate under some floors and was refused under none."""
    from poolq.worker.engine.openvino import cache

    if precision == "float32":
        key = cache.cache_key(checkpoint, sparse_head=head, precision="float32")
        return key if cache.has(key) else None
    for mode in ("static", "weights"):  # quantize.MODES (not imported: numpy, calibration)
        key = cache.cache_key(checkpoint, sparse_head=head, precision=f"int8-{mode}")
        folder = cache.cache_root() / key
        if not cache.has(key) or any(folder.glob("refused-*")):
            continue
        return key if any(folder.glob("passed-*.json")) else None
    return None


def take(key: str, config: dict[str, Any]) -> Any | None:
    """The prefetched compiled model if it is ``key`` compiled with ``config`` (waiting for it
    if it is still compiling); None otherwise. Taken once."""
    global _pending
    with _lock:
        future, _pending = _pending, None
    if future is None:
        return None
    result = future.result()
    if result is None or result[0] != key or result[1] != _settings(config):
        if result is not None:
            log.debug("openvino prefetch unused: the loader asked for another model or settings")
        return None
    return result[2]


def settle() -> None:
    """Wait for a prefetch nobody took and drop it: a compile still running on its thread
    when the interpreter exits aborts the process (OpenVINO's threads). Called when a command
    ends, whichever way."""
    global _pending
    with _lock:
        future, _pending = _pending, None
    if future is not None:
        future.result()
