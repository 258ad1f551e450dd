#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer.
#   scripts/fuzz.sh BUILD_DIR SECONDS
# Configures BUILD_DIR with clang and KILN_FUZZ=ON, builds kiln_fuzz_import, seeds a corpus
# from *.onnx under models/ and build/zoo/ (when present) plus small generated models, and
# runs for SECONDS. The fuzz build's kernel dispatchers pick only the portable (sanitized) kernels
# (fuzz/CMakeLists.txt, src/kernels/isa_gate.h). Exits non-zero when the fuzzer finds a crash (input kept in
# BUILD_DIR/fuzz_artifacts/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}
SECONDS_TO_RUN=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}

# Build type Fuzz: -O1 -gline-tables-only (CMakeLists.txt), libFuzzer's usual flags: the sanitized
# libraries build in 233 s of two cores against 268 at -O2 -g1, and crash reports keep their lines.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DKILN_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=Fuzz >/dev/null
ninja -C "$BUILD" -j2 kiln_fuzz_import

corpus="$BUILD/fuzz_corpus"
artifacts="$BUILD/fuzz_artifacts"
mkdir -p "$corpus" "$artifacts"
# Seeds: models on disk (small ones only: each run re-parses the whole input) ...
for dir in models build/zoo; do
  [ -d "$dir" ] || continue
  find "$dir" -name '*.onnx' -size -2M -print0 | while IFS= read -r -d '' f; do
    cp "$f" "$corpus/seed_$(sha1sum "$f" | cut -c1-16).onnx"
  done
done
# ... and the small models the frontend tests generate (If/Loop bodies, typed fields, torch).
seeds="$BUILD/fuzz_seeds"
if /usr/bin/python3 tests/frontend/make_models.py "$seeds" >/dev/null 2>&1; then
  for f in "$seeds"/*.onnx; do cp "$f" "$corpus/gen_$(basename "$f")"; done
else
  echo "fuzz.sh: could not generate seed models (python3 with onnx and torch); using the others" >&2
fi
echo "fuzz.sh: $(ls "$corpus" | wc -l) corpus inputs; fuzzing for ${SECONDS_TO_RUN}s"

# libFuzzer exits non-zero on a crash, a leak, a timeout or an uncaught exception.
"$BUILD/bin/kiln_fuzz_import" "$corpus" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/" -print_final_stats=1
