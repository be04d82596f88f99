"""How a collection is stored: the profile's ``[collection]`` table, the way Qdrant advises for
scale. Applied to both backends where they support it (``sinks/collection_config.py`` turns it
into Qdrant parameters); a collection that differs is a schema mismatch naming these keys.

    [collection]
    multivector_on_disk = true       # multi-vectors (only read to rerank) stay on disk
    multivector_hnsw = false         # no HNSW graph for them (m = 0): they are never searched
    multivector_datatype = "float32" # or "float16": half the disk, scores within ~1e-3;
                                     # or "uint8": a quarter (sinks/store/uint8_codec.py)
    dense_quantization = "none"      # or "int8": scalar quantization kept in RAM, rescored
    dense_on_disk = false            # originals on disk (with int8 quantization in RAM)
    shard_number = 2                 # a Qdrant server only (Qdrant Edge has one shard)
    replication_factor = 2
    write_consistency_factor = 1

Plain Python: the profile parses it without loading Qdrant's client.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

MultiDatatype = Literal["float32", "float16", "uint8"]
DenseQuantization = Literal["none", "int8"]
_CHOICES: dict[str, tuple[str, ...]] = {
    "multivector_datatype": ("float32", "float16", "uint8"),
    "dense_quantization": ("none", "int8"),
}
_BOOLS = ("multivector_on_disk", "multivector_hnsw", "dense_on_disk")
SERVER_INTS = ("shard_number", "replication_factor", "write_consistency_factor")


@dataclass(frozen=True)
class CollectionSettings:
    """See the module docstring; the defaults are the built-in profile's."""

    multivector_on_disk: bool = True
    multivector_hnsw: bool = False
    multivector_datatype: MultiDatatype = "float32"
    dense_quantization: DenseQuantization = "none"
    dense_on_disk: bool = False
    shard_number: int | None = None
    replication_factor: int | None = None
    write_consistency_factor: int | None = None

    def __post_init__(self) -> None:
        for name in _BOOLS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"[collection] {name}: expected true or false, got {value!r}")
        for name, choices in _CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                allowed = ", ".join(repr(c) for c in choices)
                raise ValueError(f"[collection] {name}: expected one of {allowed}, got {value!r}")
        for name in SERVER_INTS:
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"[collection] {name}: expected an integer >= 1, got {value!r}")

    @classmethod
    def from_dict(cls, data: Any) -> CollectionSettings:
        """From the profile's ``[collection]`` table (None or empty: the defaults)."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValueError(
                f"[collection]: expected a table of settings, got {type(data).__name__}"
            )
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"[collection]: unknown keys {unknown}; allowed: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
