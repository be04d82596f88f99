"""Converted (and quantized) OpenVINO models on disk, so a second start converts nothing.

Under ``<cache folder>/openvino/<key>/model.xml`` (the cache folder: setting ``cache_dir``, else
``$XDG_CACHE_HOME/poolq``, else ``~/.cache/poolq``). The key hashes what decides the graph: the
checkpoint's fingerprint (its files' contents, ``worker/config/versions.py``), the form version
(``FORM_VERSION``: what ``graph.py`` converts), whether the SPLADE head is in the graph, the
precision, and the OpenVINO (and, for int8, NNCF) versions. A model is written to a temporary
folder and renamed into place: a reader never sees half a model. Beside an int8 model, the int8
gate's verdict under the model's floors (``passed-*.json`` with its figures, ``refused-*``): the
gate ran on this very model, sample and floors, so a later start does not run the fp32 pass
again. Weights are saved as they are (no fp16 compression: fp32 must match torch). Beside each
model, under ``compiled/``, OpenVINO's own cache of the model compiled for this CPU and these
settings (``CACHE_DIR``): a later start imports it instead of compiling.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from poolq.worker.engine.cpu.int8_report import QualityReport

log = logging.getLogger("poolq.openvino")
FORM_VERSION = 2  # bump when what graph.py converts changes: cached models are keyed by it
MODEL_FILE = "model.xml"
COMPILED_DIR = "compiled"  # OpenVINO's compiled blobs of the model beside it (its CACHE_DIR)


def cache_root() -> Path:
    from poolq.worker.engine.checkpoints.fingerprints import cache_dir

    return cache_dir() / "openvino"


def cache_key(checkpoint: str, *, sparse_head: bool, precision: str) -> str:
    import openvino as ov

    from poolq.worker.engine.checkpoints.fingerprints import cached_fingerprint

    parts: dict[str, Any] = {
        "checkpoint": cached_fingerprint(checkpoint),
        "form": FORM_VERSION,
        "sparse_head": sparse_head,
        "precision": precision,
        "openvino": ov.get_version(),
    }
    if precision.startswith("int8"):
        from importlib.metadata import version

        parts["nncf"] = version("nncf")  # not imported: 1.6 s
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def has(key: str) -> bool:
    """Whether the model ``key`` is in the cache (what a start that builds no torch encoder
    needs, ``cached_start.py``)."""
    return (cache_root() / key / MODEL_FILE).is_file()


def compile_cached(core: Any, key: str, config: dict[str, Any], model: Any | None = None) -> Any:
    """The model ``key`` compiled for the CPU from its cached file, through OpenVINO's own
    compiled-model cache beside it (``CACHE_DIR`` = ``<key>/compiled/``): a later start imports
    the compiled blob instead of reading and compiling the model again. ``model``: the
    ``openvino.Model`` itself, compiled as is where its file was not written."""
    from poolq.worker.engine.openvino import prefetch

    if (compiled := prefetch.take(key, config)) is not None:  # compiled while torch loaded
        return compiled
    path = cache_root() / key / MODEL_FILE
    if not path.is_file():
        if model is None:
            raise FileNotFoundError(f"openvino cache: {path} is gone")
        return core.compile_model(model, "CPU", config)
    try:
        return core.compile_model(
            str(path), "CPU", {**config, "CACHE_DIR": str(path.parent / COMPILED_DIR)}
        )
    except RuntimeError as exc:  # e.g. a compiled blob or a folder it cannot use
        log.warning("openvino cache %s: compiled-model cache not used (%s)", path.parent, exc)
        return core.compile_model(model if model is not None else str(path), "CPU", config)


def load_cached(key: str) -> Any | None:
    """The cached ``openvino.Model``, or None (absent or unreadable)."""
    import openvino as ov

    path = cache_root() / key / MODEL_FILE
    if not path.is_file():
        return None
    try:
        return ov.Core().read_model(str(path))
    except RuntimeError as exc:
        log.warning("openvino cache %s unreadable (%s): converting again", path, exc)
        return None


def store(key: str, model: Any) -> None:
    """Save ``model`` under ``key``; a cache that cannot be written only costs the next start."""
    import openvino as ov

    final = cache_root() / key
    tmp = final.with_name(f"{key}.{os.getpid()}.tmp")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        ov.save_model(model, str(tmp / MODEL_FILE), compress_to_fp16=False)
        try:
            tmp.rename(final)
        except OSError:  # another process stored it first
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, RuntimeError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        log.warning("openvino cache %s not written: %s", final, exc)


def _marker(key: str, floors: object, name: str) -> Path:
    """The file ``name`` beside the model, its ``{}`` a tag of the floors."""
    tag = hashlib.sha256(repr(floors).encode()).hexdigest()[:12]
    return cache_root() / key / name.format(tag)


def refused(key: str, floors: object) -> str | None:
    """The int8 gate's refusal of this cached model under these floors, if it refused it."""
    try:
        return _marker(key, floors, "refused-{}").read_text()
    except OSError:
        return None


def mark_refused(key: str, floors: object, message: str) -> None:
    with contextlib.suppress(OSError):  # else the gate runs again next start
        _marker(key, floors, "refused-{}").write_text(message)


def passed(key: str, floors: object) -> QualityReport | None:
    """The int8 gate's report if it passed this cached model under these floors."""
    from poolq.worker.engine.cpu.int8_report import Check, QualityReport

    try:
        data = json.loads(_marker(key, floors, "passed-{}.json").read_text())
        report = QualityReport(int(data["texts"]), [Check(**c) for c in data["checks"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return report if report.passed else None


def mark_passed(key: str, floors: object, report: QualityReport | None) -> None:
    if report is None:
        return
    data = {"texts": report.texts, "checks": [dataclasses.asdict(c) for c in report.checks]}
    with contextlib.suppress(OSError):
        _marker(key, floors, "passed-{}.json").write_text(json.dumps(data))
