"""The README stays true: its first screen holds the two set-up commands, its command reference
names every flag the CLI has, and its "What is here" tree names every package folder."""

from __future__ import annotations

import re
from pathlib import Path

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
        for folder in ("worker", "ingest", "sinks")
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
