#!/usr/bin/env bash
# Installs what Weft needs on a fresh Debian machine. Idempotent: safe to run again.
# Today that is a Rust toolchain, a C/C++ compiler (USearch is C++), and the embedding model with
# the ONNX Runtime that runs it (see scripts/models.sh), the PostgreSQL manual the simulator
# serves, and Debian's Chromium for the layout teacher and JavaScript rendering (driven over
# CDP; no browser is downloaded at run time).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v c++ >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v unzip >/dev/null 2>&1 || need_apt+=(unzip)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
# The simulator's synthetic web is built from the PostgreSQL manual's HTML.
[ -f /usr/share/doc/postgresql-doc-15/html/index.html ] || need_apt+=(postgresql-doc-15)
# Headless Chromium: the teacher renders pages to learn their layout.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# The NAT lab test builds network namespaces (ip) with masquerading routers (nft).
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
# mold links the ~40 test binaries and the release build several times faster than GNU ld;
# the scripts run cargo under `mold -run`, which leaves cargo's fingerprints as they are.
command -v mold >/dev/null 2>&1 || need_apt+=(mold)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "setup: installing ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing the Rust toolchain with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
echo "setup: $(cargo --version)"
cargo fetch --locked -q
bash scripts/models.sh
echo "setup: done"
