"""Build the CPU peers' models at run time from the bundled folders (MiniLM, SPLADE-tiny):

* ``{name}-fp32.onnx``: the HF encoder exported with ``torch.onnx.export`` (TorchScript
  exporter, opset 17, dynamic batch and length). MiniLM outputs ``last_hidden_state``; SPLADE
  outputs its pooled ``[B, V]`` weights, ``max_t log1p(relu(logits)) * mask`` computed inside the
  graph (kinder to the peer than shipping ``[B, L, 30522]`` logits out of the runtime).
* ``{name}-int8-ort.onnx``: ONNX Runtime dynamic quantization with the settings of optimum's
  ``AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=True)`` (what
  sentence-transformers' ``export_dynamic_quantized_onnx_model(..., "avx512_vnni")`` runs):
  per-channel int8 weights, dynamic uint8 activations, no reduced range.
* ``{name}-int8-ov.xml``: OpenVINO IR of the fp32 ONNX, statically quantized by NNCF
  (``nncf.quantize``, ``ModelType.TRANSFORMER``, as optimum-intel's ``OVQuantizer`` for
  sentence-transformers' ``export_static_quantized_openvino_model``), calibrated on 300
  standard-library passages that are not the benchmark corpus (passages 1500-1800).
* ``fastembed-{L}/``: a fastembed custom-model folder (the ORT int8 ONNX, tokenizer files,
  ``tokenizer_config.json`` ``max_length`` = L).

sentence-transformers' own ONNX/OpenVINO backends need optimum-onnx / optimum-intel, whose
releases pin transformers < 5 or a CUDA torch 2.14: they cannot share this environment, so the
same runtimes are driven here directly with the same settings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from torch import nn

CALIBRATION = slice(1500, 1800)  # standard-library passages outside the 1,080-passage corpus
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


class _Encoder(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        )
        return out.last_hidden_state  # [B, L, H]


class _Splade(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
        logits = self.model(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).logits  # [B, L, V]
        act = torch.log1p(torch.relu(logits)) * attention_mask.unsqueeze(-1)
        return act.amax(dim=1)  # [B, V]


def export_onnx(folder: Path, out: Path, sparse: bool) -> Path:
    from transformers import AutoModel, AutoModelForMaskedLM

    cls = AutoModelForMaskedLM if sparse else AutoModel
    model = cls.from_pretrained(str(folder), attn_implementation="eager").eval()
    wrapped = (_Splade if sparse else _Encoder)(model).eval()
    ids = torch.ones(2, 8, dtype=torch.long)
    axes = {0: "batch", 1: "length"}
    with torch.inference_mode():
        torch.onnx.export(
            wrapped,
            (ids, ids, torch.zeros_like(ids)),
            str(out),
            input_names=INPUTS,
            output_names=["output"],
            dynamic_axes={
                **dict.fromkeys(INPUTS, axes),
                "output": {0: "batch"} if sparse else axes,
            },
            opset_version=17,
            dynamo=False,
        )
    return out


def quantize_ort(fp32: Path, out: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32), str(out), per_channel=True, reduce_range=False, weight_type=QuantType.QInt8
    )
    return out


def calibration_batches(tokenizer_dir: Path, max_length: int, batch: int = 16) -> list[dict]:
    import numpy as np
    from tokenizers import Tokenizer

    from poolq.ingest.sample_corpus import passages

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    tok.enable_truncation(max_length)
    tok.enable_padding()
    texts = passages(2000)[CALIBRATION]
    out = []
    for i in range(0, len(texts), batch):
        enc = tok.encode_batch(texts[i : i + batch])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    return out


def quantize_openvino(fp32: Path, out: Path, tokenizer_dir: Path, max_length: int) -> Path:
    import nncf
    import openvino as ov

    model = ov.convert_model(str(fp32))
    data = calibration_batches(tokenizer_dir, max_length)
    q = nncf.quantize(
        model, nncf.Dataset(data), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(data)
    )
    ov.save_model(q, str(out))
    return out


def fastembed_folder(src: Path, int8_onnx: Path, out: Path, max_length: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(int8_onnx, out / "model_quantized.onnx")
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "vocab.txt"):
        if (src / name).is_file():
            shutil.copy(src / name, out / name)
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["max_length"] = max_length
    (out / "tokenizer_config.json").write_text(json.dumps(cfg))
    return out


def build_all(minilm: Path, splade: Path, work: Path, fastembed_lengths: tuple[int, ...]) -> dict:
    """Every artifact, paths by name; rebuilt in ``work`` each run (a minute or two)."""
    work.mkdir(parents=True, exist_ok=True)
    arts: dict[str, str] = {}
    for name, folder, sparse, max_len in (
        ("minilm", minilm, False, 256),
        ("splade", splade, True, 512),
    ):
        fp32 = export_onnx(folder, work / f"{name}-fp32.onnx", sparse)
        arts[f"{name}-fp32-onnx"] = str(fp32)
        arts[f"{name}-int8-ort"] = str(quantize_ort(fp32, work / f"{name}-int8-ort.onnx"))
        arts[f"{name}-int8-ov"] = str(
            quantize_openvino(fp32, work / f"{name}-int8-ov.xml", folder, max_len)
        )
    for length in fastembed_lengths:
        arts[f"fastembed-{length}"] = str(
            fastembed_folder(
                minilm, Path(arts["minilm-int8-ort"]), work / f"fastembed-{length}", length
            )
        )
    return arts
