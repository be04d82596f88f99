"""The generated reference pages (docs/reference/cli.md, docs/reference/configuration.md) are
what tools/gen_reference.py writes from the code now: a command, option or setting that changes
without the pages being regenerated fails here, naming the command that refreshes them."""

from __future__ import annotations

import difflib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "tools/gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return gen.pages()


def test_the_pages_on_disk_are_up_to_date(pages):
    for rel, text in pages.items():
        path = ROOT / rel
        on_disk = path.read_text(encoding="utf-8") if path.is_file() else ""
        if on_disk != text:
            diff = "".join(
                list(
                    difflib.unified_diff(
                        on_disk.splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        f"{rel} (on disk)",
                        f"{rel} (generated)",
                    )
                )[:40]
            )
            pytest.fail(f"{rel} is out of date; refresh it with `{gen.REFRESH}`\n{diff}")


def test_the_output_does_not_depend_on_the_terminal(pages, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("TERM", "dumb")
    assert gen.pages() == pages


def test_every_command_and_setting_is_there(pages):
    from dataclasses import fields

    from typer.main import get_command

    from poolq.worker.cli import app
    from poolq.worker.config.parse_settings import ParseSettings
    from poolq.worker.config.settings import Settings

    cli, config = pages[gen.CLI_PAGE], pages[gen.CONFIG_PAGE]
    root = get_command(app)
    for name, command in root.commands.items():
        assert f"## `poolq {name}`" in cli
        for param in command.params:
            if param.param_type_name == "option":
                assert f"`{param.opts[0]}`" in cli, (name, param.opts)
    profile_fields = {"reindex", "profile"}  # the config's [[reindex]] tables and profile
    for cls in (Settings, ParseSettings):
        for f in fields(cls):
            if f.name not in profile_fields:
                assert f"| `{f.name}` |" in config, (cls.__name__, f.name)
    assert "## Scheduled reindexing" in config and "[vectors]" in config
    # flags, variables and config keys as the loader reads them
    assert (
        "| `max_jobs` | `int` | `32` jobs | `POOLQ_MAX_JOBS`, `[worker] max_jobs` | "
        "`poolq worker --max-jobs` | encode |"
    ) in config
    assert (
        "| `parse_memory_mb` | `int` | `1024` MB | `POOLQ_PARSE_MEMORY_MB`, "
        "`[worker] parse_memory_mb` | `poolq worker --parse-memory` |"
    ) in config
    assert "`[engine] backend` is the same setting as `[worker] backend`" in config


def test_the_pages_are_markdown_tables_that_render(pages):
    """Python-Markdown (what mkdocs runs) reads every row with its header's number of cells:
    no pipe in a help text splits a row; the command links point at headings that exist."""
    import markdown

    for rel, text in pages.items():
        html = markdown.markdown(text, extensions=["tables", "toc"])
        tables = re.findall(r"<table>.*?</table>", html, re.S)
        assert tables, rel
        for table in tables:
            head = len(re.findall(r"<th[ >]", table))
            for row in re.findall(r"<tr>.*?</tr>", table, re.S)[1:]:
                assert len(re.findall(r"<td[ >]", row)) == head, (rel, row)
        ids = set(re.findall(r'<h[1-6] id="([^"]+)"', html))
        for target in re.findall(r'href="#([^"]+)"', html):
            assert target in ids, (rel, target)


def test_the_check_mode_names_the_refresh_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.stale(tmp_path) == [gen.CLI_PAGE, gen.CONFIG_PAGE]
    monkeypatch.setattr(gen, "stale", lambda root=tmp_path: [gen.CLI_PAGE])
    assert gen.main(["--check"]) == 1
    assert gen.REFRESH in capsys.readouterr().err


def test_a_pipe_in_help_text_stays_in_its_cell():
    import markdown

    rows = gen._table(["A", "B"], [[gen._cell("x | y <z> *w*"), gen._code("str | None")]])
    html = markdown.markdown("\n".join(rows), extensions=["tables"])
    assert len(re.findall(r"<td[ >]", html)) == 2, html
    assert "<td>x | y &lt;z&gt; *w*</td>" in html and "<code>str | None</code>" in html
