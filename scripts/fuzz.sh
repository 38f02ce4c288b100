#!/usr/bin/env bash
# Fuzz the extraction entry point: scripts/fuzz.sh [SECONDS] (default 300).
# Installs the nightly toolchain and cargo-fuzz if missing (idempotent). Crashes are written to
# extract/fuzz/artifacts/extract/ and make this script exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-300}"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cd extract/fuzz
mkdir -p corpus/extract
# Seed with real pages when the dev set is beside the repo (the corpus is not committed).
devset="${EXTRACTION_DEVSET:-../../../shared/extraction-devset}"
if [ -d "$devset/html" ] && [ -z "$(ls -A corpus/extract)" ]; then
  for f in "$devset"/html/*.html.gz; do gzip -dc "$f" > "corpus/extract/$(basename "$f" .html.gz)"; done
fi
cargo +nightly fuzz run extract corpus/extract -- -max_total_time="$secs" -max_len=262144 -rss_limit_mb=4096 -timeout=10
