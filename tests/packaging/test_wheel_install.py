"""A release as users get it: the sdist and the wheel build from this tree (``dists`` in
conftest.py), hold the packages pyproject.toml lists and no test code, carry the version from
its one source (``poolq/__init__.py``), and the wheel installed into a clean venv runs
``poolq --version`` and serves ``from poolq import PoolqClient`` from that venv, not from here."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path, PurePosixPath

import pytest

from poolq import __version__
from tests.packaging.conftest import PYPROJECT, ROOT, package_dirs

pytestmark = pytest.mark.slow  # builds the distributions, makes a venv, runs subprocesses


def packages() -> list[str]:
    return list(PYPROJECT["tool"]["setuptools"]["packages"])


def is_test_code(name: str) -> bool:
    """A test module or a stand-in kept for tests: anything under a ``tests`` package."""
    parts = PurePosixPath(name).parts
    base = parts[-1]
    return (
        any(p in ("tests", "test") for p in parts[:-1])
        or base == "conftest.py"
        or (base.startswith("test_") and base.endswith(".py"))
    )


def test_both_distributions_carry_the_one_version(dists):
    assert dists.wheel.name == f"poolq-{__version__}-py3-none-any.whl"
    assert dists.sdist.name == f"poolq-{__version__}.tar.gz"
    with zipfile.ZipFile(dists.wheel) as whl:
        meta = Parser().parsestr(
            whl.read(f"poolq-{__version__}.dist-info/METADATA").decode("utf-8")
        )
    assert meta["Version"] == __version__
    assert meta["License-Expression"] == "Apache-2.0"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Documentation", "Repository", "Changelog"}
    assert all(u.startswith("https://") for u in urls.values())
    assert "Programming Language :: Python :: 3.11" in meta.get_all("Classifier")
    assert meta["Author"] or meta["Author-email"]
    assert meta.get_all("License-File") == ["LICENSE"]
    licence = whl_text(dists.wheel, f"poolq-{__version__}.dist-info/licenses/LICENSE")
    assert "Apache License" in licence and "Version 2.0" in licence


def whl_text(wheel, name: str) -> str:
    with zipfile.ZipFile(wheel) as whl:
        return whl.read(name).decode("utf-8")


def test_the_wheel_holds_every_package_and_no_test_code(dists):
    names = zipfile.ZipFile(dists.wheel).namelist()
    for package in packages():
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    assert {n.split("/")[0] for n in names} == {"poolq", f"poolq-{__version__}.dist-info"}
    assert [n for n in names if is_test_code(n)] == []
    entry = zipfile.ZipFile(dists.wheel).read(f"poolq-{__version__}.dist-info/entry_points.txt")
    assert "poolq = poolq.worker.cli:main" in entry.decode()


def test_the_sdist_holds_the_sources_and_no_test_code(dists):
    top = f"poolq-{__version__}"
    with tarfile.open(dists.sdist) as sdist:
        names = [m.name.removeprefix(top + "/") for m in sdist.getmembers() if m.isfile()]
    assert {"pyproject.toml", "README.md", "PKG-INFO", "LICENSE"} <= set(names)
    for package, folder in package_dirs().items():
        assert f"{folder}/__init__.py" in names, package
    assert [n for n in names if is_test_code(n)] == []


def test_the_wheel_runs_from_a_clean_venv(dists, tmp_path):
    """Installed without dependencies (there is no index to fetch them from); this venv's
    site-packages is made visible to the new one by a .pth file, after its own site-packages,
    and without this venv's .pth files (so not the editable install of the tree)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py, poolq = venv / "bin" / "python", venv / "bin" / "poolq"
    subprocess.run(
        [py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(dists.wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "poolq_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}

    version = subprocess.run(
        [poolq, "--version"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"poolq {__version__}"

    code = (
        "import poolq, poolq.worker.cli\n"
        "from poolq import PoolqClient\n"
        "print(poolq.__file__)\n"
        "print(poolq.worker.cli.__file__)\n"
        "print(PoolqClient.__module__, poolq.__version__)\n"
    )
    out = subprocess.run(
        [py, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    top, cli, client = out.stdout.strip().splitlines()
    print("poolq in the clean venv:", top)
    assert top == f"{site}/poolq/__init__.py"
    assert cli.startswith(site + "/") and not cli.startswith(str(ROOT))
    assert client == f"poolq.ingest.client {__version__}"
