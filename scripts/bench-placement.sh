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
# WEFT_PLACEMENT_MORE=1: eleven more manuals after the nine (~74,000 pages in all), for
# networks of 10,000 members at 25 chunks a member (--chunks 250000; ~2 h of embedding more).
if [ "${WEFT_PLACEMENT_MORE:-0}" = 1 ]; then
  more=()
  for pkg in erlang-doc nodejs-doc cmake-doc libboost1.74-doc python-pandas-doc openjdk-17-doc libstdc++-12-doc qt5-doc-html octave-doc maxima-doc sphinx-doc; do
    dpkg -s "$pkg" >/dev/null 2>&1 || more+=("$pkg")
  done
  if [ ${#more[@]} -gt 0 ]; then
    echo "bench-placement: installing ${more[*]} (apt log in target/apt-placement.log)"
    mkdir -p target
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${more[@]}" >> target/apt-placement.log
  fi
  d=/usr/share/doc
  export WEFT_PLACEMENT_DOCS="$d/postgresql-doc-15/html:$d/python3.11/html:$d/rust-doc/html:$d/git-doc:$d/debian-reference-common/docs:$d/linux-doc-6.1/html:$d/debian-handbook/html/en-US:$d/python-django-doc/html:$d/sqlite3:$d/erlang-doc:$d/nodejs/api:$d/cmake-data/html:$d/libboost1.74-doc:$d/python-pandas-doc/html:$d/openjdk-17-jre-headless/api:$d/gcc-12-base/libstdc++:/usr/share/qt5/doc:$d/octave:$d/maxima-doc/html:$d/sphinx-doc/html"
fi
export PATH="$HOME/.cargo/bin:$PATH"
mold -run cargo run --release --locked -p weft-simnet --example placement -- "$@"
