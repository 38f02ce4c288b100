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
mold -run cargo build --release --locked -q -p weft-node -p weft-simnet
exec target/release/weft demo "$@"
