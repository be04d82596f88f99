"""What differs between a schema and an existing collection's parameters, in words: the vectors
(names, kinds, sizes, distance, comparator, modifier) and the ``[collection]`` settings
(on disk, datatype, HNSW of the multi-vector, quantization, a server's sharding), each naming
the setting that asks for it. The same comparison serves both backends (their parameters come
back as ``models.CollectionParams``)."""

from __future__ import annotations

from typing import Any

from qdrant_client import models

from poolq.sinks.collection_config import DISTANCE, multi_distance, vector_params
from poolq.sinks.collection_settings import SERVER_INTS
from poolq.sinks.schema import CollectionSchema, VectorSpec

Dense = dict[str, models.VectorParams]
Sparse = dict[str, models.SparseVectorParams]


def schema_differences(schema: CollectionSchema, params: models.CollectionParams) -> list[str]:
    """Human-readable differences between ``schema`` and a collection's parameters."""
    vectors = params.vectors
    dense: Dense
    if vectors is None:
        dense = {}
    elif isinstance(vectors, models.VectorParams):
        dense = {"": vectors}  # a single unnamed vector
    else:
        dense = dict(vectors)
    sparse: Sparse = dict(params.sparse_vectors or {})

    problems: list[str] = []
    for spec in schema.vectors:
        if spec.kind == "sparse":
            problems += _sparse_differences(spec, dense, sparse)
        else:
            found = _dense_differences(spec, dense, sparse)
            if not found and spec.name in dense:  # the right vector: is it stored as asked?
                found = _storage_differences(spec, schema, dense[spec.name])
            problems += found
    wanted = {v.name for v in schema.vectors}
    for name in [*dense, *sparse]:
        if name not in wanted:
            what = "the unnamed default vector" if name == "" else f"vector {name!r}"
            problems.append(f"collection has extra {what}")
    problems += _server_differences(schema, params)
    return problems


def _dense_differences(spec: VectorSpec, dense: Dense, sparse: Sparse) -> list[str]:
    label = f"vector {spec.name!r}"
    if spec.name in sparse:
        return [f"{label}: {_kind_word(spec.kind)} expected, collection has a sparse vector"]
    have = dense.get(spec.name)
    if have is None:
        return [f"{label} missing from collection"]
    problems = []
    have_kind = "dense" if have.multivector_config is None else "multi"
    if have_kind != spec.kind:
        problems.append(
            f"{label}: {_kind_word(spec.kind)} expected, collection has {_kind_word(have_kind, True)}"
        )
    elif spec.kind == "multi":
        assert have.multivector_config is not None
        cmp = have.multivector_config.comparator
        if cmp != models.MultiVectorComparator.MAX_SIM:
            problems.append(f"{label}: comparator max_sim expected, collection has {_val(cmp)}")
    if have.size != spec.size:
        problems.append(f"{label}: size {spec.size} expected, collection has {have.size}")
    want = multi_distance(have.datatype) if have_kind == "multi" else DISTANCE
    if have.distance != want:
        problems.append(
            f"{label}: distance {_val(want)} expected, collection has {_val(have.distance)}"
        )
    return problems


def _storage_differences(
    spec: VectorSpec, schema: CollectionSchema, have: models.VectorParams
) -> list[str]:
    """The ``[collection]`` settings of one dense or multi-vector that the collection lacks."""
    want = vector_params(spec, schema.settings)
    label = f"vector {spec.name!r}"
    problems = []

    def differs(what: str, key: str, expected: Any, got: Any) -> None:
        if expected != got:
            problems.append(
                f"{label}: {what} {_word(expected)} expected ([collection] {key}), "
                f"collection has {_word(got)}"
            )

    if spec.kind == "multi":
        differs("on_disk", "multivector_on_disk", bool(want.on_disk), bool(have.on_disk))
        differs("datatype", "multivector_datatype", _datatype(want), _datatype(have))
        differs("HNSW index", "multivector_hnsw", _hnsw_on(want), _hnsw_on(have))
    else:
        differs("on_disk", "dense_on_disk", bool(want.on_disk), bool(have.on_disk))
        differs("quantization", "dense_quantization", _quantization(want), _quantization(have))
    return problems


def _server_differences(schema: CollectionSchema, params: models.CollectionParams) -> list[str]:
    """Sharding and replication, where the settings name them and the collection has them
    (Qdrant Edge has neither: one shard, no replicas)."""
    problems = []
    for key in SERVER_INTS:
        want, have = getattr(schema.settings, key), getattr(params, key, None)
        if want is not None and have is not None and want != have:
            problems.append(f"{key} {want} expected ([collection] {key}), collection has {have}")
    return problems


def _sparse_differences(spec: VectorSpec, dense: Dense, sparse: Sparse) -> list[str]:
    label = f"vector {spec.name!r}"
    if spec.name in dense:
        other = "multi" if dense[spec.name].multivector_config is not None else "dense"
        return [f"{label}: sparse vector expected, collection has {_kind_word(other, True)}"]
    have = sparse.get(spec.name)
    if have is None:
        return [f"{label} missing from collection"]
    if have.modifier not in (None, models.Modifier.NONE):
        return [f"{label}: modifier none expected, collection has {_val(have.modifier)}"]
    return []


def _datatype(p: models.VectorParams) -> str:
    return "float32" if p.datatype is None else str(_val(p.datatype))


def _hnsw_on(p: models.VectorParams) -> bool:
    return p.hnsw_config is None or p.hnsw_config.m != 0


def _quantization(p: models.VectorParams) -> str:
    q = p.quantization_config
    if q is None:
        return "none"
    if isinstance(q, models.ScalarQuantization):
        return str(_val(q.scalar.type))
    return type(q).__name__


def _word(x: Any) -> str:
    return ("true" if x else "false") if isinstance(x, bool) else str(x)


def _kind_word(kind: str, article: bool = False) -> str:
    word = {"dense": "single vector", "multi": "multivector", "sparse": "sparse vector"}[kind]
    return f"a {word}" if article else word


def _val(x: Any) -> str:
    return str(getattr(x, "value", x))
