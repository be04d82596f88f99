"""The documentation pages stay true: every ```python block runs against a real Redis and a real
worker (blocks marked ``<!-- not-run -->`` are skipped and counted), every ```toml block loads as
a worker config, every `poolq` command, flag, `POOLQ_*` variable and benchmark they name exists,
and the architecture page's tree names every package folder."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
import sys

import pytest
from typer.main import get_command

from poolq.worker.cli import app
from tests.docs.markdown_blocks import ROOT, Block, blocks, doc_pages

PAGES = doc_pages()
PROSE = [ROOT / "README.md", *PAGES]
PYTHON = [b for page in PAGES for b in blocks(page, "python")]
MAX_NOT_RUN = 3  # blocks deliberately not run: keep them rare


def test_the_pages_have_python_examples():
    assert len(PYTHON) >= 4


def test_few_blocks_are_not_run():
    skipped = [b.where for b in PYTHON if b.not_run]
    print(f"{len(skipped)} of {len(PYTHON)} python blocks marked not-run: {skipped}")
    assert len(skipped) <= MAX_NOT_RUN, skipped


@pytest.fixture(scope="module")
def live_worker(tmp_path_factory):
    """A real Redis and a real `poolq worker` on an embedded folder, as a user has them."""
    from poolq.worker.dev.local_redis import LocalRedis
    from poolq.worker.dev.local_worker import WorkerProcess

    tmp = tmp_path_factory.mktemp("docs")
    with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant"):
        yield redis.url, tmp


@pytest.mark.slow
@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.where)
def test_python_example_runs_as_written(block: Block, live_worker):
    if block.not_run:
        pytest.skip(f"{block.where}: marked <!-- not-run -->")
    url, tmp = live_worker
    out = subprocess.run(
        [sys.executable, "-c", block.body], cwd=tmp, env={**os.environ, "POOLQ_REDIS_URL": url},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, f"{block.where}:\n{block.body}\n{out.stderr}"


TOML = [b for page in PROSE for b in blocks(page, "toml")]


@pytest.mark.parametrize("block", TOML, ids=lambda b: b.where)
def test_toml_example_loads_as_a_worker_config(block: Block, tmp_path):
    from poolq.worker.config.settings import load_settings

    path = tmp_path / "poolq.toml"
    path.write_text(block.body)
    settings = load_settings(path, environ={})
    if "[[reindex]]" in block.body:
        assert settings.reindex and settings.reindex[0].collection == "docs"
    if "[vectors]" in block.body:
        assert {v.name for v in settings.profile.vectors} == {"dense", "colbert", "sparse"}


# -- what the pages name exists ----------------------------------------------------------------


def named_commands() -> list[tuple[str, str]]:
    """(where, command line) for every `poolq ...` line of a shell block and every inline
    `poolq ...` code span."""
    out = []
    for page in PROSE:
        for b in blocks(page, "sh"):
            for line in b.body.splitlines():
                line = line.split("  #")[0].strip()
                if line.startswith("poolq "):
                    out.append((b.where, line))
        text = page.read_text(encoding="utf-8")
        for span in re.findall(r"`(poolq [^`]+)`", text):
            out.append((str(page.relative_to(ROOT)), span))
    return out


def test_every_command_and_flag_named_exists():
    cli = get_command(app)
    wrong = []
    for where, line in named_commands():
        try:
            argv = shlex.split(line)
        except ValueError:
            argv = line.split()
        name = argv[1]
        if name.startswith("-"):
            continue  # `poolq --version`, `poolq --help`
        command = cli.commands.get(name)
        if command is None:
            if name not in {"...", "COMMAND"}:
                wrong.append(f"{where}: {line}: no command {name!r}")
            continue
        known = {o for p in command.params for o in getattr(p, "opts", [])} | {"--help"}
        for arg in argv[2:]:
            flag = arg.split("=")[0]
            if re.fullmatch(r"--[a-z][a-z0-9-]*", flag) and flag not in known:
                wrong.append(f"{where}: {line}: {name} has no {flag}")
    assert wrong == []


COMPOSE_ONLY = {  # read by docker-compose.yml or the Dockerfile, not by poolq
    "POOLQ_BIND_ADDRESS", "POOLQ_REDIS_PORT", "POOLQ_IMAGE", "POOLQ_CPU_IMAGE", "POOLQ_CONFIG_DIR",
    "POOLQ_SOURCES_DIR", "POOLQ_TORCH_SPEC", "POOLQ_TORCH_INDEX_URL",
}  # fmt: skip


def test_every_environment_variable_named_exists():
    from poolq.worker.config.parse_settings import ParseSettings
    from poolq.worker.config.settings import Settings

    fields = {f.name for cls in (Settings, ParseSettings) for f in dataclasses.fields(cls)}
    code = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for folder in ("poolq", "worker", "ingest", "sinks", "wire")
        for p in (ROOT / folder).rglob("*.py")
    )
    compose = "".join((ROOT / f).read_text() for f in ("docker-compose.yml", "Dockerfile"))
    unknown = set()
    for page in PROSE:
        for var in set(re.findall(r"\bPOOLQ_[A-Z0-9_]+\b", page.read_text(encoding="utf-8"))):
            setting = var.removeprefix("POOLQ_").lower()
            if var in code or setting in fields:
                continue
            if var in COMPOSE_ONLY and var in compose:
                continue
            unknown.add(f"{page.relative_to(ROOT)}: {var}")
    assert unknown == set()


def test_every_benchmark_named_exists():
    missing = {
        f"{page.relative_to(ROOT)}: {name}"
        for page in PROSE
        for name in re.findall(r"benchmarks/([\w.]+\.(?:py|sh))", page.read_text(encoding="utf-8"))
        if not (ROOT / "benchmarks" / name).exists()
    }
    assert missing == set()


def test_the_architecture_tree_names_every_package_folder():
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    tree = next(b.body for b in blocks(ROOT / "docs/architecture.md", "text"))
    assert "```mermaid" in text  # the data's path, drawn
    named = set(re.findall(r"^([\w/]+)/\s", tree, re.M))
    packages = {
        p.parent.relative_to(ROOT).as_posix()
        for folder in ("poolq", "worker", "ingest", "sinks", "wire")
        for p in (ROOT / folder).rglob("__init__.py")
    }
    packages |= {"tests", "benchmarks"}
    assert packages - named == set(), "folders missing from the architecture page"
    assert named - packages == set(), "the architecture page names folders that do not exist"
