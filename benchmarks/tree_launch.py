"""``poolq``'s command line run from another source tree: ``python benchmarks/tree_launch.py
TREE ARGS...`` is ``python -m poolq.worker ARGS...`` with the ``poolq`` packages imported from
``TREE`` (e.g. ``git worktree add /tmp/before <commit>``) instead of this checkout, so a
benchmark can time the code before and after a change in the same run
(``bench_cpu_peers.py --baseline TREE``). The folders map as the editable install maps them:
``poolq/`` -> ``poolq``, ``worker/`` -> ``poolq.worker``, ``ingest/``, ``sinks/``, ``wire/``."""

from __future__ import annotations

import runpy
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from importlib.util import spec_from_file_location
from pathlib import Path


class _TreeFinder(MetaPathFinder):
    def __init__(self, tree: Path) -> None:
        self.mapping = {"poolq": tree / "poolq"}
        self.mapping.update({f"poolq.{d}": tree / d for d in ("worker", "ingest", "sinks", "wire")})

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname in self.mapping:
            return spec_from_file_location(fullname, self.mapping[fullname] / "__init__.py")
        parent = fullname.rpartition(".")[0]
        if parent in self.mapping:
            return PathFinder.find_spec(fullname, [str(self.mapping[parent])])
        return None


def main() -> None:
    tree = Path(sys.argv[1]).resolve()
    sys.meta_path.insert(0, _TreeFinder(tree))
    sys.argv = ["poolq", *sys.argv[2:]]
    runpy.run_module("poolq.worker", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
