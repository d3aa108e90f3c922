#!/usr/bin/env bash
# tests/lua/run.sh FILE.lua — one Lua-level test of the runtime: FILE is the
# only script of a temporary app (tests/lua/lib as its lib/, for
# require "expect"), loaded by `luamcp check`, so its top level runs its
# asserts with `require "mcp"` as scripts get it. Exit 0 when all hold; else
# check's exit 1 and the failed assert's tests/lua/FILE:LINE.
set -u
file=$(realpath "$1")
here=$(dirname "$file")
bin=${LUAMCP_BIN:-$here/../../build/luamcp}
dir=$(mktemp -d "${TMPDIR:-/tmp}/luamcp-lua-XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/scripts"
ln -s "$file" "$dir/scripts/$(basename "$file")"
ln -s "$here/lib" "$dir/lib"
"$bin" check "$dir" >"$dir.out" 2>&1
rc=$?
sed -e "s|$dir/scripts/|tests/lua/|g" -e "s|$dir/lib/|tests/lua/lib/|g" -e "s|$dir|(the test app)|g" "$dir.out"
rm -f "$dir.out"
exit $rc
