#!/usr/bin/env bash
# Builds `weft` for 64-bit ARM (aarch64-unknown-linux-gnu: a Raspberry Pi 4/5 on a 64-bit OS)
# on this x86-64 Debian machine, and smoke-tests the binary under qemu-user:
#   weft doctor; weft extract on a page; a short crawl of a loopback site, which embeds its
#   chunks with the aarch64 ONNX Runtime; a search whose scores (cosines between the question's
#   vector and the chunks') are compared with the x86 build's on the same pages.
# Installs what it needs (Debian's cross compilers and qemu-user-static, the rustup target, the
# aarch64 ONNX Runtime from its PyPI wheel, checked by sha256). Idempotent.
#
#   bash scripts/aarch64.sh          # build and smoke-test
#   bash scripts/aarch64.sh build    # build only: target/aarch64-unknown-linux-gnu/release/weft
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=aarch64-unknown-linux-gnu
what=${1:-all}

need_apt=()
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need_apt+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need_apt+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null 2>&1 || need_apt+=(qemu-user-static)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "aarch64: installing ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
export PATH="$HOME/.cargo/bin:$PATH"
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
bash scripts/models.sh                      # the model, and this machine's ONNX Runtime
WEFT_ORT_ARCH=aarch64 bash scripts/models.sh # the aarch64 ONNX Runtime beside it

echo "aarch64: building weft for $TARGET"
started=$(date +%s)
# NK_TARGET_NEONSDOT=0: GCC 12's arm_neon.h cannot inline the dot-product intrinsics into
# USearch's SIMD kernels (numkong) built for the armv8-a baseline; the index runs f16, which
# does not use them (and a Pi 4's Cortex-A72 has no dot product).
NK_TARGET_NEONSDOT=0 \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
  CXX_aarch64_unknown_linux_gnu=aarch64-linux-gnu-g++ \
  AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
  cargo build --release --locked -p weft-node --bin weft --target "$TARGET"
arm="target/$TARGET/release/weft"
echo "aarch64: built $arm in $(($(date +%s) - started)) s: $(file -b "$arm" | cut -d, -f1-2)"
[ "$what" = build ] && exit 0

# The x86 build, for the comparison.
cargo build --release --locked -p weft-node --bin weft
x86="target/release/weft"

work=$(mktemp -d -t weft-aarch64-XXXX)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A small site on 127.0.0.1: three pages that link to each other.
mkdir -p "$work/site"
page() { # file, title, paragraphs...
  local file=$1 title=$2
  shift 2
  {
    echo "<!doctype html><html><head><title>$title</title></head><body><nav><a href=\"/\">Home</a>"
    echo "<a href=\"/bees.html\">Bees</a> <a href=\"/tides.html\">Tides</a></nav><article><h1>$title</h1>"
    for p in "$@"; do echo "<p>$p</p>"; done
    echo "</article></body></html>"
  } > "$work/site/$file"
}
page index.html "Notes from a small garden" \
  "The garden behind the house is twelve metres long and faces south, which is why the tomatoes do well and the lettuce bolts by June." \
  "Compost goes in the far corner: kitchen scraps, cut grass and the leaves of the old pear tree, turned every few weeks with a fork."
page bees.html "How honey bees find flowers" \
  "A forager that finds a good patch of flowers flies home and dances on the comb; the angle of her run tells the others the direction of the patch relative to the sun." \
  "The length of the waggle run says how far away it is, and the scent she carries says which flowers to look for when they get there."
page tides.html "Why the sea rises twice a day" \
  "The moon pulls the ocean toward it, and the earth turning beneath that bulge of water gives most coasts two high tides a day." \
  "When the sun and the moon pull in line, at new and full moon, the tides run higher: these are the spring tides."
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/site" "$port" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done

