#!/usr/bin/env bash
# Builds the Debian package: target/debian/weft_<version>-1_<arch>.deb (binary, model, ONNX
# Runtime under /usr/lib/weft; /etc/weft/weft.toml; the weft.service unit; man pages).
#   bash scripts/deb.sh          set up, build weft in release mode, package it
#   bash scripts/deb.sh tool     only install cargo-deb (the test suite's package test needs it)
# Install the result with `sudo apt install ./target/debian/weft_*.deb`, then `sudo weft join`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# cargo-deb, at a locked version, into target/tools (not ~/.cargo: nothing outside the checkout).
CARGO_DEB_VERSION=3.8.0
cargo_deb=target/tools/cargo-deb/bin/cargo-deb
if ! { [ -x "$cargo_deb" ] && "$cargo_deb" --version 2>/dev/null | grep -q " $CARGO_DEB_VERSION\$"; }; then
  echo "deb: installing cargo-deb $CARGO_DEB_VERSION into target/tools (about 2 min on 2 cores, once)"
  mkdir -p target/setup-logs
  started=$(date +%s)
  if ! mold -run cargo install cargo-deb --version "=$CARGO_DEB_VERSION" --locked --root target/tools/cargo-deb \
      >target/setup-logs/cargo-deb.log 2>&1; then
    echo "deb: cargo install cargo-deb failed; the end of target/setup-logs/cargo-deb.log:" >&2
    tail -n 20 target/setup-logs/cargo-deb.log >&2
    exit 1
  fi
  echo "deb:   done in $(($(date +%s) - started)) s"
fi
[ "${1:-}" = tool ] && exit 0

bash scripts/setup.sh
echo "deb: building weft in release mode (seconds when it is built; about 10 minutes on 2 idle cores the first time)"
mold -run cargo build --release --locked -p weft-node --bin weft
target/release/weft manpages target/release/man
echo "deb: packaging"
"$cargo_deb" deb -p weft-node --no-build --locked --strip --output target/debian/
ls -l target/debian/*.deb
cat <<'NEXT'

deb: next steps
  sudo apt install ./target/debian/weft_*.deb    # installs weft, its model, the service (not started)
  sudo weft join --contact mailto:you@example.org /ip4/.../p2p/12D3KooW...   # join a network
  weft doctor                                     # checks the set-up
NEXT
