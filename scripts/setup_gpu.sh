#!/usr/bin/env bash
# Set up .venv on a GPU node (linux x86_64, Python 3.12): vLLM 0.33 with the torch 2.14 it pins,
# transformers < 5.21, Prefect 3.7 (vLLM's fastapi), DeepSpeed 0.19.8, from the lock
# requirements/gpu.lock (resolved with requirements/gpu-overrides.txt; tests/env/test_gpu_env.py checks it).
#   LOCK=0 scripts/setup_gpu.sh   # resolve afresh instead of using the lock
set -euo pipefail
cd "$(dirname "$0")/.."
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false MLFLOW_DISABLE_TELEMETRY=true GX_ANALYTICS_ENABLED=false
PY=${PYTHON:-python3.12}
if ! command -v uv >/dev/null 2>&1; then $PY -m pip install -q uv; fi
UV=uv; command -v uv >/dev/null 2>&1 || UV="$PY -m uv"
[ -d .venv ] || $UV venv -q --python "$PY" .venv
args=(--python .venv/bin/python --compile-bytecode)
if [ "${LOCK:-1}" = "1" ]; then
  $UV pip install -q "${args[@]}" -r requirements/gpu.lock
  $UV pip install -q "${args[@]}" --no-deps -e .          # the lock already holds every dependency
  $UV pip install -q "${args[@]}" "pytest>=9" pytest-xdist
else
  $UV pip install -q "${args[@]}" -e ".[gpu,dev]" --override requirements/gpu-overrides.txt
fi
.venv/bin/dvc config --global core.analytics false >/dev/null 2>&1 || true
echo "gpu setup done: $(.venv/bin/python -c 'import torch,transformers,vllm,deepspeed;print("torch",torch.__version__,"cuda",torch.cuda.is_available(),"transformers",transformers.__version__,"vllm",vllm.__version__,"deepspeed",deepspeed.__version__)')"
