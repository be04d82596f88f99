"""The worker heartbeat carries each model's precision and, for int8 models, the quality gate's
figures and floors (what ``poolq status`` and dashboards read)."""

from types import SimpleNamespace

from poolq.worker.config.settings import Settings
from poolq.worker.engine.cpu.int8_quality import Check, QualityReport
from poolq.worker.runtime.worker_runtime import Runtime


def engine(precision: str, report: QualityReport | None = None) -> SimpleNamespace:
    model = SimpleNamespace(precision=precision, int8_report=report)
    return SimpleNamespace(model=model, stats_snapshot=lambda queries=False: {"batches": 0})


def test_heartbeat_reports_precision_and_int8_gate_figures():
    gate = QualityReport(
        42,
        [Check("embed", "mean_cosine", 0.9972, 0.99), Check("embed", "min_cosine", 0.9905, 0.97)],
    )
    vectorizer = SimpleNamespace(
        engines={"dense": engine("int8", gate), "sparse": engine("float32")}
    )
    writer = SimpleNamespace(points_written=0, write_calls=0, retries=0)
    beat = Runtime(Settings(), vectorizer, writer).heartbeat()  # type: ignore[arg-type]
    assert beat.precision == {"dense": "int8", "sparse": "float32"}
    assert beat.int8_quality == {
        "dense": {
            "texts": 42,
            "passed": True,
            "tasks": {
                "embed": {
                    "mean_cosine": {"value": 0.9972, "floor": 0.99},
                    "min_cosine": {"value": 0.9905, "floor": 0.97},
                }
            },
        }
    }
