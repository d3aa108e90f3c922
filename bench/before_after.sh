#!/usr/bin/env bash
# Before/after of the compute-bound figures: the same stdio (bench/run.sh,
# the echo tool at W=1 and W=32) and HTTP (bench/http/run.sh, luamcp-sl and
# luamcp-sf at c=1 and c=16) runs with two luamcp binaries, interleaved: in
# every round each binary runs both benchmarks once, in an order that
# alternates between rounds. Prints per-round ratios after/before and writes
# bench/results/before_after.json (bench/report.mjs shows its rows: the
# issue-11 limit is a regression of at most 5 %, i.e. req/s after/before
# ≥ 0.95).
#
#   BENCH_BEFORE_BIN=/tmp/luamcp-before/build/luamcp bench/before_after.sh
#
# The "before" binary is built elsewhere from an older commit, e.g.
#   git worktree add /tmp/luamcp-before 9e3f38b
#   cmake -S /tmp/luamcp-before -B /tmp/luamcp-before/build -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build /tmp/luamcp-before/build -j2 --target luamcp
#
# Environment (defaults in brackets):
#   BENCH_BEFORE_BIN  the old binary (required)
#   BENCH_AFTER_BIN   the new one [build/luamcp]
#   BENCH_ROUNDS      rounds [3]
#   BENCH_N_W1, BENCH_N_W32, BENCH_HTTP_SECONDS, BENCH_HTTP_WARMUP: as in the
#                     two benchmarks
set -euo pipefail

cd "$(dirname "$0")/.."

before=${BENCH_BEFORE_BIN:?set BENCH_BEFORE_BIN to the luamcp binary to compare against}
after=${BENCH_AFTER_BIN:-build/luamcp}
rounds=${BENCH_ROUNDS:-3}
for b in "$before" "$after"; do
  [[ -x $b ]] || { echo "before_after: $b is not an executable" >&2; exit 1; }
done

dir=build/bench/before_after
mkdir -p "$dir" bench/results
all=$dir/runs.jsonl
: >"$all"
failed=0

# Appends one benchmark's raw runs to $all, tagged with bench, binary, round.
collect() { # file bench tag round
  node -e '
    const [file, bench, bin, round] = process.argv.slice(1);
    const lines = require("fs").readFileSync(file, "utf8").split("\n").filter(Boolean);
    for (const l of lines) console.log(JSON.stringify({ ...JSON.parse(l), bench, bin, round: Number(round) }));
  ' "$1" "$2" "$3" "$4" >>"$all"
}

for ((round = 1; round <= rounds; round++)); do
  order=(before after)
  ((round % 2 == 0)) && order=(after before)
  for tag in "${order[@]}"; do
    bin=$before
    [[ $tag == after ]] && bin=$after
    echo "== round $round/$rounds: $tag ($bin)"
    BENCH_ROUNDS=1 BENCH_SERVERS=luamcp BENCH_LUAMCP_BIN=$bin BENCH_OUT=$dir/stdio-last.json \
      bench/run.sh | grep '^round' || failed=1
    collect build/bench/runs.jsonl stdio "$tag" "$round"
    BENCH_ROUNDS=1 BENCH_HTTP_SERVERS="luamcp-sl luamcp-sf" BENCH_HTTP_SESSIONS= BENCH_LUAMCP_BIN=$bin \
      BENCH_HTTP_OUT=$dir/http-last.json bench/http/run.sh | grep '^round' || failed=1
    collect build/bench/http/runs.jsonl http "$tag" "$round"
  done
done

# Name each binary by the commit of the checkout it was built in, when it can.
describe() { # binary
  local c
  c=$(git -C "$(dirname "$1")" describe --always --dirty 2>/dev/null) || c=
  echo "$1${c:+ (commit $c)}"
}
echo
node bench/before_after.mjs "$all" bench/results/before_after.json "$(describe "$before")" "$(describe "$after")" || failed=1
exit "$failed"
