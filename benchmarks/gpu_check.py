"""GPU checks, built on the GPU machine itself (MiniLM's weights do not travel):

1. fidelity: random-initialised BERT checkpoints of MiniLM's shape (6 x 384, 12 heads, 1536)
   and BERT-base's (12 x 768, 12 heads, 3072), with a WordPiece vocabulary made from the
   standard-library corpus, saved as sentence-transformers folders (mean pooling, normalize);
   poolq on CUDA in fp16 and bf16 against sentence-transformers fp32 and in the same dtype:
   min cosine per text must be >= ``FIDELITY_MIN``;
2. throughput: poolq's engine against sentence-transformers fp16 (batch 64, length-sorted) at
   three length mixes (short 8-64 words, mixed 8-300, long 200-400), texts/s and the ratio;
3. packed flash varlen (flash_attn, when installed) against padded: the same poolq engine with
   its varlen kernel, with per-run SDPA, and HF's padded ``AutoModel`` (SDPA) in fp16.

    python benchmarks/gpu_check.py [--work DIR] [--texts 2000] [--device cuda] [--dry-run]

``--dry-run`` runs everything tiny on the CPU in fp32 (checks the script, not the GPU).
Exit status 1 if a fidelity check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import functools

import torch

from poolq.ingest.sample_corpus import passages as _passages


@functools.cache
def passages(n: int) -> list[str]:
    return _passages(n)


SHAPES = {"minilm-shape": (6, 384, 12, 1536), "bert-base-shape": (12, 768, 12, 3072)}
FIDELITY_MIN = {"float16": 0.999, "bfloat16": 0.995}
MIXES = {"short": (8, 64), "mixed": (8, 300), "long": (200, 400)}


def write_tokenizer(folder: Path) -> dict[str, int]:
    """A lower-case WordPiece tokenizer (``[CLS] ... [SEP]``) from the standard-library corpus:
    ``tokenizer.json``, ``tokenizer_config.json`` (special tokens named: transformers pads with
    ``[PAD]``), ``special_tokens_map.json``, ``vocab.txt``. Returns the vocabulary."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    words = collections.Counter(w.lower() for p in passages(2000) for w in p.split())
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = sorted({c for w in words for c in w})
    vocab_list = special + chars + [f"##{c}" for c in chars]
    vocab_list += [w for w, _ in words.most_common(30522) if w not in vocab_list]
    vocab = {t: i for i, t in enumerate(vocab_list[:30522])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    special_map = {
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "model_max_length": 512,
                "tokenizer_class": "BertTokenizerFast",
                "do_lower_case": True,
                **special_map,
            }
        )
    )
    (folder / "special_tokens_map.json").write_text(json.dumps(special_map))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return vocab


def build_checkpoint(folder: Path, layers: int, hidden: int, heads: int, inter: int) -> Path:
    from transformers import BertConfig, BertModel

    vocab = write_tokenizer(folder)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
    )
    BertModel(cfg).eval().save_pretrained(str(folder))
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "",
                    "type": "sentence_transformers.models.Transformer",
                },
                {
                    "idx": 1,
                    "name": "1",
                    "path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling",
                },
                {
                    "idx": 2,
                    "name": "2",
                    "path": "2_Normalize",
                    "type": "sentence_transformers.models.Normalize",
                },
            ]
        )
    )
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": True})
    )
    (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 512}))
    return folder


