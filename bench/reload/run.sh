#!/usr/bin/env bash
# Hot-reload benchmark (not a test): save-to-list_changed latency, reload
# time of a 1,000-tool app, RSS over 1,000 reloads. Prints a table and writes
# bench/results/reload.json. See bench/reload/README.md.
#
# Environment (defaults in brackets):
#   LUAMCP_BIN           the server [build/luamcp]
#   RELOAD_SCRIPTS       scripts (one tool each) of the latency and RSS app [100]
#   RELOAD_SAMPLES       timed saves for (a) [200]
#   RELOAD_BIG_TOOLS     tools (one script each) of the big app for (b) [1000]
#   RELOAD_BIG_RUNS      SIGHUP reloads timed for (b) [30]
#   RELOAD_BIG_SAVES     timed saves of the big app for (b) [30]
#   RELOAD_RSS_RELOADS   reloads for (c) [1000]
#   RELOAD_RSS_EVERY     RSS sampled every so many reloads [100]
# Exit status 1 when a target is missed (p99 of (a) >= 100 ms, or RSS grows).
set -euo pipefail

cd "$(dirname "$0")/../.."

bin=${LUAMCP_BIN:-build/luamcp}
if [[ ! -x $bin ]]; then
  echo "bench/reload: $bin not found; build it first (make)" >&2
  exit 1
fi
if ! command -v node >/dev/null; then
  echo "bench/reload: node (>= 20) is needed" >&2
  exit 1
fi

mkdir -p bench/results
LUAMCP_BIN=$bin exec node bench/reload/driver.mjs bench/results/reload.json
