#!/usr/bin/env bash
# The performance model against the compiled runtime (issue 5): `kiln perf --chip cpu` predictions
# vs measured compiled latency for each zoo model at batch 1, 4 and 16, +-30% bound.
#   scripts/perf_validate.sh BUILD_DIR
# A benchmark (it times real runs), so it is not part of make test. Needs the zoo
# (bash scripts/zoo/prepare.sh BUILD_DIR) and takes about 100 s on a quiet 2-core machine (it measures
# the ceilings, ~5 s, before each of its 3 rounds).
set -euo pipefail
BUILD=${1:?usage: perf_validate.sh BUILD_DIR}
cmake --build "$BUILD" --target kiln_analysis_test >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/kiln_analysis_test" --gtest_also_run_disabled_tests --gtest_filter='PerfValidation.*'
