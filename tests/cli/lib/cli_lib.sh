# Shared by the CLI test scripts (tests/cli/*.sh), sourced after they set KILN, SRC, BIN:
#   cli_setup NAME        a scratch dir $T under BIN, removed on exit; counters reset
#   check WHAT CMD...     passes when CMD exits 0
#   expect_error WHAT SUBSTRING CMD...
#                         passes when CMD fails the way every kiln error must: exit 1..127 (no
#                         crash, no signal), exactly one "kiln: " line on stderr, the last one
#                         (progress and warnings may come before it), containing SUBSTRING
#   cli_finish            prints the counts; the script's exit status is its last command
cli_setup() {
  T=$(mktemp -d "$BIN/cli_$1.XXXXXX")
  CLI_NAME=$1
  trap 'rm -rf "$T"' EXIT
  fail=0; passed=0
}
check() {
  local what=$1; shift
  if "$@"; then passed=$((passed+1)); else echo "FAIL $what"; fail=$((fail+1)); fi
}
expect_error() {
  local what=$1 want=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$? errors
  errors=$(grep -c '^kiln: ' "$T/err")
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then
    echo "FAIL $what: exit code $rc (want 1..127)"; cat "$T/err"; fail=$((fail+1)); return
  fi
  if [ "$errors" -ne 1 ] || ! tail -n 1 "$T/err" | grep -q '^kiln: '; then
    echo "FAIL $what: want one 'kiln: ' line, the last on stderr:"; cat "$T/err"; fail=$((fail+1)); return
  fi
  if ! tail -n 1 "$T/err" | grep -qF -- "$want"; then
    echo "FAIL $what: stderr lacks '$want':"; cat "$T/err"; fail=$((fail+1)); return
  fi
  passed=$((passed+1))
}
cli_finish() {
  echo "$CLI_NAME: $passed passed, $fail failed"
  [ "$fail" -eq 0 ]
}
