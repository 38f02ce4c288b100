#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# cargo-deb, for the test that builds, installs and purges the Debian package (~35 s, once).
bash scripts/deb.sh tool
export PATH="$HOME/.cargo/bin:$PATH"
# A clean one-shot build gains nothing from incremental state, which costs gigabytes of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
mkdir -p target
started=$(date +%s)
# Build every test binary once; the list of binaries comes from cargo's JSON messages.
# Linked by mold (installed by setup.sh): `mold -run` swaps the linker under cargo without
# changing a flag, so a developer's own `cargo test` reuses these artifacts.
echo "==> building the test binaries: ~17 min on 2 cores from a clean clone (compiler output on stderr)"
mold -run cargo test --workspace --locked --no-run --message-format=json-render-diagnostics >target/test-build.json
built=$(date +%s)
echo "==> built the test binaries in $((built - started)) s"
# scripts/run_tests.py runs them as `cargo test` would (each in its package's directory) and
# prints each test's time, the slowest tests and each binary's wall time; JUnit files land in
# target/test-results/. Every failure is reported, not only the first binary's.
failed=0
# Everything but the two churn scenarios, two binaries at a time: the suite leaves a core idle
# most of the time (tests waiting on politeness delays, restarts, deadlines), and tests that
# run a network of nodes still take turns across binaries...
python3 scripts/run_tests.py target/test-build.json --skip simnet_churn:: --name suite --bound 1800 --jobs 2 || failed=1
# ... then those two alone: five and six real nodes each, judged against time bounds that a
# test beside them on two cores would eat into.
python3 scripts/run_tests.py target/test-build.json --only simnet_churn:: --name churn --bound 1500 || failed=1
echo "==> the whole run: $(($(date +%s) - started)) s (build $((built - started)) s)"
exit "$failed"
