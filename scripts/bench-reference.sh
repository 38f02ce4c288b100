#!/usr/bin/env bash
# The Python reference of `bench_embed`: a venv in target/bench-venv with onnxruntime (the same
# 1.31.1 as the node's library), tokenizers and numpy from PyPI. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/bench-venv
if "$venv/bin/python" -c "import onnxruntime, tokenizers, numpy" 2>/dev/null; then
  echo "bench-reference: $venv ready"
  exit 0
fi
python3 -m venv "$venv" 2>/dev/null || { apt-get install -y -qq python3-venv && python3 -m venv "$venv"; }
"$venv/bin/pip" install --quiet --disable-pip-version-check "onnxruntime==1.31.1" "tokenizers==0.23.3" "numpy==2.4.6"
echo "bench-reference: $venv ready"
