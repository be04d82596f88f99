"""``multivector_datatype = "float16"`` on Qdrant Edge: half the disk, and MaxSim scores within
1e-3 of MaxSim computed in float64 from the float32 originals, in the same order."""

import json

import numpy as np

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from tests.support.maxsim import maxsim

SCHEMA = CollectionSchema(
    "c",
    (VectorSpec("dense", "dense", 384, "m"), VectorSpec("colbert", "multi", 384, "m")),
    CollectionSettings(multivector_datatype="float16"),
)


def test_float16_multivectors_keep_maxsim(edge):
    rng = np.random.default_rng(0)
    edge.create_collection("c", SCHEMA)
    docs = [
        rng.standard_normal((int(rng.integers(16, 80)), 384)).astype(np.float32) for _ in range(120)
    ]
    edge.upsert(
        "c",
        [
            to_point_struct(
                PointRecord(
                    point_id("d", i), {"dense": rng.standard_normal(384), "colbert": d}, {}
                ),
                arrays_ok=True,
            )
            for i, d in enumerate(docs)
        ],
    )
    for _ in range(5):
        q = rng.standard_normal((12, 384)).astype(np.float32)
        got = edge.query(
            {"collection_name": "c", "query": q.tolist(), "using": "colbert", "limit": 120}
        )
        want = {point_id("d", i): maxsim(q, d) for i, d in enumerate(docs)}
        assert max(abs(p.score - want[p.id]) for p in got) < 1e-3
        assert [p.id for p in got[:10]] == sorted(want, key=lambda k: -want[k])[:10]


def test_export_then_import_moves_float16_multivectors_within_one_step(edge, tmp_path):
    """Edge normalises a cosine vector on every write, so a float16 one exported and written
    again may move by one float16 step (README: why float16 is not the default); dense vectors
    and payloads stay bit for bit."""
    from poolq.sinks.store.edge import EdgeStore
    from poolq.sinks.transfer import export_points, import_points

    rng = np.random.default_rng(1)
    small = CollectionSchema(
        "c",
        (VectorSpec("dense", "dense", 16, "m"), VectorSpec("colbert", "multi", 16, "m")),
        CollectionSettings(multivector_datatype="float16"),
    )
    edge.create_collection("c", small)
    edge.upsert(
        "c",
        [
            to_point_struct(
                PointRecord(
                    point_id("d", i),
                    {
                        "dense": rng.standard_normal(16).astype(np.float32),
                        "colbert": rng.standard_normal((int(rng.integers(2, 9)), 16)),
                    },
                    {"doc_id": f"d{i}", "n": i},
                ),
                arrays_ok=True,
            )
            for i in range(200)
        ],
    )
    lines: list[str] = []
    export_points(edge, "c", lines.append)
    dest = EdgeStore(tmp_path / "dest")
    try:
        import_points(dest, "c", lines, settings=small.settings)
        again: list[str] = []
        export_points(dest, "c", again.append)
    finally:
        dest.close()
    before = {p["id"]: p for p in map(json.loads, lines)}
    after = {p["id"]: p for p in map(json.loads, again)}
    assert before.keys() == after.keys() and len(before) == 200
    steps = []
    for pid, p in before.items():
        assert after[pid]["payload"] == p["payload"]
        assert after[pid]["vector"]["dense"] == p["vector"]["dense"]
        a = np.asarray(p["vector"]["colbert"], np.float16).view(np.int16).astype(int)
        b = np.asarray(after[pid]["vector"]["colbert"], np.float16).view(np.int16).astype(int)
        steps.append(int(np.abs(a - b).max()))
    assert max(steps) <= 1
    assert sum(steps) > 0  # not bit for bit: what the README says
