"""``poolq import``: an export (``poolq export``: a folder of ``.npy`` shards with a manifest, or
a JSON-lines file; ``--format``, else told by the path) into a new collection of a Qdrant Edge
folder or a Qdrant server, in batches with a progress bar, then the count checked. The
collection is built behind its name as a full rebuild is (``sinks/transfer.py``); ``--config``
takes the storage settings (``[collection]``) from a profile."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from poolq.ingest.cli.command_env import error
from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail, setting_option
from poolq.worker.cli.store_target import (
    open_target,
    qdrant_api_key_option,
    qdrant_path_option,
    qdrant_url_option,
)


def _settings(config: Path | None) -> Any:
    from poolq.sinks.collection_settings import CollectionSettings

    if config is None:
        return CollectionSettings()
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
        return CollectionSettings.from_dict(data.get("collection"))
    except (OSError, ValueError) as e:
        fail("import", f"--config {str(config)!r}: {e}")


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as f:
        yield from f


def run_import(
    source: Path,
    collection: str,
    path: Path | None,
    url: str | None,
    api_key: str | None,
    config: Path | None,
    batch: int,
    fmt: str | None = None,
) -> int:
    from tqdm import tqdm

    from poolq.sinks.jsonl_points import PointLineError
    from poolq.sinks.npy_points import MANIFEST, NpyExportError
    from poolq.sinks.npy_reader import read_manifest
    from poolq.sinks.store.errors import EdgeError
    from poolq.sinks.transfer import TransferError, check_new, import_npy, import_points

    if fmt is None:
        fmt = "npy" if source.is_dir() else "jsonl"
    if fmt not in ("npy", "jsonl"):
        fail("import", f"--format: expected one of npy, jsonl, got {fmt!r}")
    if fmt == "jsonl" and not source.is_file():
        fail("import", f"{str(source)!r} is not a file")
    if fmt == "npy" and not (source / MANIFEST).is_file():
        fail(
            "import",
            f"{str(source)!r} is not a file (JSON lines) nor an npy export (no {MANIFEST} in it)",
        )
    if batch < 1:
        fail("import", f"--batch: expected an integer >= 1, got {batch}")
    settings = _settings(config)
    manifest = None
    if fmt == "npy":
        try:  # every file checked before anything is opened or written
            manifest = read_manifest(source)
        except NpyExportError as e:
            fail("import", str(e))
        total = manifest.points
    else:
        with source.open("rb") as f:
            total = sum(1 for line in f if line.strip())
    store = open_target("import", path, url, api_key)
    try:  # a name taken is one line, before any progress bar
        check_new(store, collection)
    except TransferError as e:
        store.close()
        error("import", e)
        return 2
    bar = tqdm(total=total, unit="pt", file=sys.stderr, desc=f"importing {collection}")
    try:
        if fmt == "npy":
            report = import_npy(
                store,
                collection,
                source,
                settings=settings,
                batch=batch,
                progress=bar.update,
                manifest=manifest,
            )
        else:
            report = import_points(
                store,
                collection,
                _lines(source),
                settings=settings,
                batch=batch,
                progress=bar.update,
            )
    except (TransferError, PointLineError, EdgeError, ValueError, RuntimeError, OSError) as e:
        bar.close()
        error("import", e)
        return 2
    finally:
        store.close()
    bar.close()
    vectors = ", ".join(f"{v.name} ({v.kind})" for v in report.schema.vectors)
    print(
        f"imported {report.points} points into {collection!r} ({report.collection}; {vectors}); "
        f"count verified",
        file=sys.stderr,
    )
    return 0


@app.command("import")
def import_command(
    source: Path = typer.Argument(
        ..., help="What poolq export wrote: a FOLDER (npy) or FILE.jsonl."
    ),
    collection: str = typer.Option(..., "--collection", help="The new collection's name."),
    qdrant_path: Path | None = qdrant_path_option(),
    qdrant_url: str | None = qdrant_url_option(),
    qdrant_api_key: str | None = qdrant_api_key_option(),
    config: Path | None = setting_option("config"),
    batch: int = typer.Option(128, "--batch", help="Points per write."),
    fmt: str | None = typer.Option(
        None, "--format", help="npy or jsonl; default: npy for a folder, else jsonl."
    ),
) -> None:
    """Create a collection with the export's vectors and write its points, then check the
    count."""
    raise typer.Exit(
        run_import(source, collection, qdrant_path, qdrant_url, qdrant_api_key, config, batch, fmt)
    )
