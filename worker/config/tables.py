"""One check for a table of a config file or profile: it is a table, and its keys are known."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def checked_table(where: str, data: Any, allowed: Collection[str]) -> dict[str, Any]:
    """``data`` as a dict, or a one-line ValueError naming ``where`` (``"profile: [reranker]"``)
    and what was expected against what was given."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a table, got {type(data).__name__}")
    if unknown := sorted(set(data) - set(allowed)):
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {sorted(allowed)}")
    return data
