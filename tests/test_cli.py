import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the CLI in a subprocess


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args], capture_output=True, text=True, timeout=120
    )


def test_version_and_help():
    v = run("--version")
    assert v.returncode == 0 and v.stdout.startswith("poolq ")
    h = run("--help")
    assert h.returncode == 0 and "Usage" in h.stdout
