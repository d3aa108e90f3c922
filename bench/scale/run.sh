#!/usr/bin/env bash
# Scale curves of issue 7 (a benchmark, not a test): tools/list with 10, 1k,
# 10k tools; tools/call with 1 KB, 100 KB, 5 MB; 1, 100, 1,000 HTTP sessions;
# RSS over 1M calls. luamcp and the TypeScript SDK side by side. Prints a
# table and writes bench/results/scale.json. See bench/scale/README.md.
#
# Environment (defaults in brackets):
#   LUAMCP_BIN            the server [build/luamcp]
#   SCALE_ROUNDS          rounds; luamcp and the TS SDK alternate who goes first [3]
#   SCALE_TS              0: luamcp alone (no TS SDK installed) [1]
#   SCALE_TOOLS           tool counts of the tools/list curve ["10 1000 10000"]
#   SCALE_LIST_BUDGET_MS  listing time per run (at least 5 listings) [1000]
#   SCALE_LIST_MAX        listings per run at most [3000]
#   SCALE_SIZES           echo text sizes, bytes ["1024 102400 5242880"]
#   SCALE_CALLS           timed calls per size (plus a tenth untimed first) ["2000 200 20"]
#   SCALE_SESSIONS        HTTP session counts ["1 100 1000"]
#   SCALE_MORE_CALLS      further calls per session after the last count [10]
#   SCALE_RSS_CALLS       calls of the RSS run [1000000]
#   SCALE_RSS_EVERY       VmRSS read every so many answers [50000]
# Exit status 1 when a run failed (not when a target is missed).
set -euo pipefail

cd "$(dirname "$0")/../.."

bin=${LUAMCP_BIN:-build/luamcp}
if [[ ! -x $bin ]]; then
  echo "bench/scale: $bin not found; build it first (make)" >&2
  exit 1
fi
if ! command -v node >/dev/null || ! command -v cc >/dev/null; then
  echo "bench/scale: node (>= 20) and cc are needed" >&2
  exit 1
fi
if [[ ${SCALE_TS:-1} != 0 && ! -d tests/node_modules/@modelcontextprotocol/sdk ]]; then
  echo "bench/scale: the TypeScript SDK is missing: npm ci --prefix tests (or SCALE_TS=0)" >&2
  exit 1
fi

# The drivers live apart from bench/run.sh's build/bench/stdio_load, so the two
# scripts can build at the same time.
drivers=build/bench/scale
mkdir -p "$drivers" bench/results
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$drivers/scale_client" bench/scale/scale_client.c
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$drivers/stdio_load" bench/stdio_load.c

LUAMCP_BIN=$bin SCALE_DRIVERS=$drivers exec node bench/scale/scale.mjs bench/results/scale.json
