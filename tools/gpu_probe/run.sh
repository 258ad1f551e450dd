#!/usr/bin/env bash
# Builds and runs gpu_probe on a machine with an NVIDIA GPU and CUDA (nvcc + cuBLAS).
# Usage: tools/gpu_probe/run.sh [OUTDIR]   (prints the table; copies it to OUTDIR/probe.txt)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-.}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv | tee "$out/smi.txt"
nvcc --version | tail -2
nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/gpu_probe "$here/gpu_probe.cu" -lcublas
/tmp/gpu_probe | tee "$out/probe.txt"
