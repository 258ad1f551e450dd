#!/usr/bin/env bash
# kiln opt and kiln passes: pipelines on the digits model and a textual-IR model, dumps,
# plugins, output files, and the errors (unknown pass, bad plugin, bad level).
# usage: opt.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup opt
# expect_error "description" "substring of the error" cmd...: exit 1..127 and exactly one
# "kiln: ..." error line holding the text (progress lines such as "plugin X: a" may precede it)
MODEL="$SRC/models/digits_cnn.onnx"
IMAGES="$SRC/models/digits_test_images.npy"
GELU="$BIN/plugins/libkiln_relu_to_gelu.so"

# kiln passes: names, summaries, levels
"$KILN" passes >"$T/passes.txt"
check "passes lists fold-constants" grep -qE "^fold-constants +evaluate nodes" "$T/passes.txt"
check "passes lists -O1" grep -qF -- "-O1  fold-constants,simplify-shapes,eliminate-identity,cse,dce" "$T/passes.txt"

# a model with work for -O1: a foldable constant chain, an Identity, a duplicate and a dead node
cat >"$T/m.kir" <<'IR'
kiln.model ir=8 opset=17
graph g(%x: f32[2,3]) -> (%y) {
  %a = init f32[3] dense<1.0, 2.0, 3.0>
  %b = init f32[3] dense<0.5, 0.5, 0.5>
  %s = Mul(%a, %b)
  %i = Identity(%x)
  %p = Add(%i, %s)
  %q = Add(%s, %i)
  %dead = Neg(%x)
  %y = Mul(%p, %q)
}
IR
"$KILN" opt "$T/m.kir" -O1 --dump-dir "$T/dump" -o "$T/m1.kir" >"$T/table.txt" 2>"$T/err"
check "opt table header" grep -qE "^pass +changed +ms +nodes" "$T/table.txt"
check "opt fold-constants row" grep -qE "^fold-constants +yes +[0-9.]+ +6 -> 5" "$T/table.txt"
check "opt total row" grep -qE "^total +[0-9.]+ +6 -> 2" "$T/table.txt"
check "dump input" test -f "$T/dump/00-input.kir"
check "dump after dce" test -f "$T/dump/05-dce.kir"
check "opt wrote kir" grep -qF "%y = Mul(%p, %p)" "$T/m1.kir"
printf '%s\n' "import numpy as np" "np.save('$T/x.npy', np.arange(6, dtype=np.float32).reshape(2, 3))" | /usr/bin/python3
"$KILN" run "$T/m.kir" --input x="$T/x.npy" --out "$T/r0" >/dev/null
"$KILN" run "$T/m1.kir" --input x="$T/x.npy" --out "$T/r1" --expect "$T/r0" >/dev/null
check "optimized kir computes the same" test $? -eq 0

# explicit list, fixed point, disabled pass, explain, print-after-all
"$KILN" opt "$T/m.kir" --passes 'cse*,dce' --disable-pass dce --explain --print-after-all >"$T/t2.txt" 2>"$T/ir.txt"
check "explicit list runs cse only" bash -c "grep -qE '^cse +yes' '$T/t2.txt' && ! grep -qE '^dce ' '$T/t2.txt'"
check "explain prints remarks" grep -qE "cse +applied +Add node" "$T/t2.txt"
check "print-after-all" grep -qF "// ---- after cse ----" "$T/ir.txt"

# the digits model at -O2: each Conv/Gemm takes its Relu into its epilogue (9 -> 6 nodes);
# written as ONNX (kiln-domain ops included) and run
"$KILN" opt "$MODEL" -O2 -o "$T/d.onnx" >"$T/d.txt" 2>"$T/d.err"
check "digits -O2 table" grep -qE "^total +[0-9.]+ +9 -> 6" "$T/d.txt"
check "digits -O2 fuses epilogues" grep -qE "^fuse-epilogue +yes" "$T/d.txt"
"$KILN" run "$MODEL" --input input="$IMAGES" --out "$T/d0" >/dev/null
"$KILN" run "$T/d.onnx" --input input="$IMAGES" --out "$T/d1" --expect "$T/d0" >/dev/null
check "digits after -O2 computes the same" test $? -eq 0

# a plugin pass changes the model on purpose
if [ -f "$GELU" ]; then
  "$KILN" opt "$MODEL" --pass-plugin "$GELU" --passes relu-to-gelu -o "$T/g.kir" >"$T/g.txt" 2>"$T/g.err"
  check "plugin loaded" grep -qF "plugin $GELU: relu-to-gelu" "$T/g.err"
  check "plugin pass ran" grep -qE "^relu-to-gelu +yes" "$T/g.txt"
  check "plugin output has Gelu" bash -c "grep -c ' = Gelu(' '$T/g.kir' | grep -qx 3"
  "$KILN" passes --pass-plugin "$GELU" >"$T/p2.txt"
  check "passes lists plugin" grep -qE "^relu-to-gelu +sample plugin" "$T/p2.txt"
else
  echo "FAIL plugin $GELU was not built"; fail=$((fail+1))
fi

# errors: one line, exit 1
expect_error "unknown pass" "--passes: unknown pass 'nope' (known passes: fold-constants" "$KILN" opt "$MODEL" --passes cse,nope
expect_error "unknown disabled pass" "--disable-pass: unknown pass 'nope'" "$KILN" opt "$MODEL" --disable-pass nope
expect_error "bad level" "unknown level '-O7'" "$KILN" opt "$MODEL" -O7
expect_error "missing plugin" "pass plugin '$T/none.so': no such file" "$KILN" opt "$MODEL" --pass-plugin "$T/none.so"
echo "not a library" >"$T/fake.so"
expect_error "not a library" "pass plugin '$T/fake.so': cannot load" "$KILN" opt "$MODEL" --pass-plugin "$T/fake.so"
LIBM=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 /lib64/libm.so.6 2>/dev/null | head -1)
if [ -n "$LIBM" ]; then
  expect_error "library without the entry point" "does not export kiln_register_passes" "$KILN" opt "$MODEL" --pass-plugin "$LIBM"
fi
[ -f "$GELU" ] && expect_error "plugin loaded twice" "pass 'relu-to-gelu' is already registered" \
  "$KILN" opt "$MODEL" --pass-plugin "$GELU" --pass-plugin "$GELU"
expect_error "bad output suffix" "-o wants a .kir or .onnx file" "$KILN" opt "$MODEL" -o "$T/x.txt"
expect_error "no model" "expected one MODEL" "$KILN" opt

cli_finish
