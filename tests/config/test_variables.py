"""One configuration: every ``POOLQ_*`` variable is declared once (``worker/config/variables.py``)
and read by one loader; no module outside ``worker/config/`` reads the environment for one, the
command line never writes one to pass a setting on, and the generated reference lists them all.
Checked over the source's ``ast`` (no import), with a planted file to show each check can fail."""

from __future__ import annotations

import ast
import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from poolq.worker.config.client_settings import ClientSettings
from poolq.worker.config.loader import coerce, load_values
from poolq.worker.config.parse_settings import ParseSettings
from poolq.worker.config.settings import Settings
from poolq.worker.config.variables import ROLES, VARIABLES

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("poolq", "worker", "ingest", "sinks", "wire")
NAME = re.compile(r"\bPOOLQ_[A-Z0-9_]*[A-Z0-9]")
ENV_CALLS = {"get", "getenv", "pop", "setdefault", "update", "putenv", "__setitem__"}


def product_files() -> list[Path]:
    return sorted(p for folder in PRODUCT for p in (ROOT / folder).rglob("*.py"))


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a name bound to it (``env = os.environ``)."""
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def env_reads(path: Path) -> list[str]:
    """Where ``path`` touches the environment with a ``POOLQ_`` name: a literal name passed to
    ``os.environ``/``os.getenv``, subscripted, or a typer option's ``envvar``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Call):
            func = node.func
            touches = (
                isinstance(func, ast.Attribute)
                and func.attr in ENV_CALLS
                and (_is_environ(func.value) or getattr(func.value, "id", None) == "os")
            )
            if touches:
                names += [a for a in node.args if isinstance(a, ast.Constant)]
                names += [k.value for k in node.keywords if isinstance(k.value, ast.Constant)]
            names += [k.value for k in node.keywords if k.arg == "envvar"]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            names.append(node.slice)
        for n in names:
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and NAME.match(n.value):
                found.append(f"{_shown(path)}:{node.lineno} {n.value}")
    return found


def literal_names(path: Path) -> list[str]:
    """String constants that are exactly a ``POOLQ_`` name (what an environment lookup takes),
    outside docstrings and messages."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        f"{_shown(path)}:{node.lineno} {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and NAME.fullmatch(node.value)
    ]


def test_no_module_outside_the_config_reads_the_environment_for_a_setting():
    outside = [p for p in product_files() if not p.is_relative_to(ROOT / "worker" / "config")]
    assert [r for p in outside for r in env_reads(p)] == []
    assert [r for p in outside for r in literal_names(p)] == []


def test_the_check_sees_a_read_and_a_write(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\nimport typer\nx = os.environ.get('POOLQ_MAX_JOBS')\n"
        "os.environ['POOLQ_BACKEND'] = 'torch'\ny = os.getenv('POOLQ_THREADS')\n"
        "o = typer.Option(None, envvar='POOLQ_ROLE')\n"
    )
    found = sorted(f.split()[-1] for f in env_reads(probe))
    assert found == ["POOLQ_BACKEND", "POOLQ_MAX_JOBS", "POOLQ_ROLE", "POOLQ_THREADS"]
    assert len(literal_names(probe)) == 4


def compose_variables() -> set[str]:
    """The docker compose file's own variables (image tags, ports): compose reads them."""
    text = "".join((ROOT / f).read_text() for f in ("docker-compose.yml", "docker-compose.cpu.yml"))
    return set(re.findall(r"\$\{(POOLQ_[A-Z0-9_]+)", text))


def test_every_variable_named_anywhere_is_declared():
    declared = {v.env for v in VARIABLES.values()} | compose_variables()
    places = product_files() + sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    named = {
        (m, str(p.relative_to(ROOT)))
        for p in places
        for m in NAME.findall(p.read_text(encoding="utf-8"))
    }
    assert sorted(n for n in named if n[0] not in declared and n[0] != "POOLQ_NAME") == []


def test_the_reference_lists_every_variable():
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text()
    assert [v.env for v in VARIABLES.values() if f"`{v.env}`" not in page] == []


@pytest.mark.parametrize("cls", [Settings, ParseSettings, ClientSettings])
def test_the_settings_classes_take_the_declared_defaults(cls):
    declared = [f for f in fields(cls) if f.name in VARIABLES]
    assert len(declared) >= 3
    for f in declared:
        var = VARIABLES[f.name]
        assert f.default is not MISSING and f.default == var.default, f.name
        assert var.type.__name__ in str(f.type), (f.name, f.type, var.type)
    others = [f.name for f in fields(cls) if f.name not in VARIABLES]
    assert others == ([] if cls is not Settings else ["reindex", "profile"])


def test_every_declaration_is_whole():
    for name, var in VARIABLES.items():
        assert var.env == "POOLQ_" + name.upper() and var.help.endswith(".")
        assert var.roles and set(var.roles) <= set(ROLES), name
        assert var.type in (str, int, float, bool)
        if var.default is not None:
            assert coerce(var, var.default, name) == var.default, name
        assert name.endswith("_s") == (var.unit == "s"), name  # units in names


def test_a_name_means_one_thing_for_every_role(tmp_path):
    """``max_jobs`` is the encode stage's; the parse stage has ``parse_max_jobs``."""
    cfg = tmp_path / "poolq.toml"
    cfg.write_text("[worker]\nmax_jobs = 4\nparse_max_jobs = 2\n")
    assert load_values(("max_jobs", "parse_max_jobs"), cfg, None, {}) == {
        "max_jobs": 4,
        "parse_max_jobs": 2,
    }
    from poolq.worker.config.parse_settings import load_parse_settings
    from poolq.worker.config.settings import load_settings

    assert load_settings(cfg, environ={}).max_jobs == 4
    parse = load_parse_settings(cfg, environ={"POOLQ_MAX_JOBS": "9"})
    assert parse.parse_max_jobs == 2 and not hasattr(parse, "max_jobs")


def test_one_precedence_for_every_role(tmp_path):
    """File, then environment, then flag, for the parse stage as for the encode stage (the parse
    stage once read no file)."""
    from poolq.worker.config.parse_settings import load_parse_settings

    cfg = tmp_path / "poolq.toml"
    cfg.write_text('[worker]\nsource_roots = "/from/file"\nparse_timeout_s = 5\n')
    assert load_parse_settings(cfg, environ={}).source_roots == "/from/file"
    env = {"POOLQ_SOURCE_ROOTS": "/from/env", "POOLQ_PARSE_TIMEOUT_S": "7.5"}
    s = load_parse_settings(cfg, environ=env)
    assert (s.source_roots, s.parse_timeout_s) == ("/from/env", 7.5)
    s = load_parse_settings(cfg, {"source_roots": "/from/flag"}, environ=env)
    assert s.source_roots == "/from/flag"
    with pytest.raises(ValueError, match=r"^config \[worker\] parse_timeout_s: expected a number"):
        cfg.write_text('[worker]\nparse_timeout_s = "soon"\n')
        load_parse_settings(cfg, environ={})