# One node's config for each build: the same defaults but the ONNX Runtime of its architecture,
# the loopback site allowed (a private address), no API port of its own needed.
config() { # arch-name, ort library
  cat > "$work/$1.toml" <<EOF
[embed]
ort_library = "$PWD/$2"
model = "$PWD/models/all-MiniLM-L6-v2-int8/model.onnx"
tokenizer = "$PWD/models/all-MiniLM-L6-v2-int8/tokenizer.json"
[fetch]
# The smoke crawl's site is on 127.0.0.1.
allow_private_networks = true
[api]
listen = "127.0.0.1:0"
EOF
}
config x86 models/onnxruntime-1.31.1/libonnxruntime.so
config arm models/onnxruntime-1.31.1-aarch64/libonnxruntime.so

# qemu-user 7.2 passes the host's /proc/cpuinfo through: ONNX Runtime's CPU detection (cpuinfo)
# reads an x86 one on an aarch64 binary and crashes (SIGSEGV at start). The aarch64 runs see a
# Raspberry Pi 4's (two Cortex-A72 cores) instead, bind-mounted in a mount namespace of their own.
for i in 0 1; do
  printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n' "$i"
done > "$work/cpuinfo"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi

run() { # arch, command, args... (the aarch64 binary under qemu-user, with the cross libc)
  local arch=$1 command=$2
  shift 2
  local dirs=(--data-dir "$work/$arch" --config "$work/$arch.toml")
  [ "$command" = extract ] && dirs=() # a pure command: no data dir
  if [ "$arch" = arm ]; then
    $SUDO unshare -m sh -c 'mount --bind "$0" /proc/cpuinfo && exec "$@"' "$work/cpuinfo" \
      qemu-aarch64-static -L /usr/aarch64-linux-gnu "$arm" "$command" "${dirs[@]}" "$@"
  else
    "$x86" "$command" "${dirs[@]}" "$@"
  fi
}
logged() { # log file, then as run: its output to the file
  local log=$1
  shift
  run "$@" >"$log" 2>&1 || {
    echo "aarch64: failed: $*; the end of its log:" >&2
    tail -n 40 "$log" >&2
    return 1
  }
}
timed() { # label, command...
  local label=$1 t0
  shift
  t0=$(date +%s%N)
  "$@"
  local ms=$((($(date +%s%N) - t0) / 1000000))
  printf 'aarch64: %-40s %5d.%01d s\n' "$label" $((ms / 1000)) $((ms % 1000 / 100)) >&2
}

for arch in arm x86; do
  mkdir -p "$work/$arch"
  echo "== $arch: weft doctor"
  timed "$arch doctor" run "$arch" doctor
  echo "== $arch: weft extract" >&2
  timed "$arch extract" run "$arch" extract --url "http://127.0.0.1:$port/bees.html" "$work/site/bees.html" \
    > "$work/$arch-extract.json"
  python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); print(" ", d["title"], "|", d["word_count"], "words")' "$work/$arch-extract.json"
  echo "== $arch: a short crawl of http://127.0.0.1:$port/"
  timed "$arch crawl (3 pages, embedded)" logged "$work/$arch-crawl.log" "$arch" start \
    --seed "http://127.0.0.1:$port/" --exit-when-idle
  timed "$arch search" run "$arch" search --json --local "how do bees tell each other where flowers are" > "$work/$arch-search.json"
done

python3 - "$work/arm-search.json" "$work/x86-search.json" <<'EOF'
import json, sys
def hits(path):
    d = json.load(open(path))
    return [(h["url"], float(h["score"])) for h in d["hits"]]
arm, x86 = hits(sys.argv[1]), hits(sys.argv[2])
print("aarch64: search hits (url, score) arm / x86:")
for a, x in zip(arm, x86):
    print(f"  {a[0]:<40} {a[1]:.6f} / {x[1]:.6f}")
assert [u for u, _ in arm] == [u for u, _ in x86], "the two builds rank the pages alike"
diff = max(abs(a[1] - x[1]) for a, x in zip(arm, x86))
assert len(arm) == 3, f"three pages crawled and found: {arm}"
assert diff < 1e-3, f"scores differ by {diff}"
print(f"aarch64: the aarch64 build's vectors agree with the x86 build's: largest score difference {diff:.2e}")
EOF
echo "aarch64: smoke run passed"
