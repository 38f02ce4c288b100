#!/usr/bin/env bash
# The semantic-placement benchmark (simnet/examples/placement/main.rs): installs the Debian manuals
# it reads (PostgreSQL, Python, Rust, Git, Linux, Django and SQLite manuals, the Debian reference and
# handbook), then runs it in release mode.
# The first run embeds up to `--chunks` chunks (the nine manuals hold ~100,000) into
# target/placement/, at ~35 chunks/s on 2 cores (about 50 minutes for all of them; it resumes where
# a stopped run left off); later runs reuse that index. Arguments go to the example (--nodes, --chunks, --cells, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
need=()
for pkg in postgresql-doc-15 python3.11-doc rust-doc git-doc debian-reference-en linux-doc-6.1 debian-handbook python-django-doc sqlite3-doc; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "bench-placement: installing ${need[*]} (apt log in target/apt-placement.log)"
  mkdir -p target
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}" > target/apt-placement.log
fi
export PATH="$HOME/.cargo/bin:$PATH"
mold -run cargo run --release --locked -p weft-simnet --example placement -- "$@"
