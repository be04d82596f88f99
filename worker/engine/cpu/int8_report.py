"""The int8 quality gate's verdict: each figure against its floor (:class:`Check`) and the
report of one gate run (:class:`QualityReport`). No torch here: a cached verdict is read back
(``openvino/cache.py``) and printed by starts that import no torch (``openvino/direct_plan.py``);
the figures are measured in ``int8_quality.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    task: str
    figure: str  # e.g. "mean_cosine"
    value: float
    floor: float
    higher_is_better: bool = True

    @property
    def ok(self) -> bool:
        return self.value >= self.floor if self.higher_is_better else self.value <= self.floor

    def __str__(self) -> str:
        op = (">=" if self.higher_is_better else "<=") if self.ok else "VIOLATES"
        return f"{self.figure} {self.value:.4f} ({op} {self.floor:g})"


@dataclass
class QualityReport:
    texts: int
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def summary(self) -> str:
        by_task: dict[str, list[str]] = {}
        for c in self.checks:
            by_task.setdefault(c.task, []).append(str(c))
        parts = "; ".join(f"{t}: {', '.join(v)}" for t, v in by_task.items())
        verdict = "passed" if self.passed else "REFUSED"
        return f"int8 vs float32 on {self.texts} texts: {parts}: {verdict}"

    def as_dict(self) -> dict[str, Any]:
        """For the heartbeat: ``{"texts", "passed", "tasks": {task: {figure: {value, floor}}}}``."""
        tasks: dict[str, dict[str, dict[str, float]]] = {}
        for c in self.checks:
            tasks.setdefault(c.task, {})[c.figure] = {
                "value": round(c.value, 6),
                "floor": c.floor,
            }
        return {"texts": self.texts, "passed": self.passed, "tasks": tasks}
