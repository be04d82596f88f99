"""Import layers: data flows client -> queue -> jobs -> engine -> pooling -> sink, and a lower
layer never imports a higher one. Checked over the source's ``ast`` (every ``import`` statement,
including function-local and TYPE_CHECKING ones), so it runs in milliseconds without importing
anything."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# repository folder -> installed package
FOLDERS = {
    "poolq": "poolq",
    "worker": "poolq.worker",
    "ingest": "poolq.ingest",
    "sinks": "poolq.sinks",
    "wire": "poolq.wire",
}

# Highest first. A module may import modules of its own layer or of any layer below it.
LAYERS: list[tuple[str, ...]] = [
    ("poolq",),  # the public client API (poolq/__init__.py)
    ("poolq.worker.cli",),  # the command line: flags and help; the client's commands are ingest/cli
    ("poolq.worker.dev",),  # local development helpers (demo, local Redis, worker process)
    ("poolq.ingest",),  # the client: what application code uses (it imports only the wire)
    ("poolq.worker.app",),  # the arq application and its jobs
    ("poolq.worker.reliability", "poolq.worker.observability"),
    ("poolq.worker.runtime",),  # what a worker holds: engines, writer, query and search services
    ("poolq.worker.config",),  # settings, schedules, collection profiles
    ("poolq.worker.reindex", "poolq.worker.chunks"),  # reindex planning; chunks and points
    ("poolq.worker.parse",),  # files read into blocks (no engine, no store: the parse role)
    ("poolq.worker.fetch",),  # documents given by URI fetched: object stores, web URLs
    ("poolq.worker.engine",),
    ("poolq.worker.pooling",),
    ("poolq.sinks",),
    ("poolq.wire",),  # Redis keys, records and wire formats: shared by the client and workers
]
# the worker package's own __init__/__main__ (``python -m poolq.worker`` runs the CLI)
ENTRY_POINTS = {"poolq.worker": 1, "poolq.worker.__main__": 1}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts
    for folder, package in sorted(FOLDERS.items(), key=lambda kv: -len(kv[0])):
        fparts = tuple(folder.split("/"))
        if parts[: len(fparts)] == fparts:
            rest = [p for p in parts[len(fparts) :] if p != "__init__"]
            return ".".join([package, *rest])
    raise AssertionError(path)


def layer_of(module: str) -> int:
    if module in ENTRY_POINTS:
        return ENTRY_POINTS[module]
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise AssertionError(f"{module}: in no layer; add its package to LAYERS")
    return best


def source_files() -> list[Path]:
    files = []
    for folder in ("poolq", "worker", "ingest", "sinks", "wire"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def poolq_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "poolq"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}:{node.lineno}: use absolute poolq.* imports")
            mod = node.module or ""
            if mod.split(".")[0] == "poolq":
                # `from poolq.x import y`: y may be a submodule; the layer is that of the deepest
                out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def resolve(name: str) -> str:
    """``poolq.wire.constants.INGEST_QUEUE`` -> the module part, by longest match."""
    known = {module_name(p) for p in source_files()}
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in known:
            return ".".join(parts[:i])
    raise AssertionError(f"import of unknown module {name}")


def violations() -> list[str]:
    bad = []
    for path in source_files():
        me = module_name(path)
        mine = layer_of(me)
        for lineno, name in poolq_imports(path):
            target = resolve(name)
            if layer_of(target) < mine:
                bad.append(
                    f"{path.relative_to(ROOT)}:{lineno}: {me} (layer {LAYERS[mine][0]}) imports "
                    f"{target} (higher layer {LAYERS[layer_of(target)][0]})"
                )
    return bad


def test_no_lower_layer_imports_a_higher_one():
    assert violations() == []


def test_every_file_has_one_module_name():
    """No folder of FOLDERS lies inside another: a file in both would install under two names."""
    for inner in FOLDERS:
        for outer in FOLDERS:
            assert inner == outer or not inner.startswith(outer + "/"), (inner, outer)


def test_every_module_is_in_a_layer():
    for path in source_files():
        layer_of(module_name(path))


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: an upward import (the wire importing the arq app) is reported."""
    fake = ROOT / "wire" / "_layer_probe.py"
    fake.write_text("from poolq.worker.app.worker_settings import worker_kwargs\n")
    try:
        found = violations()
    finally:
        fake.unlink()
    assert any("_layer_probe" in v and "poolq.worker.app" in v for v in found), found


# what the client may import of the worker package: its settings' declarations, their loader and
# its table check
CLIENT_SETTINGS = (
    "poolq.worker.config.client_settings",
    "poolq.worker.config.loader",
    "poolq.worker.config.tables",
    "poolq.worker.config.variables",
)


def test_the_client_imports_only_itself_the_wire_and_its_settings():
    """``ingest/`` is what applications import: nothing of the worker, engine or store but the
    settings' declarations and loader (the layers above allow the worker's code below it; this
    is stricter)."""
    for path in sorted((ROOT / "ingest").rglob("*.py")):
        for lineno, name in poolq_imports(path):
            target = resolve(name)
            allowed = ("poolq.ingest", "poolq.wire", *CLIENT_SETTINGS)
            assert target == "poolq" or target.startswith(allowed), (
                f"{path.relative_to(ROOT)}:{lineno} imports {target}"
            )
    for module in CLIENT_SETTINGS:  # which import nothing but the wire and each other
        path = ROOT / "worker" / "config" / (module.rsplit(".", 1)[1] + ".py")
        for lineno, name in poolq_imports(path):
            target = resolve(name)
            assert target.startswith(("poolq.wire", *CLIENT_SETTINGS)), f"{path}:{lineno} {target}"


@pytest.mark.parametrize("folder", ["ingest", "sinks", "worker/engine", "worker/pooling", "wire"])
def test_lower_layers_never_import_the_arq_app_or_cli(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        for lineno, name in poolq_imports(path):
            assert not name.startswith(("poolq.worker.app", "poolq.worker.cli")), (
                f"{path}:{lineno} imports {name}"
            )
