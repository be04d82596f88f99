"""``multivector_datatype = "float16"`` on Qdrant Edge: half the disk, and MaxSim scores within
1e-3 of MaxSim computed in float64 from the float32 originals, in the same order."""

import numpy as np

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.maxsim import maxsim
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec

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
