#!/usr/bin/env bash
# Sets everything up and runs the main job on loopback: `weft demo` — a synthetic web built from
# the PostgreSQL manual (20-odd hosts' worth of pathologies: robots.txt rules, Crawl-delay, 429
# and 5xx bursts, slow answers, redirect chains, mirrors, JavaScript shells), three real Weft
# nodes forming a network on 127.0.0.1, a minute of polite crawling with a progress bar, then
# searches by meaning with the node that answered, and what the web server saw.
# No traffic leaves 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
started=$(date +%s)
if [ -x target/release/weft ]; then
  echo "demo: building weft in release mode (up to date in seconds unless the sources changed)"
else
  echo "demo: building weft in release mode for the first time: ~700 crates, about 10 minutes on 2 idle cores (longer on a busy or slower box)"
  echo "demo: (cargo's progress below; later builds take seconds)"
fi
mold -run cargo build --release --locked -p weft-node -p weft-simnet
echo "demo: built in $(($(date +%s) - started)) s; starting three nodes on 127.0.0.1"
status=0
target/release/weft demo "$@" || status=$?
cat <<'NEXT'

demo: next steps
  target/release/weft start --contact https://you.example/crawler --seed https://a-site-you-like.org/
                                     # your own node (--contact: where site owners reach you)
  target/release/weft start --contact URL --bootstrap /ip4/.../p2p/12D3KooW...   # join a network
  target/release/weft doctor         # checks this machine's set-up
  bash scripts/test.sh               # the whole test suite
NEXT
exit "$status"
