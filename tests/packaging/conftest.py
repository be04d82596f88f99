"""One build of this tree per test session, shared by the packaging tests: ``python -m build
--wheel --sdist --no-isolation`` (no network for build dependencies: setuptools comes from the
venv) on a copy of the sources, so nothing is written into the working tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Dists:
    wheel: Path
    sdist: Path
    log: str


def package_dirs() -> dict[str, str]:
    """The source folders setuptools maps to packages (``poolq.worker`` = ``worker/``, ...)."""
    return dict(PYPROJECT["tool"]["setuptools"]["package-dir"])


@pytest.fixture(scope="session")
def dists(tmp_path_factory) -> Dists:
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for path in [ROOT / "pyproject.toml", ROOT / "README.md", *ROOT.glob("LICEN[CS]E*")]:
        shutil.copy(path, src / path.name)
    for folder in sorted(set(package_dirs().values())):
        shutil.copytree(
            ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--sdist", "--no-isolation",
         "--outdir", str(out), str(src)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (wheel,) = out.glob("poolq-*.whl")
    (sdist,) = out.glob("poolq-*.tar.gz")
    return Dists(wheel, sdist, done.stdout)


@pytest.fixture(scope="session")
def wheel(dists) -> Path:
    return dists.wheel
