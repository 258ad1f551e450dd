#!/usr/bin/env bash
# Builds and runs bench/probes/fma_load_probe.cpp on one core (CPU 1 unless CPU= says which).
# AVX-512 hosts only: the probe is written in AVX-512 intrinsics for the host's own -march.
#   bash bench/probes/fma_load_probe.sh
set -euo pipefail
grep -qw avx512f /proc/cpuinfo || { echo "fma_load_probe: this CPU has no AVX-512" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
g++ -O3 -march=native -std=c++20 "$(dirname "$0")/fma_load_probe.cpp" -o "$OUT/probe"
taskset -c "${CPU:-1}" "$OUT/probe"
