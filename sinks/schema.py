"""Collection schemas: named dense, sparse and multi-vectors, created once and checked after.

:func:`ensure_collection` creates a missing collection and otherwise only compares: an existing
collection (or the collection an alias points to) is never deleted, recreated or reconfigured;
only its missing payload indexes are added, on a Qdrant server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from poolq.sinks import payload as fields

VectorKind = Literal["dense", "sparse", "multi"]
_KINDS: tuple[VectorKind, ...] = ("dense", "sparse", "multi")

# payload fields every point carries, indexed on a server for the filters the sink uses
PAYLOAD_INDEXES: dict[str, models.PayloadSchemaType] = {
    fields.DOC_ID: models.PayloadSchemaType.KEYWORD,
    fields.CHUNK_INDEX: models.PayloadSchemaType.INTEGER,
}
DISTANCE = models.Distance.COSINE


class SchemaMismatchError(ValueError):
    """An existing collection does not have the vectors the schema asks for."""


@dataclass(frozen=True)
class VectorSpec:
    """One named vector: ``size`` is the dimension (dense, multi) and None for sparse."""

    name: str
    kind: VectorKind
    size: int | None
    model_id: str

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(
                f"vector {self.name!r}: kind must be one of {_KINDS}, got {self.kind!r}"
            )
        if self.kind == "sparse":
            if self.size is not None:
                raise ValueError(
                    f"vector {self.name!r}: a sparse vector has no size, expected None, got {self.size!r}"
                )
        elif isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(
                f"vector {self.name!r}: a {self.kind} vector needs an integer size >= 1, got {self.size!r}"
            )


@dataclass(frozen=True)
class CollectionSchema:
    """A collection's name (or alias) and its named vectors."""

    name: str
    vectors: tuple[VectorSpec, ...]

    def __post_init__(self) -> None:
        names = [v.name for v in self.vectors]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"collection {self.name!r}: duplicate vector names {dupes}")
        if not self.vectors:
            raise ValueError(f"collection {self.name!r}: expected at least one vector, got none")

    def vector(self, name: str) -> VectorSpec:
        """The spec of the vector called ``name`` (KeyError if there is none)."""
        for v in self.vectors:
            if v.name == name:
                return v
        raise KeyError(name)


def vector_params(spec: VectorSpec) -> models.VectorParams:
    """Qdrant parameters of a dense or multi-vector spec."""
    assert spec.size is not None and spec.kind != "sparse"
    multi = (
        models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
        if spec.kind == "multi"
        else None
    )
    return models.VectorParams(size=spec.size, distance=DISTANCE, multivector_config=multi)


def is_local(client: QdrantClient) -> bool:
    """True for embedded (``path=`` or ``:memory:``) clients, which have no payload indexes."""
    options: dict[str, Any] = getattr(client, "init_options", {}) or {}
    return options.get("path") is not None or options.get("location") == ":memory:"


def resolve_alias(client: QdrantClient, name: str) -> str:
    """The collection ``name`` points to when it is an alias, else ``name`` itself."""
    try:
        aliases = client.get_aliases().aliases
    except UnexpectedResponse as e:
        if e.status_code in (401, 403):  # a key scoped to collections; the server resolves them
            return name
        raise
    for alias in aliases:
        if alias.alias_name == name:
            return alias.collection_name
    return name


def ensure_collection(client: QdrantClient, schema: CollectionSchema) -> bool:
    """Create the collection (True), or check that the existing one matches (False).

    ``schema.name`` may be an alias. Raises :class:`SchemaMismatchError` saying what differs. An
    existing collection is never deleted, recreated or reconfigured; on a server, its missing
    ``doc_id``/``chunk_index`` payload indexes are added.
    """
    target = resolve_alias(client, schema.name)
    if not client.collection_exists(target) and _create(client, target, schema):
        _ensure_payload_indexes(client, target, have={})
        return True
    info = client.get_collection(target)
    problems = schema_differences(schema, info.config.params)
    if problems:
        where = repr(target) if target == schema.name else f"{target!r} (alias {schema.name!r})"
        raise SchemaMismatchError(
            f"collection {where} does not match the schema: " + "; ".join(problems)
        )
    _ensure_payload_indexes(client, target, have=info.payload_schema or {})
    return False


def _create(client: QdrantClient, name: str, schema: CollectionSchema) -> bool:
    dense = {v.name: vector_params(v) for v in schema.vectors if v.kind != "sparse"}
    sparse = {
        v.name: models.SparseVectorParams(modifier=None)
        for v in schema.vectors
        if v.kind == "sparse"
    }
    try:
        client.create_collection(name, vectors_config=dense, sparse_vectors_config=sparse or None)
    except UnexpectedResponse as e:
        if e.status_code == 409:  # another worker created it first: compare instead
            return False
        raise
    return True


def _ensure_payload_indexes(client: QdrantClient, name: str, have: dict[str, Any]) -> None:
    """Add the missing ``doc_id``/``chunk_index`` indexes (server only; idempotent)."""
    if is_local(client):  # local mode has no payload indexes and warns about them
        return
    for field, kind in PAYLOAD_INDEXES.items():
        if field not in have:
            client.create_payload_index(name, field, field_schema=kind, wait=True)


def schema_differences(schema: CollectionSchema, params: models.CollectionParams) -> list[str]:
    """Human-readable differences between ``schema`` and a collection's parameters."""
    vectors = params.vectors
    dense: dict[str, models.VectorParams]
    if vectors is None:
        dense = {}
    elif isinstance(vectors, models.VectorParams):
        dense = {"": vectors}  # a single unnamed vector
    else:
        dense = dict(vectors)
    sparse: dict[str, models.SparseVectorParams] = dict(params.sparse_vectors or {})

    problems: list[str] = []
    for spec in schema.vectors:
        if spec.kind == "sparse":
            problems += _sparse_differences(spec, dense, sparse)
        else:
            problems += _dense_differences(spec, dense, sparse)
    wanted = {v.name for v in schema.vectors}
    for name in [*dense, *sparse]:
        if name not in wanted:
            what = "the unnamed default vector" if name == "" else f"vector {name!r}"
            problems.append(f"collection has extra {what}")
    return problems


def _dense_differences(
    spec: VectorSpec,
    dense: dict[str, models.VectorParams],
    sparse: dict[str, models.SparseVectorParams],
) -> list[str]:
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
    if have.distance != DISTANCE:
        problems.append(
            f"{label}: distance {_val(DISTANCE)} expected, collection has {_val(have.distance)}"
        )
    return problems


def _sparse_differences(
    spec: VectorSpec,
    dense: dict[str, models.VectorParams],
    sparse: dict[str, models.SparseVectorParams],
) -> list[str]:
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


def _kind_word(kind: str, article: bool = False) -> str:
    word = {"dense": "single vector", "multi": "multivector", "sparse": "sparse vector"}[kind]
    return f"a {word}" if article else word


def _val(x: Any) -> str:
    return str(getattr(x, "value", x))
