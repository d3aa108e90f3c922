#!/usr/bin/env bash
# The soak (not a timing benchmark): SOAK_N mixed requests (default 1M) over
# stdio and Streamable HTTP at once, a script of the app rewritten every
# second; every id answered exactly once, RSS and open fds flat. Prints the
# figures and writes bench/results/soak.json. See bench/README.md, "The soak".
# Exit status 1 when a check fails.
set -euo pipefail

cd "$(dirname "$0")/../.."

bin=${LUAMCP_BIN:-build/luamcp}
if [[ ! -x $bin ]]; then
  echo "bench/soak: $bin not found; build it first (make)" >&2
  exit 1
fi
mkdir -p bench/results
LUAMCP_BIN=$bin exec node bench/soak/driver.mjs bench/results/soak.json
