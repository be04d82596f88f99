"""Collection schemas: named dense, sparse and multi-vectors, and how the collection is stored.

Plain data: ``sinks/collection_config.py`` turns a schema into Qdrant parameters,
``sinks/schema_diff.py`` compares it with a collection, ``sinks/collections.py`` creates a
missing collection or checks an existing one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from poolq.sinks.collection_settings import CollectionSettings

VectorKind = Literal["dense", "sparse", "multi"]
_KINDS: tuple[VectorKind, ...] = ("dense", "sparse", "multi")


class SchemaMismatchError(ValueError):
    """An existing collection does not have the vectors or settings the schema asks for."""


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
    """A collection's name (or alias), its named vectors and its storage settings."""

    name: str
    vectors: tuple[VectorSpec, ...]
    settings: CollectionSettings = field(default_factory=CollectionSettings)

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

    def renamed(self, name: str) -> CollectionSchema:
        """The same vectors and settings under another name (a physical collection)."""
        return dataclasses.replace(self, name=name)
