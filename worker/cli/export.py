"""``poolq export``: every point of a collection as JSON lines (``sinks/jsonl_points.py``), from
a Qdrant Edge folder, a qdrant-client local-mode folder (an embedded store of an older poolq) or
a Qdrant server; ``-o -`` writes to stdout. With ``poolq import`` it moves a collection between
stores without re-encoding."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import error, fail
from poolq.worker.cli.store_target import (
    open_target,
    qdrant_api_key_option,
    qdrant_path_option,
    qdrant_url_option,
)


def run_export(
    collection: str, output: str, path: Path | None, url: str | None, api_key: str | None
) -> int:
    from tqdm import tqdm

    from poolq.sinks.transfer import TransferError, export_points

    store = open_target("export", path, url, api_key, local_mode_ok=True, must_exist=True)
    to_stdout = output == "-"
    target = Path(output)
    try:
        try:
            total = store.count(collection) if store.exists(collection) else None
        except Exception:
            total = None
        out = sys.stdout if to_stdout else target.open("w", encoding="utf-8")
        bar = tqdm(total=total, unit="pt", file=sys.stderr, desc=f"exporting {collection}")
        try:
            n = export_points(store, collection, out.write, progress=bar.update)
        finally:
            bar.close()
            if not to_stdout:
                out.close()
    except (TransferError, ValueError, RuntimeError, OSError) as e:
        if not to_stdout:
            with contextlib.suppress(OSError):
                target.unlink()  # no half-written file left behind
        error("export", e)
        return 2
    finally:
        store.close()
    where = "stdout" if to_stdout else repr(str(target))
    print(f"exported {n} points of {collection!r} to {where}", file=sys.stderr)
    return 0


@app.command("export")
def export_command(
    collection: str = typer.Option(..., "--collection", help="Collection (or alias) to export."),
    output: str = typer.Option(..., "-o", "--output", help="FILE.jsonl, or - for stdout."),
    qdrant_path: Path | None = qdrant_path_option(),
    qdrant_url: str | None = qdrant_url_option(),
    qdrant_api_key: str | None = qdrant_api_key_option(),
) -> None:
    """Write every point of a collection as one JSON line: id, payload, named vectors."""
    if output != "-" and Path(output).is_dir():
        fail("export", f"-o {output!r} is a folder; give a file name or -")
    raise typer.Exit(run_export(collection, output, qdrant_path, qdrant_url, qdrant_api_key))
