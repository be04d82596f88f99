"""``poolq export``: every point of a collection, from a Qdrant Edge folder, a qdrant-client
local-mode folder (an embedded store of an older poolq) or a Qdrant server. Two formats
(``--format``, else inferred from ``-o``): ``npy``, the default, a new folder of ``.npy`` shards
with a manifest (``sinks/npy_points.py``, vectors in their stored datatype); ``jsonl``, one JSON
line a point (``sinks/jsonl_points.py``), for ``-o FILE.jsonl`` and ``-o -`` (stdout). With
``poolq import`` it moves a collection between stores without re-encoding."""

from __future__ import annotations

import contextlib
import shutil
import sys
from pathlib import Path

import typer

from poolq.ingest.cli.command_env import error
from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail
from poolq.worker.cli.store_target import (
    open_target,
    qdrant_api_key_option,
    qdrant_path_option,
    qdrant_url_option,
)

FORMATS = ("npy", "jsonl")


def infer_format(output: str, given: str | None) -> str:
    """``--format`` if given, else ``jsonl`` for ``-`` and ``*.jsonl``, else ``npy``."""
    if given is not None:
        if given not in FORMATS:
            fail("export", f"--format: expected one of {', '.join(FORMATS)}, got {given!r}")
        if given == "npy" and output == "-":
            fail("export", "--format npy writes a folder; -o - (stdout) takes --format jsonl")
        return given
    return "jsonl" if output == "-" or output.endswith(".jsonl") else "npy"


def run_export(
    collection: str,
    output: str,
    path: Path | None,
    url: str | None,
    api_key: str | None,
    fmt: str = "jsonl",
) -> int:
    from tqdm import tqdm

    from poolq.sinks.npy_points import NpyExportError
    from poolq.sinks.transfer import TransferError, check_exists, export_npy, export_points

    store = open_target("export", path, url, api_key, local_mode_ok=True, must_exist=True)
    to_stdout = output == "-"
    target = Path(output)
    try:  # a missing collection is one line, before any progress bar or output file
        check_exists(store, collection)
    except TransferError as e:
        store.close()
        error("export", e)
        return 2
    try:
        try:
            total = store.count(collection)
        except Exception:
            total = None
        bar = tqdm(total=total, unit="pt", file=sys.stderr, desc=f"exporting {collection}")
        try:
            if fmt == "npy":
                if target.exists():
                    raise NpyExportError(f"-o {output!r} exists: npy export writes a new folder")
                n = export_npy(store, collection, target, progress=bar.update)
            else:
                out = sys.stdout if to_stdout else target.open("w", encoding="utf-8")
                try:
                    n = export_points(store, collection, out.write, progress=bar.update)
                finally:
                    if not to_stdout:
                        out.close()
        finally:
            bar.close()
    except (TransferError, ValueError, RuntimeError, OSError) as e:
        if not to_stdout and not isinstance(e, NpyExportError):
            with contextlib.suppress(OSError):  # no half-written file or folder left behind
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink()
        error("export", e)
        return 2
    finally:
        store.close()
    where = "stdout" if to_stdout else repr(str(target))
    print(f"exported {n} points of {collection!r} to {where} ({fmt})", file=sys.stderr)
    return 0


@app.command("export")
def export_command(
    collection: str = typer.Option(..., "--collection", help="Collection (or alias) to export."),
    output: str = typer.Option(
        ..., "-o", "--output", help="A new FOLDER (npy), FILE.jsonl, or - for stdout (jsonl)."
    ),
    qdrant_path: Path | None = qdrant_path_option(),
    qdrant_url: str | None = qdrant_url_option(),
    qdrant_api_key: str | None = qdrant_api_key_option(),
    fmt: str | None = typer.Option(
        None,
        "--format",
        help="npy (.npy shards + manifest.json, vectors in their stored datatype) or jsonl; "
        "default: jsonl for - and *.jsonl, else npy.",
    ),
) -> None:
    """Write every point of a collection (id, payload, named vectors), as .npy shards with a
    manifest (default) or as JSON lines."""
    chosen = infer_format(output, fmt)
    if output != "-" and Path(output).is_dir():
        kind = "a new folder" if chosen == "npy" else "a file name or -"
        fail("export", f"-o {output!r} is a folder that exists; give {kind}")
    raise typer.Exit(
        run_export(collection, output, qdrant_path, qdrant_url, qdrant_api_key, chosen)
    )
