"""One namespace: the installed distribution holds ``poolq`` and nothing else at the top of
site-packages, so an application's own ``worker``, ``ingest`` or ``sinks`` package is never
shadowed. Checked on a wheel built from this tree (``dists`` in conftest.py), installed into a
folder of its own."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fresh interpreters (subprocesses)

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "poolq": "poolq",  # the package's top: poolq/__init__.py
    "worker": "poolq/worker",
    "ingest": "poolq/ingest",
    "sinks": "poolq/sinks",
    "wire": "poolq/wire",
}


def expected_files() -> set[str]:
    want: set[str] = set()
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            want.add(f"{package}/{path.relative_to(ROOT / folder).as_posix()}")
    return want


def test_the_wheel_installs_only_the_poolq_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"poolq"}
    py = {n for n in names if n.endswith(".py")}
    assert py == expected_files()  # every module once, none left behind, none twice


def test_an_application_with_its_own_worker_package_imports_both(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    app = tmp_path / "app"
    for name in ("worker", "ingest", "sinks", "wire"):
        (app / name).mkdir(parents=True)
        (app / name / "__init__.py").write_text(f"OWNER = 'the application: {name}'\n")
    code = (
        "import worker, ingest, sinks, wire\n"
        "import poolq\n"
        "from poolq import PoolqClient\n"
        "from poolq.wire import constants\n"
        "import poolq.worker, poolq.ingest.client, poolq.wire.search_results\n"
        "assert worker.OWNER == 'the application: worker', worker.__file__\n"
        "assert ingest.OWNER == 'the application: ingest' and sinks.OWNER == 'the application: sinks'\n"
        f"assert poolq.__file__.startswith({str(site)!r}), poolq.__file__\n"
        f"assert poolq.worker.__file__.startswith({str(site)!r}), poolq.worker.__file__\n"
        "assert constants.INGEST_QUEUE == 'poolq:queue:ingest'\n"
        "print('both')\n"
    )
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=app, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "both"


def test_the_editable_install_shadows_nothing_either(tmp_path):
    """The development install (pip install -e) maps only ``poolq``: from another folder, a
    top-level ``worker`` is the application's, not this repository's."""
    (tmp_path / "worker").mkdir()
    (tmp_path / "worker" / "__init__.py").write_text("OWNER = 'app'\n")
    code = (
        "import worker, poolq.worker\n"
        "assert worker.OWNER == 'app'\n"
        "import importlib.util\n"
        "assert importlib.util.find_spec('ingest') is None and importlib.util.find_spec('sinks') is None\n"
        "print(poolq.worker.__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(ROOT / "worker" / "__init__.py")
