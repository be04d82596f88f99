"""``poolq export`` and ``poolq import`` with ``--qdrant-url grpc://...``: a collection the
worker wrote on the endpoint exported (npy and JSON lines), imported under a new name on the
endpoint (count verified, vectors and payloads bit for bit, read back through qdrant-client),
moved into an embedded folder unchanged, and served by the worker as it was."""

from __future__ import annotations

import json

import pytest

from poolq.ingest.sample_corpus import passages
from tests.cli_process import poolq
from tests.integration.server.helpers import (
    assert_same_hits,
    connect,
    ingest,
    scroll_all,
    search,
)

pytestmark = pytest.mark.slow


def everything(client, collection) -> dict:
    """id -> (payload, vectors) as qdrant-client reads them (float32 values as floats)."""
    out = {}
    for p in scroll_all(client, collection):
        sparse = p.vector["sparse"]
        vectors = {**p.vector, "sparse": (list(sparse.indices), list(sparse.values))}
        out[str(p.id)] = (p.payload, vectors)
    return out


def parsed(text: str) -> dict:
    """JSON lines by point id (key order aside: floats compared as the text gave them)."""
    points = [json.loads(line) for line in text.splitlines()]
    return {p["id"]: p for p in points}


def ok(out, *expected: str):
    assert out.returncode == 0, out.stderr
    for text in expected:
        assert text in out.stderr, out.stderr
    return out


@pytest.mark.timeout(300)
def test_export_import_round_trips_through_the_server(worker, redis_url, endpoint, tmp_path):
    docs = [{"id": f"d{i}", "text": t, "metadata": {"i": i}} for i, t in enumerate(passages(8))]
    docs.append({"id": "long", "text": "\n\n".join(passages(14)[8:])})  # several chunks
    n = sum(o.result.points for o in ingest(redis_url, "mv", docs, job_size=5))
    url = ["--qdrant-url", endpoint.url]
    npy, lines = tmp_path / "mv", tmp_path / "mv.jsonl"
    ok(poolq("export", "--collection", "mv", *url, "-o", str(npy)),
       f"exported {n} points of 'mv'", "(npy)")  # fmt: skip
    ok(poolq("export", "--collection", "mv", *url, "-o", str(lines)), f"exported {n} points")
    assert len(lines.read_text().splitlines()) == n
    ok(poolq("import", str(npy), "--collection", "mv2", *url),
       f"imported {n} points into 'mv2'", "count verified")  # fmt: skip
    client = connect(endpoint.port)
    try:
        names = {c.name for c in client.get_collections().collections}
        again = poolq("import", str(npy), "--collection", "mv2", *url)
        assert again.returncode == 2, again.stderr
        # refused before any progress bar: the one line is all of stderr
        assert again.stderr.strip().splitlines() == [
            (
                "poolq import: error: collection 'mv2' exists already: import writes a new "
                "collection (delete it, or choose another --collection)"
            )
        ]
        assert {c.name for c in client.get_collections().collections} == names
        original = everything(client, "mv")
        assert len(original) == n
        assert everything(client, "mv2") == original  # bit for bit: float32 both ways
        aliases = {a.alias_name: a.collection_name for a in client.get_aliases().aliases}
        assert aliases["mv2"].startswith("mv2__")
    finally:
        client.close()

    # into an embedded folder and out again: the same points, bit for bit
    folder = tmp_path / "edge"
    ok(poolq("import", str(npy), "--collection", "mv", "--qdrant-path", str(folder)))
    out = ok(poolq("export", "--collection", "mv", "--qdrant-path", str(folder), "-o", "-"))
    exported = parsed(lines.read_text())
    assert parsed(out.stdout) == exported

    # the worker serves the imported collection as the one it wrote, and writes to it
    for mode in ("hybrid", "rerank"):
        got = search(redis_url, docs[3]["text"], "mv2", mode=mode, limit=5)
        assert got.hits[0].doc_id == "d3"
        assert_same_hits(
            got.hits, search(redis_url, docs[3]["text"], "mv", mode=mode, limit=5).hits
        )
    (outcome,) = ingest(redis_url, "mv2", [{"id": "new", "text": "Written after the import."}])
    assert outcome.result.points == 1
