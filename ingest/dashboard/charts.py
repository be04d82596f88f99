"""The overview's charts as SVG polylines, drawn on the server (no chart library, no script):
a metric's points of the last hour scaled into a small box."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from poolq.wire import constants

WIDTH, HEIGHT = 360, 60
SPAN_S = constants.SERIES_SLOTS * constants.SERIES_STEP_S


@dataclass(frozen=True)
class Chart:
    metric: str
    points: str  # the polyline's "x,y x,y ..."
    peak: int  # the highest value (the box's top)
    latest: int


def chart(metric: str, series: Sequence[Sequence[float]], now: float) -> Chart:
    """``series``: ``[unix seconds, value]`` pairs, oldest first."""
    start = now - SPAN_S
    pts = [(t, v) for t, v in series if t >= start]
    peak = max((int(v) for _, v in pts), default=0)
    scale = (HEIGHT - 4) / peak if peak else 0.0
    xy = [f"{(t - start) / SPAN_S * WIDTH:.1f},{HEIGHT - 2 - v * scale:.1f}" for t, v in pts]
    latest = int(pts[-1][1]) if pts else 0
    return Chart(metric, " ".join(xy), peak, latest)
