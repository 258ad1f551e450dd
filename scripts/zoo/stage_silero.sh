#!/usr/bin/env bash
# Stages the Silero VAD models — real third-party speech models (LSTM, If subgraphs, Conv STFT),
# not exported by us — as zoo model directories: stage_silero.sh ROOT VARIANT DIR.
# The ONNX files ship inside the npm package @ricky0123/vad-web; `npm pack` fetches just that
# tarball (no dependencies) into BUILD/zoo/.npm-cache once.
set -euo pipefail
ROOT=$1; VARIANT=$2; DIR=$3
PKG=@ricky0123/vad-web@0.0.31
CACHE=$(dirname "$DIR")/.npm-cache
mkdir -p "$CACHE"
if [ ! -f "$CACHE/package/dist/silero_vad_$VARIANT.onnx" ]; then
  (cd "$CACHE" && rm -rf package ./*.tgz && npm pack "$PKG" --silent >/dev/null && tar xzf ./*.tgz)
fi
tmp="$DIR.tmp"
rm -rf "$tmp" && mkdir -p "$tmp/inputs"
cp "$CACHE/package/dist/silero_vad_$VARIANT.onnx" "$tmp/model.onnx"
# 32 ms of 16 kHz audio (a tone in noise) and a non-zero recurrent state, seeded.
/usr/bin/python3 - "$tmp/inputs" "$VARIANT" <<'PY'
import sys, numpy as np
out, variant = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
t = np.arange(512) / 16000
np.save(f"{out}/input.npy", (0.3 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(512)).astype(np.float32)[None])
np.save(f"{out}/sr.npy", np.array(16000, np.int64))
if variant == "legacy":
    np.save(f"{out}/h.npy", (0.1 * rng.standard_normal((2, 1, 64))).astype(np.float32))
    np.save(f"{out}/c.npy", (0.1 * rng.standard_normal((2, 1, 64))).astype(np.float32))
else:
    np.save(f"{out}/state.npy", (0.1 * rng.standard_normal((2, 1, 128))).astype(np.float32))
PY
rm -rf "$DIR" && mv "$tmp" "$DIR"
