#!/usr/bin/env bash
# install-deps.sh {run|test|bench} — install the Debian packages a target
# needs (when root), or print the exact apt-get line to run (when not).
set -euo pipefail

build=(cmake make gcc pkg-config liblua5.4-dev lua-cjson-dev libcivetweb-dev libssl-dev)
case "${1:-run}" in
  run) pkgs=("${build[@]}") ;;
  test) pkgs=("${build[@]}" valgrind json-schema-test-suite chromium openssl) ;;
  bench) pkgs=("${build[@]}" wrk) ;;
  *) echo "usage: $0 {run|test|bench}" >&2; exit 2 ;;
esac
# Node.js: any recent one on PATH will do (the tests need >= 18).
if [ "${1:-run}" != run ] && ! command -v node >/dev/null 2>&1; then pkgs+=(nodejs npm); fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "Missing Debian packages. Install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
