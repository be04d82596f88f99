"""What ``bench_cpu_peers.py`` prints and checks: the machine's load and steal, the OpenVINO
backend's targets, and each peer's output against sentence-transformers' (cosine, or
top-32 overlap and weight error for SPLADE)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def load_steal() -> str:
    """The 1-minute load and the share of CPU time stolen since boot (/proc)."""
    load = Path("/proc/loadavg").read_text().split()[0]
    cpu = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    steal = cpu[7] / max(1, sum(cpu[:8]))
    return f"load {load}, steal {100 * steal:.1f}% since boot"


def ov_checks(best: dict[str, float]) -> list[tuple[str, float, float]]:
    """The OpenVINO backend's targets, for the peers that ran."""
    out: list[tuple[str, float, float]] = []

    def ratio(peer: str, ours: str) -> float | None:
        ok = peer in best and ours in best and best[ours] < float("inf")
        return best[peer] / best[ours] if ok else None

    for name, peer, ours, target in (
        (
            "dense int8 (openvino backend) vs raw OpenVINO int8",
            "OpenVINO NNCF int8",
            "poolq-ov int8",
            1.0,
        ),
        (
            "dense fp32 (openvino backend) vs raw OpenVINO fp32, f32 inference",
            "OpenVINO fp32 (f32)",
            "poolq-ov float32",
            1.2,
        ),
        (
            "mixed tasks: openvino vs torch backend",
            "poolq float32 mixed",
            "poolq-ov float32 mixed",
            1.0,
        ),
    ):
        if (r := ratio(peer, ours)) is not None:
            out.append((name, r, target))
    if "OpenVINO fp32 (f32)" not in best and (r := ratio("OpenVINO fp32", "poolq-ov float32")):
        out.append(("dense fp32 (openvino backend) vs raw OpenVINO fp32, its defaults", r, 1.2))
    peers8 = [n for n in ("ORT dynamic int8 SPLADE", "OpenVINO NNCF int8 SPLADE") if n in best]
    ours8 = [n for n in ("poolq int8 SPLADE", "poolq-ov int8 SPLADE") if n in best]
    if peers8 and ours8:
        p, o = min(peers8, key=best.__getitem__), min(ours8, key=best.__getitem__)
        out.append((f"SPLADE int8 ({o}) vs best int8 peer ({p})", best[p] / best[o], 1.5))
    return out


def load_vectors(out: Path, task: str, vocab: int = 30522) -> np.ndarray:
    """[n, d] dense or [n, V] sparse weights, whichever file the peer wrote (mixed: embed)."""
    if (jl := out.with_suffix(".jsonl")).is_file():
        rows = [json.loads(x) for x in jl.read_text().splitlines()]
        if task in ("dense", "mixed"):
            return np.array([r["embed"] for r in rows], dtype=np.float32)
        w = np.zeros((len(rows), vocab), dtype=np.float32)
        for i, r in enumerate(rows):
            w[i, r["sparse"]["indices"]] = r["sparse"]["values"]
        return w
    if task == "dense":
        return np.load(out.with_suffix(".npy"))
    z = np.load(out.with_suffix(".npz"))
    w = np.zeros((int(z["n"]), vocab), dtype=np.float32)
    w[z["row"], z["col"]] = z["val"]
    return w


def quality(got: np.ndarray, ref: np.ndarray, task: str) -> str:
    if task in ("dense", "mixed"):
        cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
        return f"cos min {cos.min():.4f} mean {cos.mean():.4f}"
    overlaps, errors = [], []
    for g, r in zip(got, ref, strict=True):
        k = min(32, int((r > 0).sum()))
        overlaps.append(len(set(np.argsort(-g)[:k]) & set(np.argsort(-r)[:k])) / max(k, 1))
        errors.append(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-12))
    return (
        f"top32 min {min(overlaps):.3f} mean {np.mean(overlaps):.3f}; "
        f"w-err mean {np.mean(errors):.4f} max {max(errors):.4f}"
    )
