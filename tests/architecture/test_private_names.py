"""No private names of arq or redis-py in production code, but for the entries of ONE allow-list,
:data:`poolq.worker.reliability.arq_overrides.PRIVATE_ALLOWED` (each maps the name to the
contract test that fails when arq changes what poolq relies on).

Checked over the source's ``ast`` of every module under poolq/, worker/, ingest/, sinks/ and
wire/ (nothing is imported), a private name being one with a leading underscore that is not a
dunder (``__init__`` is public protocol):

* ``from arq... import _x`` / ``from redis... import _x``;
* an attribute ``X._x`` (anywhere along ``X.a.b._x``) where ``X`` is a name bound by importing
  arq or redis-py (``import redis``, ``from arq.worker import Worker``);
* in a class that subclasses an arq or redis-py class: a method ``def _x`` (an override of a
  private method) and any ``self._x`` / ``super()._x`` (arq's private state).

arq's job options ``_job_id``, ``_queue_name``, ``_defer_until``, ``_defer_by``, ``_expires`` and
``_job_try`` are keyword argument names of ``ArqRedis.enqueue_job``, arq's documented public
enqueue API, not private names: keyword arguments are not checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

from poolq.worker.reliability.arq_overrides import PRIVATE_ALLOWED

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("poolq", "worker", "ingest", "sinks", "wire")
LIBRARIES = ("arq", "redis")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _from_library(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in LIBRARIES


def _root_and_attrs(node: ast.expr) -> tuple[ast.expr, list[str]]:
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return node, attrs


def private_uses(source: str, filename: str = "<src>") -> list[tuple[int, str]]:
    """(line, private name) of every use the module docstring describes, allowed or not."""
    tree = ast.parse(source, filename)
    imported: set[str] = set()  # names bound to arq / redis-py modules or their objects
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _from_library(a.name):
                    imported.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and _from_library(node.module):
            for a in node.names:
                imported.add(a.asname or a.name)
                if _private(a.name):
                    found.append((node.lineno, a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            root, attrs = _root_and_attrs(node)
            if isinstance(root, ast.Name) and root.id in imported and _private(attrs[0]):
                found.append((node.lineno, attrs[0]))  # (inner chains are walked too)
        elif isinstance(node, ast.ClassDef) and any(
            isinstance(r, ast.Name) and r.id in imported
            for r in (_root_and_attrs(b)[0] for b in node.bases)
        ):
            found += _private_in_subclass(node)
    return found


def _private_in_subclass(cls: ast.ClassDef) -> list[tuple[int, str]]:
    found = []
    for item in cls.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
            found.append((item.lineno, item.name))
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            is_self = isinstance(owner, ast.Name) and owner.id == "self"
            is_super = (
                isinstance(owner, ast.Call)
                and isinstance(owner.func, ast.Name)
                and owner.func.id == "super"
            )
            if is_self or is_super:
                found.append((node.lineno, node.attr))
    return found


def production_modules() -> list[Path]:
    return [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]


def test_production_code_uses_no_private_arq_or_redis_name_outside_the_allow_list():
    bad, used = [], set()
    for path in production_modules():
        for line, name in private_uses(path.read_text(encoding="utf-8"), str(path)):
            if name in PRIVATE_ALLOWED:
                used.add(name)
            else:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not bad, (
        "private arq / redis-py names (public API or hooks instead; else add the name to "
        "arq_overrides.PRIVATE_ALLOWED with the contract test that covers it):\n" + "\n".join(bad)
    )
    assert used == set(PRIVATE_ALLOWED), f"allowed but unused: {set(PRIVATE_ALLOWED) - used}"


def test_every_allowed_name_names_a_contract_test_that_exists():
    for name, test in PRIVATE_ALLOWED.items():
        path, _, function = test.partition("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        tests = {
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert function in tests, f"{name}: {test} not found"


def test_the_checker_finds_each_kind_of_use_and_not_enqueue_options():
    source = """
import redis
import arq.worker as aw
from arq.worker import Worker, _private_helper
from redis.asyncio import Redis

x = redis._private_module
y = aw.Worker._poll_iteration

class W(Worker):
    def __init__(self):
        self._job_completion_wait = 1
    async def _poll_iteration(self):
        await super()._cancel_aborted_jobs()

class R(Redis):
    pass

class Mine:
    def _helper(self):
        return self._state

async def enqueue(pool):
    await pool.enqueue_job("f", _job_id="j", _queue_name="q", _defer_until=None, _expires=1)
"""
    assert sorted(name for _, name in private_uses(source)) == sorted(
        [
            "_private_helper",
            "_private_module",
            "_poll_iteration",  # aw.Worker._poll_iteration
            "_job_completion_wait",
            "_poll_iteration",  # def _poll_iteration in a subclass
            "_cancel_aborted_jobs",
        ]
    )
