"""The peers of ``bench_cpu_peers.py``: each system a CPU user would pick, as the command line
that runs it over the corpus (``peer_run*.py`` drive the raw runtimes), and the before/after
copies of ``poolq encode`` started from other source trees (``tree_launch.py``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tests.models import minilm_path, splade_path

PY = sys.executable
try:
    import openvino  # noqa: F401

    HAS_OV = True
except ImportError:
    HAS_OV = False
HERE = Path(__file__).resolve().parent


@dataclass
class Peer:
    name: str
    task: str  # dense | sparse
    int8: bool
    cmd: list[str]  # with {corpus} and {out} placeholders
    truncation: int

    def argv(self, corpus: Path, out: Path) -> list[str]:
        return [a.format(corpus=corpus, out=out) for a in self.cmd]


def peers(arts: dict[str, str], threads: int) -> list[Peer]:
    m, s = str(minilm_path()), str(splade_path())
    cli = [PY, "-m", "poolq.worker", "encode"]
    run = [PY, str(HERE / "peer_run.py")]
    t = ["--threads", str(threads)]
    out = []
    backends = [("poolq", [])] + ([("poolq-ov", ["--backend", "openvino"])] if HAS_OV else [])
    for prefix, flag in backends:
        for dtype in ("float32", "int8"):
            out.append(
                Peer(
                    f"{prefix} {dtype}",
                    "dense",
                    dtype == "int8",
                    [*cli, "--model", m, "--dtype", dtype, *flag, "{corpus}", "-o", "{out}.jsonl"],
                    256,
                )
            )

    def dense(
        name: str, kind: str, artifact: str | None, truncation: int = 256, script: str = "peer_run"
    ) -> Peer:
        """A peer_run.py peer on MiniLM (``artifact``: the key of its built model)."""
        built = ["--artifact", arts[artifact]] if artifact else []
        cmd = [PY, str(HERE / f"{script}.py"), kind, "{corpus}", "{out}", "--model", m, *built, *t]
        return Peer(name, "dense", artifact is not None and "int8" in artifact, cmd, truncation)

    out += [
        dense("ST torch fp32", "st", None),
        dense("ORT dynamic int8", "ort", "minilm-int8-ort"),
        dense("OpenVINO NNCF int8", "ov", "minilm-int8-ov"),
        # OpenVINO's defaults: bf16 inference where the CPU has AMX / avx512_bf16
        dense("OpenVINO fp32", "ov", "minilm-fp32-onnx"),
        dense("OpenVINO fp32 (f32)", "ov", "minilm-fp32-onnx", script="peer_run_f32"),
        dense("fastembed int8 @256", "fastembed", "fastembed-256"),
        dense("fastembed int8 @128", "fastembed", "fastembed-128", 128),
    ]
    for prefix, flag in backends:
        for dtype in ("float32", "int8"):
            out.append(
                Peer(
                    f"{prefix} {dtype} SPLADE",
                    "sparse",
                    dtype == "int8",
                    [
                        *cli,
                        "--model",
                        s,
                        "--task",
                        "sparse",
                        "--dtype",
                        dtype,
                        *flag,
                        "{corpus}",
                        "-o",
                        "{out}.jsonl",
                    ],
                    512,
                )
            )
    mixed = ["--task", "embed", "--task", "sparse", "--task", "token_embed"]
    for prefix, flag in backends:
        out.append(
            Peer(
                f"{prefix} float32 mixed",
                "mixed",
                False,
                [
                    *cli,
                    "--model",
                    arts["multi-head"],
                    *mixed,
                    *flag,
                    "{corpus}",
                    "-o",
                    "{out}.jsonl",
                ],
                256,
            )
        )
    sp = ["--model", s, "--max-length", "512", *t]
    out += [
        Peer(
            "ST SparseEncoder fp32",
            "sparse",
            False,
            [*run, "st-sparse", "{corpus}", "{out}", *sp],
            512,
        ),
        Peer(
            "ORT dynamic int8 SPLADE",
            "sparse",
            True,
            [*run, "ort-sparse", "{corpus}", "{out}", "--artifact", arts["splade-int8-ort"], *sp],
            512,
        ),
        Peer(
            "OpenVINO NNCF int8 SPLADE",
            "sparse",
            True,
            [*run, "ov-sparse", "{corpus}", "{out}", "--artifact", arts["splade-int8-ov"], *sp],
            512,
        ),
    ]
    return out


def with_baseline(todo: list[Peer], tree: Path, after: Path | None = None) -> list[Peer]:
    """Each ``poolq encode`` peer twice more through ``tree_launch.py``: from ``tree`` (a source
    tree of an earlier commit, "[before]") and from ``after`` (default: this checkout;
    "[after]"), so that a change is timed before and after in the same run, with the same
    launcher."""
    out = list(todo)
    root = after or HERE.parent
    for p in todo:
        if p.cmd[:4] != [PY, "-m", "poolq.worker", "encode"]:
            continue
        for tag, src in (("before", tree), ("after", root)):
            cmd = [PY, str(HERE / "tree_launch.py"), str(src), *p.cmd[3:]]
            out.append(Peer(f"{p.name} [{tag}]", p.task, p.int8, cmd, p.truncation))
    return out
