"""The dashboard's templates and static files ship in the wheel (package data), every one of
them, and in the sdist."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

from poolq.wire.version import __version__

pytestmark = pytest.mark.slow  # builds the distributions
FOLDER = Path(__file__).resolve().parents[2] / "ingest" / "dashboard"


def shipped() -> list[str]:
    return sorted(
        p.relative_to(FOLDER).as_posix()
        for sub in ("templates", "static")
        for p in (FOLDER / sub).iterdir()
        if p.is_file()
    )


def test_the_wheel_and_the_sdist_hold_every_template_and_static_file(dists):
    files = shipped()
    assert "templates/base.html" in files and "static/dashboard.js" in files
    names = set(zipfile.ZipFile(dists.wheel).namelist())
    assert [f for f in files if f"poolq/ingest/dashboard/{f}" not in names] == []
    with tarfile.open(dists.sdist) as sdist:
        top = f"poolq-{__version__}/ingest/dashboard/"
        in_sdist = {m.name.removeprefix(top) for m in sdist.getmembers() if m.name.startswith(top)}
    assert [f for f in files if f not in in_sdist] == []
