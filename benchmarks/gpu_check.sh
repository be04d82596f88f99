#!/usr/bin/env bash
# The GPU checks, as one prepared script (its steps' timeouts add up to 8 minutes):
#   1. the CUDA tests (tests marked for CUDA, skipped elsewhere);
#   2. benchmarks/gpu_varlen_check.py: torch's varlen_attn against the SDPA paths on random-init
#      qwen3, modernbert and distilbert-SPLADE checkpoints in fp16 (max |diff|, min cosine),
#      throughput against sentence-transformers fp16 (untested on a GPU when written);
#   3. benchmarks/gpu_check.py: fp16/bf16 fidelity against sentence-transformers on random-init
#      BERT checkpoints of MiniLM's and BERT-base's shapes built here, throughput against
#      sentence-transformers fp16 at three length mixes, packed flash varlen against padded.
# Usage: benchmarks/gpu_check.sh [OUT_DIR]   (logs go to OUT_DIR, default $OUT or ./gpu_check_out)
# Needs a Python with torch (CUDA build), transformers, sentence-transformers and this package;
# set PYTHON to choose it. flash_attn is optional (without it "varlen" is per-run SDPA).
set -u
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-./gpu_check_out}}"
mkdir -p "$OUT_DIR"
PY="${PYTHON:-}"
for cand in "$PY" .venv/bin/python python3 python; do
  if [ -n "$cand" ] && "$cand" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    PY="$cand"; break
  fi
done
if ! "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "gpu_check: no Python with a CUDA torch found (set PYTHON)" | tee "$OUT_DIR/summary.txt"; exit 2
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
{
  echo "== environment"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$PY" -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
  "$PY" -c "import flash_attn; print('flash_attn', flash_attn.__version__)" 2>/dev/null || echo "flash_attn: not installed"
} 2>&1 | tee "$OUT_DIR/env.txt"
status=0
echo "== CUDA tests" | tee "$OUT_DIR/tests.txt"
timeout 90 "$PY" -m pytest -q -p no:cacheprovider tests/engine/test_cuda.py \
  2>&1 | tail -30 | tee -a "$OUT_DIR/tests.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
timeout 45 "$PY" -m pytest -q -p no:cacheprovider tests/engine/test_packed_encoder.py \
  tests/engine/test_colbert_forms.py -k cuda 2>&1 | tail -30 | tee -a "$OUT_DIR/tests.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "== varlen_attn vs SDPA, qwen3 / modernbert / distilbert-splade" | tee "$OUT_DIR/varlen.txt"
timeout 120 "$PY" benchmarks/gpu_varlen_check.py --work "$OUT_DIR/arch-models" --texts 1000 2>&1 \
  | grep -v "Warning" | tee -a "$OUT_DIR/varlen.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
rm -rf "$OUT_DIR/arch-models"
echo "== fidelity and throughput" | tee "$OUT_DIR/bench.txt"
timeout 225 "$PY" benchmarks/gpu_check.py --work "$OUT_DIR/models" --texts 2000 2>&1 \
  | grep -v "Warning" | tee -a "$OUT_DIR/bench.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
rm -rf "$OUT_DIR/models"
echo "gpu_check: exit $status" | tee "$OUT_DIR/summary.txt"
exit $status
