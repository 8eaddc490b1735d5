#!/usr/bin/env bash
# GPU acceptance in one go (about 5-8 minutes on one GPU): the tests marked `gpu`, then SFT and a few
# GRPO steps of a small model built on the spot, on CUDA in bf16 through DeepSpeed, printing step
# times and peak memory (bench/gpu_check.py; JSON report in $OUT/gpu_check.json).
#   scripts/gpu_check.sh                  # on a GPU node with the GPU environment installed
#   WHEELS=dir scripts/gpu_check.sh       # a bare node: install these wheels (deepspeed, pydantic, ...) offline first
#   DEVICE=cpu scripts/gpu_check.sh       # degraded check of the same path on CPU (no bf16, tiny model)
set -euo pipefail
cd "$(dirname "$0")/.."
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false MLFLOW_DISABLE_TELEMETRY=true GX_ANALYTICS_ENABLED=false
export TOKENIZERS_PARALLELISM=false
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-/tmp/star_gpu_check}
mkdir -p "$OUT"
if [ -n "${WHEELS:-}" ]; then  # no registry: pure-Python wheels carried here, installed beside the system's torch
  $PY -m pip install -q --no-index --no-deps --target "$OUT/site" "$WHEELS"/*.whl
  export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
echo "== environment"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY - <<'PY'
import importlib
for name in ("torch", "transformers", "deepspeed", "pydantic", "vllm"):
    try:
        m = importlib.import_module(name)
        print(f"{name} {getattr(m, '__version__', '?')}")
    except Exception as exc:
        print(f"{name}: not importable ({type(exc).__name__})")
import torch
print("cuda", torch.cuda.is_available(), torch.version.cuda)
PY
if [ "$DEVICE" = "cuda" ]; then
  echo "== tests marked gpu"
  timeout 300 $PY -m pytest -m gpu -q -p no:cacheprovider tests/training/test_gpu.py
  SIZE=${SIZE:---hidden 512 --layers 8}
else
  SIZE=${SIZE:---hidden 64 --layers 2 --sft-steps 2 --grpo-steps 1 --generations 2 --max-new-tokens 24 --tool-budget 2}
fi
echo "== SFT + GRPO through DeepSpeed on $DEVICE"
# shellcheck disable=SC2086
timeout 420 $PY bench/gpu_check.py --device "$DEVICE" --out "$OUT" $SIZE