def texts_for(mix: tuple[int, int], n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = " ".join(passages(2000)).split()
    out = []
    for _ in range(n):
        k = rng.randint(*mix)
        s = rng.randrange(0, len(words) - k)
        out.append(" ".join(words[s : s + k]))
    return out


def poolq_encode(
    folder: Path, texts: list[str], device: str, dtype: str, varlen: bool = True
) -> tuple[torch.Tensor, float]:
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
    from poolq.worker.engine.engine import AsyncEngine
    from poolq.worker.engine.models import packed_encoder

    saved = packed_encoder._flash_varlen
    if not varlen:
        packed_encoder._flash_varlen = None
    try:
        model = load_model(ModelConfig(str(folder), device=device, dtype=dtype))  # type: ignore[arg-type]

        async def go() -> list:
            async with AsyncEngine(model) as engine:
                await engine.encode(texts[:64], ["embed"])  # warm-up
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = await engine.encode(texts, ["embed"])
                return [out, time.perf_counter() - t0]

        out, s = asyncio.run(go())
    finally:
        packed_encoder._flash_varlen = saved
    return torch.stack([r["embed"] for r in out]).float(), s


def st_encode(
    folder: Path, texts: list[str], device: str, dtype: torch.dtype
) -> tuple[torch.Tensor, float]:
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folder), device=device, model_kwargs={"dtype": dtype})
    st.encode(texts[:64], batch_size=64)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    emb = st.encode(texts, batch_size=64, convert_to_tensor=True)
    if device == "cuda":
        torch.cuda.synchronize()
    return emb.float().cpu(), time.perf_counter() - t0


def hf_padded_s(folder: Path, texts: list[str], device: str, dtype: torch.dtype) -> float:
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = (
        AutoModel.from_pretrained(str(folder), dtype=dtype, attn_implementation="sdpa")
        .to(device)
        .eval()
    )
    order = sorted(texts, key=len)
    with torch.inference_mode():
        t0 = time.perf_counter()
        for i in range(0, len(order), 64):
            enc = tok(
                order[i : i + 64],
                padding=True,
                truncation=True,
                max_length=512,
                return_tensors="pt",
            ).to(device)
            model(**enc)
        if device == "cuda":
            torch.cuda.synchronize()
    return time.perf_counter() - t0


def cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    device, n = args.device, args.texts
    dtypes = ["float16", "bfloat16"]
    if args.dry_run:
        device, n, dtypes = "cpu", 24, ["float32"]
    elif not torch.cuda.is_available():
        print("gpu_check: no CUDA device visible to torch", file=sys.stderr)
        return 2
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for shape, dims in SHAPES.items():
            folder = build_checkpoint(work / shape, *dims)
            texts = texts_for(MIXES["mixed"], min(n, 256))
            ref32, _ = st_encode(folder, texts, device, torch.float32)
            for dt in dtypes:
                ours, _ = poolq_encode(folder, texts, device, dt)
                st_same, _ = st_encode(folder, texts, device, getattr(torch, dt))
                c32, csame = cosines(ours, ref32), cosines(ours, st_same)
                floor = FIDELITY_MIN.get(dt, 0.99999)
                ok = float(c32.min()) >= floor
                failures += [] if ok else [f"{shape} {dt}"]
                print(
                    f"fidelity {shape:16s} {dt:9s} vs ST fp32 min cos {c32.min():.6f} mean {c32.mean():.6f}; vs ST {dt} min {csame.min():.6f} (floor {floor}) {'ok' if ok else 'FAIL'}"
                )
            for mix, span in MIXES.items():
                texts = texts_for(span, n)
                dt = dtypes[-1] if args.dry_run else "float16"
                _, s_ours = poolq_encode(folder, texts, device, dt)
                _, s_st = st_encode(folder, texts, device, getattr(torch, dt))
                _, s_runs = poolq_encode(folder, texts, device, dt, varlen=False)
                s_pad = hf_padded_s(folder, texts, device, getattr(torch, dt))
                print(
                    f"throughput {shape:16s} {mix:6s} {dt}: poolq {n / s_ours:8.0f} texts/s, ST {n / s_st:8.0f} "
                    f"(x{s_st / s_ours:.2f}); packed varlen {s_ours:.2f} s vs per-run SDPA {s_runs:.2f} s "
                    f"vs HF padded {s_pad:.2f} s (x{s_pad / s_ours:.2f})"
                )
    if failures:
        print(f"FAIL: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
