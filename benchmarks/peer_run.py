"""One peer, one whole process: load a model, encode a JSONL corpus, save the vectors.

    python benchmarks/peer_run.py PEER CORPUS.jsonl OUT --threads 2 --max-length 256 [--artifact P]

PEER: ``st`` (sentence-transformers, torch fp32), ``st-sparse`` (``SparseEncoder``: the
folder's own modules when it has ``modules.json``, else MLM + SPLADE max pooling), ``ort`` (an ONNX file in ONNX Runtime), ``ov`` (an OpenVINO IR),
``ort-sparse`` / ``ov-sparse`` (the SPLADE graphs, pooled inside), ``fastembed`` (a fastembed
custom-model folder). ORT and OpenVINO peers batch like sentence-transformers: texts sorted by
length, 32 per batch, padded to the batch's longest; dense outputs are mean-pooled over the
mask and L2-normalised (MiniLM's Pooling + Normalize). fastembed batches as it does (256 per
batch, input order, padded to the batch's longest). Dense vectors go to ``OUT.npy``, sparse to
``OUT.npz`` (row, col, val). The last stdout line is ``{"load_s", "encode_s"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

BATCH = 32


def texts_of(corpus: Path) -> list[str]:
    return [json.loads(line)["text"] for line in corpus.read_text().splitlines() if line.strip()]


def batches(tokenizer_dir: Path, texts: list[str], max_length: int):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    tok.enable_truncation(max_length)
    tok.no_padding()
    yield from padded_feeds(tok.encode_batch(texts))


def padded_feeds(enc: list):  # type: ignore[no-untyped-def]
    """The peers' batching: BATCH texts at a time, longest first, padded to the batch's longest;
    yields (rows, feed)."""
    order = sorted(range(len(enc)), key=lambda i: -len(enc[i].ids))
    for b in range(0, len(order), BATCH):
        rows = order[b : b + BATCH]
        width = max(len(enc[i].ids) for i in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(rows):
            n = len(enc[i].ids)
            ids[r, :n] = enc[i].ids
            mask[r, :n] = 1
        yield rows, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def runtime_session(kind: str, artifact: str, threads: int):  # type: ignore[no-untyped-def]
    if kind == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        sess = ort.InferenceSession(artifact, so, providers=["CPUExecutionProvider"])
        return lambda feed: sess.run(None, feed)[0]
    import openvino as ov

    compiled = ov.Core().compile_model(
        artifact, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    )
    request = compiled.create_infer_request()
    return lambda feed: next(iter(request.infer(feed).values()))


def save_sparse(out: Path, weights: list[np.ndarray]) -> None:
    rows, cols, vals = [], [], []
    for i, w in enumerate(weights):
        nz = np.nonzero(w > 0)[0]
        rows.append(np.full(len(nz), i))
        cols.append(nz)
        vals.append(w[nz])
    np.savez(
        out.with_suffix(".npz"),
        row=np.concatenate(rows),
        col=np.concatenate(cols),
        val=np.concatenate(vals),
        n=len(weights),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("peer")
    ap.add_argument("corpus", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", type=Path, required=True, help="the bundled folder (tokenizer)")
    ap.add_argument("--artifact", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=256)
    args = ap.parse_args()
    t0 = time.perf_counter()
    texts = texts_of(args.corpus)
    kind = args.peer.removesuffix("-sparse")
    sparse = args.peer.endswith("-sparse")
    if kind == "st":
        import torch

        torch.set_num_threads(args.threads)
        if sparse:
            from sentence_transformers import SparseEncoder
            from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

            if (args.model / "modules.json").is_file():  # a sentence-transformers folder
                model = SparseEncoder(str(args.model), device="cpu")
                model.max_seq_length = args.max_length
            else:  # a bare *ForMaskedLM folder: MLM + SPLADE max pooling
                mlm = MLMTransformer(str(args.model), max_seq_length=args.max_length)
                model = SparseEncoder(
                    modules=[mlm, SpladePooling(pooling_strategy="max")], device="cpu"
                )
        else:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(args.model), device="cpu")
            model.max_seq_length = args.max_length
        t1 = time.perf_counter()
        if sparse:
            enc = model.encode(texts, batch_size=BATCH, convert_to_tensor=True)
            dense = enc.to_dense() if enc.is_sparse else enc
            save_sparse(args.out, list(dense.float().numpy()))
        else:
            np.save(args.out.with_suffix(".npy"), model.encode(texts, batch_size=BATCH))
    elif kind == "fastembed":
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        name = f"local/minilm-int8-{Path(args.artifact).name}"
        TextEmbedding.add_custom_model(
            name, PoolingType.MEAN, True, ModelSource(hf="local/none"), 384, "model_quantized.onnx"
        )
        model = TextEmbedding(name, specific_model_path=args.artifact, threads=args.threads)
        t1 = time.perf_counter()
        np.save(args.out.with_suffix(".npy"), np.stack(list(model.embed(texts))))
    else:
        run = runtime_session(kind, args.artifact, args.threads)
        t1 = time.perf_counter()
        results: list[np.ndarray | None] = [None] * len(texts)
        for rows, feed in batches(args.model, texts, args.max_length):
            out = run(feed)
            vecs = out if sparse else mean_pool(out, feed["attention_mask"])
            for r, i in enumerate(rows):
                results[i] = vecs[r]
        if sparse:
            save_sparse(args.out, results)  # type: ignore[arg-type]
        else:
            np.save(args.out.with_suffix(".npy"), np.stack(results))  # type: ignore[arg-type]
    t2 = time.perf_counter()
    print(
        json.dumps({"load_s": round(t1 - t0, 3), "encode_s": round(t2 - t1, 3), "pid": os.getpid()})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
