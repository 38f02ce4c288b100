#!/usr/bin/env bash
# The reference extractors of issue 38, run on the extraction dev sets: trafilatura (Python,
# from PyPI into a venv under target/tools) and rs-trafilatura (the crate, built from
# extract/references, a project outside the workspace). Writes each one's predictions with
# per-page times to target/extract-references/<extractor>-<set>.json, which the `learn` example
# scores beside Weft's on the same pages:
#
#   bash scripts/extract-references.sh && cargo run --release -p weft-extract --example learn
#
# The dev sets are found as the examples find them: EXTRACTION_DEVSET / EXTRACTION_DEVSET_2,
# else ../shared/<name>. Idempotent; the installs are skipped when present.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/extract-references
venv=target/tools/trafilatura
mkdir -p "$out"
if ! "$venv/bin/python" -c "import trafilatura, lxml_html_clean" 2>/dev/null; then
  echo "extract-references: trafilatura 2.3.1 from PyPI into $venv (~30 s)"
  python3 -m venv "$venv" 2>/dev/null || { apt-get install -y -qq python3-venv && python3 -m venv "$venv"; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r extract/references/requirements.txt
fi
echo "extract-references: building rs-trafilatura 0.2.2 (extract/references; a few minutes the first time)"
CARGO_TARGET_DIR="$out/build" cargo build --quiet --release --locked --manifest-path extract/references/Cargo.toml
for pair in "extraction-devset:EXTRACTION_DEVSET" "extraction-devset-2:EXTRACTION_DEVSET_2"; do
  set_name=${pair%%:*}
  var=${pair##*:}
  dir=${!var:-../shared/$set_name}
  if [ ! -f "$dir/ground-truth.json" ]; then
    echo "extract-references: the dev set $set_name is not at $dir (set $var)" >&2
    exit 2
  fi
  "$out/build/release/weft-extract-references" "$dir" "$out/rs-trafilatura-$set_name.json"
  "$venv/bin/python" extract/references/trafilatura_predict.py "$dir" "$out/trafilatura-$set_name.json"
done
echo "extract-references: predictions in $out"
