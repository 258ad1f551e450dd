#!/usr/bin/env bash
# Installs what kiln needs and is missing: Debian packages (apt) and the npm peers.
# Idempotent and quick when everything is present. Run by `make run` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: compiler toolchain, ONNX + protobuf, GoogleTest. Zoo: PyTorch/torchvision exporters,
# scikit-learn (digits data), OpenBLAS (Debian's torch is slow on reference BLAS). graphviz for SVG.
# clang for the libFuzzer target.
PKGS=(cmake ninja-build g++ pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libgtest-dev
      libbenchmark-dev python3 python3-numpy python3-torch python3-torchvision python3-onnx python3-sklearn
      libopenblas0-openmp graphviz clang libclang-rt-dev)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere (e.g. nodesource, which bundles npm): only ask apt when absent.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime (the correctness and speed peer). Its install script would fetch CUDA
# binaries from a host we cannot reach; the CPU library ships inside the package.
if [ ! -f node_modules/onnxruntime-node/package.json ]; then
  echo "bootstrap: installing npm packages (onnxruntime-node)"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error >/dev/null
fi
