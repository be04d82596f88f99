"""The README stays true: its first screen holds the two set-up commands, it names every install
extra and links to every documentation page it promises, its commands and flags exist, and its
examples run as written against a real Redis and a real worker."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import ROOT, blocks

README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
FORMATS = ("PDF", "HTML/XHTML", "DOCX", "PPTX", "EPUB", "Markdown", "plain text")
FIRST_SCREEN = 1200  # characters


def code_blocks(lang: str) -> list[str]:
    return [b.body for b in blocks(README_PATH, lang)]


def test_first_screen_has_exactly_the_two_setup_commands():
    first = code_blocks("sh")[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert README.index(first) < FIRST_SCREEN  # on the first screen, before any other section
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)


def test_first_screen_names_the_formats_it_reads():
    first_screen = README[:FIRST_SCREEN]
    assert [f for f in FORMATS if f not in first_screen] == []


def test_it_stays_a_short_guide():
    assert len(README.splitlines()) <= 250


def test_every_install_extra_is_named_and_exists():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "pip install poolq`" in README
    for extra in ("cli", "parse", "worker", "ocr", "openvino", "docs"):
        assert f"pip install 'poolq[{extra}]'" in README, extra
        assert extra in extras["optional-dependencies"], extra


def test_it_links_every_documentation_page_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, re.M))
    linked = {t.removeprefix("docs/") for t in re.findall(r"\]\((docs/[^)#]+)", README)}
    assert pages and pages - linked == set(), "pages of the site the README does not link"


def test_links_stay_inside_the_repository():
    for target in re.findall(r"\]\(([^)]+)\)", README) + re.findall(r"`(\.\./[^`]+)`", README):
        assert not target.startswith(("../", "/")), target
        if not target.startswith(("http://", "https://", "#")):
            assert (ROOT / target.split("#")[0]).exists(), target
    assert "../shared" not in README


def test_make_bench_runs_every_benchmark_the_readme_names():
    named = set(re.findall(r"benchmarks/(\w+)\.py", README))
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"BENCHMARKS := (.*?)\nbench:", makefile, re.S)
    diagnostics = re.search(r"DIAGNOSTICS := (.*?)\n", makefile)
    assert listed and diagnostics, "Makefile has no BENCHMARKS or DIAGNOSTICS list"
    runs = set(listed.group(1).replace("\\", " ").split()) | set(diagnostics.group(1).split())
    assert named <= runs


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


def test_the_tour_ingests_a_folder_searches_and_watches():
    commands = sh_commands()
    assert any(re.match(r"poolq enqueue \w+ .*--wait", c) for c in commands)
    assert any(c.startswith("poolq search ") for c in commands)
    assert any(c.startswith("poolq status") for c in commands)


@pytest.fixture(scope="module")
def live_worker(tmp_path_factory):
    """A real Redis and a real `poolq worker` on an embedded folder, as a user has them; the
    examples' folder is the worker's source_roots (the README's path document is read there)."""
    from poolq.worker.dev.local_redis import LocalRedis
    from poolq.worker.dev.local_worker import WorkerProcess

    tmp = tmp_path_factory.mktemp("readme")
    env = {"POOLQ_SOURCE_ROOTS": str(tmp)}
    with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant", env=env):
        yield redis.url, tmp


@pytest.mark.slow
def test_python_examples_run_as_written(live_worker):
    url, tmp = live_worker
    examples = blocks(README_PATH, "python")
    assert examples, "the README has Python examples"
    assert [b.where for b in examples if b.not_run] == [], "every README example runs"
    env = {**os.environ, "POOLQ_REDIS_URL": url}
    for block in examples:
        out = subprocess.run(
            [sys.executable, "-c", block.body], cwd=tmp, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert out.returncode == 0, f"{block.where}:\n{block.body}\n{out.stderr}"
        if '"path": ' in block.body:  # the path document was read (under the source_roots)
            assert "done 2 files parsed" in out.stdout, f"{block.where}:\n{out.stdout}"


def write_tour_inputs(tmp: Path) -> None:
    """What the tour's commands read: a JSONL file and a folder of documents."""
    (tmp / "docs.jsonl").write_text(
        "\n".join(
            json.dumps({"id": f"d{i}", "text": t, "metadata": {"lang": "en"}})
            for i, t in enumerate(["Parse a JSON document with json.loads.", "Wrap long lines."])
        )
        + "\n"
    )
    manuals = tmp / "manuals"
    manuals.mkdir(exist_ok=True)
    (manuals / "returns.html").write_text(
        "<title>Help</title><main><h1>Returns</h1><p>Returns are free for 30 days.</p></main>"
    )
    (manuals / "shipping.md").write_text("# Shipping\n\nParcels leave on Mondays.\n")


@pytest.mark.slow
def test_shell_examples_run_as_written(live_worker):
    url, tmp = live_worker
    write_tour_inputs(tmp)
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
