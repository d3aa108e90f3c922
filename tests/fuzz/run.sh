#!/usr/bin/env bash
# run.sh BINARY CORPUS SECONDS [ARTIFACTS]
# One libFuzzer target for SECONDS, on a temporary copy of the seed corpus
# CORPUS (the repository's corpus is never written). A crash, leak, timeout
# or failed check leaves its input in ARTIFACTS (default: a temp dir, kept
# then) and fails. The last line printed is the summary:
#   NAME: #N DONE cov: X ft: Y corp: Z/... exec/s: W rss: ...
set -u
bin=$1 corpus=$2 seconds=$3 artifacts=${4:-}
name=$(basename "$bin"); name=${name#fuzz_}
[ -x "$bin" ] || { echo "$name: no fuzzer at $bin (build it: make fuzz-build)"; exit 1; }
# the longest input worth trying, per target
case $name in
  pattern) max_len=160 ;;
  uri_template) max_len=512 ;;
  encoding) max_len=1024 ;;
  validate) max_len=2048 ;;
  *) max_len=4096 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/luamcp-fuzz-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
cp "$corpus"/* "$work/corpus/" 2>/dev/null
if [ -z "$artifacts" ]; then artifacts=$work/artifacts; fi
mkdir -p "$artifacts"
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=$max_len \
    -print_final_stats=1 -error_exitcode=1 -artifact_prefix="$artifacts/$name-" "$work/corpus" >"$work/log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  tail -n 60 "$work/log"
  echo "$name: FAILED (exit $rc); the input is in $artifacts/"
  ls "$artifacts"/"$name"-* 2>/dev/null
  exit $rc
fi
grep -E '^stat::|^Done ' "$work/log" | grep -E 'number_of_executed_units|peak_rss|^Done' | tr '\n' ' '
echo
echo "$name: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" | tail -n 1)"
