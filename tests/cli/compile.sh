#!/usr/bin/env bash
# kiln compile through the CLI: the digits CNN compiled, run from the artifact on its held-out
# images and checked against the interpreter; an unchanged recompile is a cache hit; --explain and
# --report say what was done; bad input is one line on stderr and a non-zero exit.
# usage: compile.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup compile

MODEL="$SRC/models/digits_cnn.onnx"
IMAGES="$SRC/models/digits_test_images.npy"
CACHE="$T/cache"

"$KILN" compile "$MODEL" -o "$T/d.kiln" --cache-dir "$CACHE" --explain --report >"$T/c.txt" 2>"$T/c.err"
check "compile exits 0" test $? -eq 0
check "wrote message" grep -qF "wrote $T/d.kiln" "$T/c.err"
check "pass table" grep -qE "^fuse-epilogue +yes" "$T/c.txt"
# The first layer (one input channel into 16) runs as a depthwise convolution on every ISA.
check "tactics listed" grep -qE "features.0/Conv +kiln::FusedConv +depthwise " "$T/c.txt"
check "plan report" grep -qF "arena (peak)" "$T/c.txt"

"$KILN" run "$MODEL" --input input="$IMAGES" --out "$T/ref" >/dev/null 2>&1
"$KILN" run "$T/d.kiln" --input input="$IMAGES" --expect "$T/ref" >"$T/r.txt" 2>&1
check "artifact matches the interpreter" test $? -eq 0
check "artifact ran compiled" grep -qF "compiled" "$T/r.txt"

"$KILN" compile "$MODEL" -o "$T/d.kiln" --cache-dir "$CACHE" >"$T/c2.txt" 2>"$T/c2.err"
check "recompile is a cache hit" grep -qF "up to date" "$T/c2.err"
"$KILN" compile "$MODEL" -o "$T/d0.kiln" -O0 --cache-dir "$CACHE" --quiet 2>/dev/null
"$KILN" run "$T/d0.kiln" --input input="$IMAGES" --expect "$T/ref" >/dev/null 2>&1
check "-O0 artifact matches too" test $? -eq 0
"$KILN" compile "$MODEL" -o "$T/dd.kiln" --dump-dir "$T/dump" --cache-dir "$CACHE" --quiet 2>/dev/null
check "dump dir has the IR after each pass" test -f "$T/dump/00-input.kir"

expect_error "no -o" "-o OUT.kiln is required" "$KILN" compile "$MODEL"
expect_error "bad level" "unknown level '-O9'" "$KILN" compile "$MODEL" -o "$T/x.kiln" -O9
expect_error "missing model" "cannot open" "$KILN" compile "$T/none.onnx" -o "$T/x.kiln"
expect_error "unknown pass" "no-such-pass" "$KILN" compile "$MODEL" -o "$T/x.kiln" --passes dce,no-such-pass
expect_error "bad plugin" "none.so: cannot open" "$KILN" compile "$MODEL" -o "$T/x.kiln" --pass-plugin "$T/none.so"
head -c 5000 "$T/d.kiln" >"$T/cut.kiln"
expect_error "truncated artifact" "cut.kiln" "$KILN" run "$T/cut.kiln" --input input="$IMAGES"
check "failed compiles left no artifact" test ! -e "$T/x.kiln"

cli_finish
