"""``poolq demo``: the end-to-end demo on the bundled models."""

from __future__ import annotations

from poolq.worker.cli.app import app


@app.command()
def demo() -> None:
    """Run the end-to-end demo on the bundled models."""
    from poolq.worker.dev.demo import run_demo

    run_demo()
