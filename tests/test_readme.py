"""The README stays true: its first screen holds the two set-up commands, its command reference
names every flag the CLI has, and its "What is here" tree names every package folder."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command

from poolq.worker.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def code_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_first_screen_has_exactly_the_two_setup_commands():
    first = code_blocks("sh")[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert README.index(first) < 1200  # on the first screen, before any other section


def reference() -> str:
    start = README.index("### Command reference")
    return README[start : README.index("\n### ", start + 1)]


def test_the_command_reference_lists_every_flag():
    ref = reference()
    cli = get_command(app)
    missing = []
    for name, command in cli.commands.items():
        row = next((r for r in ref.splitlines() if r.startswith(f"| `poolq {name}")), None)
        if row is None:
            missing.append(f"poolq {name}")
            continue
        for param in command.params:
            for opt in getattr(param, "opts", []) if param.param_type_name == "option" else []:
                if opt.startswith("--") and f"`{opt}" not in row and f"/{opt}" not in row:
                    missing.append(f"poolq {name} {opt}")
    assert missing == []


def test_the_reference_lists_no_flag_that_does_not_exist():
    cli = get_command(app)
    for row in reference().splitlines():
        m = re.match(r"\| `poolq (\w+)", row)
        if not m:
            continue
        command = cli.commands[m.group(1)]
        known = {o for p in command.params for o in getattr(p, "opts", [])}
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", row.split("|")[2]):
            assert flag in known, (
                f"poolq {m.group(1)}: README names {flag}, the CLI has no such flag"
            )


def test_what_is_here_names_every_package_folder():
    start = README.index("## What is here")
    tree = README[start : README.index("\n## ", start + 1)]
    named = set(re.findall(r"^([\w/]+)/\s", tree, re.M))
    packages = {
        p.parent.relative_to(ROOT).as_posix()
        for folder in ("poolq", "worker", "ingest", "sinks", "wire")
        for p in (ROOT / folder).rglob("__init__.py")
    }
    packages |= {"tests", "benchmarks"}
    assert packages - named == set(), "folders missing from the README tree"
    assert named - packages == set(), "the README tree names folders that do not exist"


def test_links_stay_inside_the_repository():
    for target in re.findall(r"\]\(([^)]+)\)", README) + re.findall(r"`(\.\./[^`]+)`", README):
        assert not target.startswith(("../", "/")), target
        if not target.startswith(("http://", "https://", "#")):
            assert (ROOT / target).exists(), target
    assert "../shared" not in README


# -- the README's examples run as written -----------------------------------------------------

SH_SKIP = ("make ", "poolq worker", "docker ")  # set-up, the worker (running already), compose


def sh_commands() -> list[str]:
    out = []
    for block in code_blocks("sh")[1:]:  # the first screen is `make demo` / `make test`
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#") and not line.startswith(SH_SKIP):
                out.append(line)
    return out


@pytest.fixture(scope="module")
def live_worker(tmp_path_factory):
    """A real Redis and a real `poolq worker` on an embedded folder, as a user has them."""
    from poolq.worker.dev.local_redis import LocalRedis
    from poolq.worker.dev.local_worker import WorkerProcess

    tmp = tmp_path_factory.mktemp("readme")
    with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant"):
        yield redis.url, tmp


@pytest.mark.slow
def test_python_examples_run_as_written(live_worker):
    url, tmp = live_worker
    blocks = code_blocks("python")
    assert blocks, "the README has Python examples"
    env = {**os.environ, "POOLQ_REDIS_URL": url}
    for i, block in enumerate(blocks):
        out = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert out.returncode == 0, f"README python block {i}:\n{block}\n{out.stderr}"


@pytest.mark.slow
def test_shell_examples_run_as_written(live_worker):
    url, tmp = live_worker
    (tmp / "docs.jsonl").write_text(
        "\n".join(
            json.dumps({"id": f"d{i}", "text": t, "metadata": {"lang": "en"}})
            for i, t in enumerate(["Parse a JSON document with json.loads.", "Wrap long lines."])
        )
        + "\n"
    )
    if not (tmp / "returns.html").exists():  # (the Python examples write it, when run first)
        (tmp / "returns.html").write_text("<title>Help</title><h1>Returns</h1><p>Free.</p>")
    env = {**os.environ, "POOLQ_REDIS_URL": url}
    commands = sh_commands()
    assert any(c.startswith("poolq enqueue") for c in commands)
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "poolq", command
        out = subprocess.run(
            [sys.executable, "-m", "poolq.worker", *argv[1:]], cwd=tmp, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert out.returncode == 0, f"$ {command}\n{out.stdout}\n{out.stderr}"


def test_toml_examples_load_as_a_worker_config(tmp_path):
    from poolq.worker.config.settings import load_settings

    blocks = code_blocks("toml")
    assert blocks
    for i, block in enumerate(blocks):
        path = tmp_path / f"block{i}.toml"
        path.write_text(block)
        settings = load_settings(path, environ={})
        if "[[reindex]]" in block:
            assert settings.reindex and settings.reindex[0].collection == "docs"
        if "[vectors]" in block:
            assert {v.name for v in settings.profile.vectors} == {"dense", "colbert", "sparse"}


def test_make_bench_runs_every_benchmark_the_readme_names():
    named = set(re.findall(r"benchmarks/(\w+)\.py", README))
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"BENCHMARKS := (.*?)\nbench:", makefile, re.S)
    diagnostics = re.search(r"DIAGNOSTICS := (.*?)\n", makefile)
    assert listed and diagnostics, "Makefile has no BENCHMARKS or DIAGNOSTICS list"
    runs = set(listed.group(1).replace("\\", " ").split()) | set(diagnostics.group(1).split())
    assert named <= runs
