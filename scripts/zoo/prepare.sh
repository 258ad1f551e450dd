#!/usr/bin/env bash
# Prepares the model zoo for the parity tests: prepare.sh BUILD_DIR [MODEL...]
#
# For each model (default: all) fills BUILD_DIR/zoo/<model>/ with
#   model.onnx, inputs/<input>.npy   made by the export script (skipped when its stamp, a hash
#                                    of the script and its helpers, is unchanged)
#   ort/<output>.npy                 ONNX Runtime's outputs (redone when the export or ort_run.js changes)
# and checks ORT against PyTorch's own outputs (torch/<output>.npy) when the exporter left them.
# digits_cnn is not exported: it is the trained model committed under models/.
# silero_vad_* are third-party models (Silero VAD) taken from an npm package, see stage_silero.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [MODEL...]" >&2; exit 2; }
ZOO=$(mkdir -p "$1/zoo" && cd "$1/zoo" && pwd)
shift
ALL=(digits_cnn resnet18 mobilenet_v2 efficientnet_b0 resnet50 bert_base gpt2 gpt2_decode
     silero_vad_legacy silero_vad_v5 silero_vad_v6)
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=("${ALL[@]}")

PY=/usr/bin/python3  # Debian's python has torch/onnx/sklearn; a pyenv python on PATH may not
unset OPENBLAS_CORETYPE  # forcing a core type halves OpenBLAS speed; let it detect the CPU
ZS="$ROOT/scripts/zoo"
[ -f "$ROOT/node_modules/onnxruntime-node/package.json" ] ||
  { echo "prepare: onnxruntime-node is missing; run scripts/bootstrap.sh" >&2; exit 1; }

# One preparation at a time per build directory (ctest may start the fixture twice).
exec 9>"$ZOO/.lock"
flock 9

export_script() {
  case "$1" in
    resnet18 | resnet50 | mobilenet_v2 | efficientnet_b0) echo "$ZS/export_vision.py" ;;
    bert_base) echo "$ZS/export_bert.py" ;;
    gpt2 | gpt2_decode) echo "$ZS/export_gpt2.py" ;;
    digits_cnn) echo "$ZS/train_digits.py" ;;
    silero_vad_*) echo "$ZS/stage_silero.sh" ;;
    *) echo "prepare: unknown model '$1' (known: ${ALL[*]})" >&2; return 1 ;;
  esac
}

hash_of() { { echo "$1"; shift; cat "$@"; } | sha256sum | cut -c1-16; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# digits_cnn: the committed model and its held-out split become the model directory.
stage_digits() {
  local dir=$1 tmp="$1.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp/inputs"
  cp "$ROOT/models/digits_cnn.onnx" "$tmp/model.onnx"
  cp "$ROOT/models/digits_test_images.npy" "$tmp/inputs/input.npy"
  rm -rf "$dir" && mv "$tmp" "$dir"
}

declare -A TIMES
for m in "${MODELS[@]}"; do
  script=$(export_script "$m")
  dir="$ZOO/$m"
  if [ "$m" = digits_cnn ]; then
    if [ ! -f "$ROOT/models/digits_cnn.onnx" ]; then
      echo "prepare: models/digits_cnn.onnx is missing; training it"
      (cd "$ZS" && $PY train_digits.py "$ROOT/models")
    fi
    key=$(hash_of "$m" "$ROOT/models/digits_cnn.onnx" "$ROOT/models/digits_test_images.npy")
  else
    key=$(hash_of "$m" "$script" "$ZS/zoo_common.py")
  fi

  if [ ! -f "$dir/model.onnx" ] || [ "$(cat "$dir/.export-stamp" 2>/dev/null)" != "$key" ]; then
    echo "prepare: exporting $m"
    t0=$(now)
    if [ "$m" = digits_cnn ]; then
      stage_digits "$dir"
    elif [[ "$m" == silero_vad_* ]]; then
      bash "$script" "$ROOT" "${m#silero_vad_}" "$dir"
    else
      (cd "$ZS" && $PY "$script" "$m" "$dir")
    fi
    echo "$key" >"$dir/.export-stamp"
    rm -f "$dir/.ort-stamp"
    TIMES[$m]="export $(elapsed "$t0") s"
  else
    TIMES[$m]="export cached"
  fi

  ort_key=$(hash_of "$key" "$ROOT/scripts/ort_run.js")
  if [ "$(cat "$dir/.ort-stamp" 2>/dev/null)" != "$ort_key" ]; then
    echo "prepare: running ONNX Runtime on $m"
    t0=$(now)
    feeds=()
    for f in "$dir"/inputs/*.npy; do
      n=$(basename "$f" .npy)
      feeds+=(--input "$n=$f")
    done
    rm -rf "$dir/ort"
    node "$ROOT/scripts/ort_run.js" "$dir/model.onnx" "${feeds[@]}" --out "$dir/ort"
    [ -d "$dir/torch" ] && $PY "$ZS/compare_torch.py" "$dir"
    echo "$ort_key" >"$dir/.ort-stamp"
    TIMES[$m]="${TIMES[$m]}, ort $(elapsed "$t0") s"
  else
    TIMES[$m]="${TIMES[$m]}, ort cached"
  fi
done

echo "prepare: done ($ZOO)"
for m in "${MODELS[@]}"; do printf '  %-16s %s\n' "$m" "${TIMES[$m]}"; done
