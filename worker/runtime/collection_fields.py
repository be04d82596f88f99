"""The metadata fields of each collection, so a search can refuse a filter that can match nothing.

Every write records each metadata key it wrote and its JSON types in the Redis hash
``COLLECTION_FIELDS_KEY`` (field = the key, nested keys dotted as filters write them; value =
comma-separated types among ``string, integer, float, boolean, array, object, null``; an array
also records its elements' types, so ``tags=["a"]`` is ``array,string``). The worker's search path
checks filters against it plus the payload's own fields (:data:`TOP_LEVEL_FIELDS`): an unknown key,
or a range on a field that holds no numbers, is refused, naming the key and the known fields.

The registry only grows (a superset is safe: it never refuses a field that exists). A collection
without one (written before it existed) has its metadata filters let through; a field a registry
lacks may still be in the collection (written before the registry, or by another writer), so the
search path asks the store before refusing, and records what it finds (``search_service.py``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from poolq.wire import constants
from poolq.wire.filters import Condition
from poolq.wire.payload import LABELS, METADATA, OBJECT_FIELDS, TOP_LEVEL_FIELDS

NUMERIC = frozenset({"integer", "float"})
# the payload's own numeric fields; every other top-level field holds strings (or an object)
NUMERIC_TOP_LEVEL = frozenset(
    {"chunk_index", "chunk_count", "char_start", "char_end", "page_start", "page_end"}
)
# a physical collection behind an alias (sinks/aliases.py): its fields are the alias's
_PHYSICAL = re.compile(r"__\d{14}_[0-9a-f]{4}$")
_KEY = re.compile(r"\s*([A-Za-z_][\w.\-]*)")

# HGET + merge + HSET per key, atomic: concurrent jobs never drop each other's types
_MERGE = """
for i = 1, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  local merged, seen, out = ARGV[i + 1], {}, {}
  if cur then
    for t in string.gmatch(cur .. ',' .. ARGV[i + 1], '[^,]+') do
      if not seen[t] then seen[t] = true; table.insert(out, t) end
    end
    merged = table.concat(out, ',')
  end
  if merged ~= cur then redis.call('HSET', KEYS[1], ARGV[i], merged) end
end
return 1
"""


def registry_name(collection: str) -> str:
    """The collection whose registry a write to ``collection`` adds to (an alias's physical
    collection counts as the alias, which is what searches name)."""
    return _PHYSICAL.sub("", collection)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def metadata_fields(metadatas: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Every key path of the metadata objects (nested keys dotted) -> the JSON types seen."""
    out: dict[str, set[str]] = {}

    def walk(path: str, value: Any) -> None:
        out.setdefault(path, set()).add(json_type(value))
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{path}.{k}", v)
        elif isinstance(value, list | tuple):
            for item in value:  # elements: their types on the array's own path
                if isinstance(item, dict):
                    for k, v in item.items():
                        walk(f"{path}.{k}", v)
                else:
                    walk(path, item)

    for metadata in metadatas:
        for key, value in metadata.items():
            walk(key, value)
    return out


async def record_fields(redis: Any, collection: str, fields: Mapping[str, set[str]]) -> None:
    """Merge ``fields`` into the collection's registry (one atomic script call)."""
    if not fields:
        return
    args: list[str] = []
    for key, types in sorted(fields.items()):
        args += [key, ",".join(sorted(types))]
    key = constants.COLLECTION_FIELDS_KEY.format(collection=registry_name(collection))
    await redis.eval(_MERGE, 1, key, *args)


class RecentFields:
    """What this worker recorded in each collection's registry lately, so that a write adding
    nothing new makes no call (most jobs of a collection repeat its keys and types; the
    registry only grows). An entry is forgotten ``remember_s`` after it was written: a registry
    that Redis lost (a restart without persistence) is written again by the next job after that."""

    def __init__(self, remember_s: float = 60.0) -> None:
        self.remember_s = remember_s
        self._seen: dict[str, tuple[float, dict[str, set[str]]]] = {}

    def new_in(self, collection: str, fields: Mapping[str, set[str]]) -> bool:
        """Whether ``fields`` holds a key or type not recorded here lately."""
        seen = self._seen.get(registry_name(collection))
        if seen is None or time.monotonic() - seen[0] > self.remember_s:
            return True
        known = seen[1]
        return any(not types <= known.get(key, set()) for key, types in fields.items())

    def recorded(self, collection: str, fields: Mapping[str, set[str]]) -> None:
        name = registry_name(collection)
        seen = self._seen.get(name)
        now = time.monotonic()
        if seen is None or now - seen[0] > self.remember_s:
            seen = self._seen[name] = (now, {})
        for key, types in fields.items():
            seen[1].setdefault(key, set()).update(types)


async def read_fields(redis: Any, collection: str) -> dict[str, set[str]]:
    raw = await redis.hgetall(constants.COLLECTION_FIELDS_KEY.format(collection=collection))
    return {_text(k): set(_text(v).split(",")) - {""} for k, v in raw.items()}


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class FilterProblem:
    """Why a filter can match nothing: ``unknown`` key, or a ``range`` on non-numbers."""

    expr: str
    key: str  # as the user wrote it
    field: str  # the metadata key (or the top-level field) it names
    kind: str  # "unknown" | "range"
    metadata: bool  # whether ``field`` is a metadata key (else a payload field)
    types: frozenset[str] = frozenset()

    def message(self, collection: str, fields: Mapping[str, set[str]]) -> str:
        if self.kind == "unknown":
            meta = ", ".join(sorted(fields)) or "(none recorded)"
            return (
                f"filter {self.expr!r}: collection {collection!r} has no field {self.key!r}; "
                f"known fields: metadata {meta}; payload {', '.join(sorted(TOP_LEVEL_FIELDS))}"
            )
        held = ", ".join(sorted(self.types)) or "no"
        hint = ""
        if re.search(r"(?<![<>!])=", self.expr) and not re.search(r"[<>]", self.expr):
            hint = f' (quote the value to match it as a string: {self.key}="...")'
        return (
            f"filter {self.expr!r}: a range needs numbers, but field {self.key!r} of collection "
            f"{collection!r} holds {held} values{hint}"
        )


def filter_problem(
    expr: str, condition: Condition, fields: Mapping[str, set[str]]
) -> FilterProblem | None:
    """What is wrong with one parsed filter against a collection's known ``fields`` (None when
    it may match). Keys of the payload's own fields are always known."""
    m = _KEY.match(expr)
    key = m.group(1) if m else condition.path
    path = condition.path
    head, _, _ = path.partition(".")
    if path in TOP_LEVEL_FIELDS or (head in OBJECT_FIELDS and head != METADATA):
        label_score = head == LABELS and path.endswith(".score")  # labels.<name>.score
        if condition.kind == "range" and path not in NUMERIC_TOP_LEVEL and not label_score:
            held = frozenset({"object" if head in OBJECT_FIELDS else "string"})
            return FilterProblem(expr, key, path, "range", False, held)
        return None
    field = path.removeprefix(METADATA + ".")
    types = fields.get(field)
    if types is None:
        if any(k.startswith(field + ".") for k in fields):
            return None  # an object holding known keys
        return FilterProblem(expr, key, field, "unknown", True)
    if condition.kind == "range" and not types & NUMERIC:
        return FilterProblem(expr, key, field, "range", True, frozenset(types))
    return None
