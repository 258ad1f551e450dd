#!/usr/bin/env bash
# Bad input through the CLI: one clear line on stderr, a non-zero exit, never a crash.
# usage: cli_errors.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup errors

# expect_error "description" "substring of stderr" cmd...

MODEL="$SRC/models/digits_cnn.onnx"
INPUT=$(/usr/bin/python3 - "$MODEL" <<'PY'
import onnx, sys
m = onnx.load(sys.argv[1])
inits = {i.name for i in m.graph.initializer}
print([i.name for i in m.graph.input if i.name not in inits][0])
PY
)

expect_error "no verb args" "expected one MODEL" "$KILN" run
expect_error "unknown verb" "unknown verb 'frobnicate'" "$KILN" frobnicate
expect_error "unknown flag" "unknown option '--bogus'" "$KILN" run "$MODEL" --bogus
expect_error "missing file" "cannot open" "$KILN" graph "$T/nope.onnx"
printf 'this is not a model' >"$T/garbage.onnx"
expect_error "garbage file" "garbage.onnx" "$KILN" graph "$T/garbage.onnx"
head -c 3000 "$MODEL" >"$T/truncated.onnx"
expect_error "truncated file" "truncated.onnx" "$KILN" graph "$T/truncated.onnx"
: >"$T/empty.onnx"
expect_error "empty file" "empty.onnx" "$KILN" graph "$T/empty.onnx"
expect_error "unknown --dim" "no dim named 'nosuch'" "$KILN" graph "$MODEL" --dim nosuch=4
expect_error "bad --dim value" "not an integer" "$KILN" graph "$MODEL" --dim N=abc
expect_error "unknown --shape input" "no input named 'nosuch'" "$KILN" graph "$MODEL" --shape nosuch=1,2
expect_error "--shape wrong rank" "does not match" "$KILN" graph "$MODEL" --shape "$INPUT=1,2"
expect_error "missing input" "missing input '$INPUT'" "$KILN" run "$MODEL"
/usr/bin/python3 -c "import numpy as np; np.save('$T/wrong_dtype.npy', np.zeros((1,1,8,8), np.int64)); np.save('$T/wrong_shape.npy', np.zeros((1,1,9,8), np.float32))"
expect_error "wrong dtype" "wrong dtype" "$KILN" run "$MODEL" --input "$INPUT=$T/wrong_dtype.npy"
expect_error "wrong shape" "input '$INPUT': expected f32" "$KILN" run "$MODEL" --input "$INPUT=$T/wrong_shape.npy"
head -c 40 "$T/wrong_shape.npy" >"$T/trunc.npy"
expect_error "truncated npy" "trunc.npy" "$KILN" run "$MODEL" --input "$INPUT=$T/trunc.npy"
expect_error "unknown format" "unknown --format 'pdf'" "$KILN" graph "$MODEL" --format pdf
expect_error "dim out of range" "N=3 is out of the range 1..2" "$KILN" run "$MODEL" --random --dim N=1..2 --shape "$INPUT=3,1,8,8"

cli_finish
