"""The demo stops when `poolq enqueue --wait` reports a failure (it used to carry on after
exit status 1: documents or jobs failed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from poolq.worker.cli.demo import check_enqueue


def test_a_clean_enqueue_lets_the_demo_go_on(capsys: pytest.CaptureFixture[str]) -> None:
    check_enqueue(0, Path("worker.log"))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("rc", [1, 2, 130])
def test_any_failed_enqueue_fails_the_demo_with_its_status(
    rc: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        check_enqueue(rc, Path("work/worker.log"))
    assert info.value.code == rc
    err = capsys.readouterr().err
    assert f"exit status {rc}" in err and "work/worker.log" in err
