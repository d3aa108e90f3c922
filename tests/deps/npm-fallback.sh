#!/usr/bin/env bash
# deps.npm_fallback: when npm does not run (missing, or half-removed and
# crashing), `tools/install-deps.sh npm` provides the npm pinned in
# tests/package.json, checked against its pinned sha512, and tools/npm runs it
# (also for package scripts that call `npm`). Everything goes to a temporary
# folder; LUAMCP_NPM_CACHE (ctest: a folder of the build tree) keeps the
# tarball between runs, so only the first run downloads it. Exit 77 (skipped):
# no curl, which install-deps.sh would otherwise go and apt-get.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
command -v curl >/dev/null || { echo "no curl: skipped"; exit 77; }

pin=$(node -p 'require(process.argv[1]).packageManager' "$root/tests/package.json")
[[ $pin =~ ^npm@([0-9.]+)\+sha512\.([0-9a-f]+)$ ]] || fail "packageManager: $pin"
ver=${BASH_REMATCH[1]} sha=${BASH_REMATCH[2]}
cache=${LUAMCP_NPM_CACHE:-$tmp/cache}
# the system npm, while it can still be seen (it may be the broken one)
sys_ver=$(npm --version 2>/dev/null || true)
sys_reg=$(npm config get registry 2>/dev/null || true)

# a PATH with every command of this one (the first of each name) but npm,
# npx and corepack: one ln per folder
mkdir "$tmp/bin" "$tmp/broken"
declare -A seen=([npm]=1 [npx]=1 [corepack]=1)
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  links=()
  for f in "$d"/*; do
    n=${f##*/}
    if [ -x "$f" ] && [ -z "${seen[$n]:-}" ]; then seen[$n]=1 links+=("$f"); fi
  done
  [ ${#links[@]} -eq 0 ] || ln -s -t "$tmp/bin" "${links[@]}"
done
nonpm=$tmp/bin
# the one seen: npm there, its files half-removed
cat >"$tmp/broken/npm" <<'EOF'
#!/bin/sh
echo "Error: Cannot find module '/usr/lib/node_modules/npm/lib/cli.js'" >&2
exit 1
EOF
chmod +x "$tmp/broken/npm"

run() { # run PATH DIR CMD... : CMD with that PATH and pinned-npm folder
  local p=$1 d=$2
  shift 2
  env PATH="$p" LUAMCP_NPM_DIR="$d" LUAMCP_NPM_CACHE="$cache" npm_config_cache="$tmp/npm-cache" "$@"
}

step "npm missing from PATH"
! run "$nonpm" "$tmp/a" bash -c 'command -v npm' >/dev/null || fail "npm still on PATH"
run "$nonpm" "$tmp/a" "$root/tools/npm" --version >/dev/null 2>&1 && fail "tools/npm ran before install"
run "$nonpm" "$tmp/a" "$root/tools/install-deps.sh" npm || fail "install-deps.sh npm"
got=$(run "$nonpm" "$tmp/a" "$root/tools/npm" --version) || fail "tools/npm --version"
[ "$got" = "$ver" ] || fail "tools/npm --version: '$got', pinned $ver"
reg=$(run "$nonpm" "$tmp/a" "$root/tools/npm" config get registry) || fail "config get registry"
[ -z "$sys_ver" ] || [ "$reg" = "$sys_reg" ] || fail "registry '$reg', the system npm says '$sys_reg'"
# npm ci against the tests' lock file (a dry run: nothing is fetched)
mkdir "$tmp/proj" && cp "$root/tests/package.json" "$root/tests/package-lock.json" "$tmp/proj/"
out=$(cd "$tmp/proj" && run "$nonpm" "$tmp/a" "$root/tools/npm" ci --dry-run --no-audit --no-fund 2>&1) ||
  { echo "$out"; fail "npm ci --dry-run"; }
grep -q '^add @modelcontextprotocol/sdk ' <<<"$out" || { echo "$out"; fail "npm ci --dry-run: no sdk"; }
# a package script's `npm` (the tests' `node` package runs `npm install`)
mkdir "$tmp/script" && echo '{"scripts":{"v":"npm --version"}}' >"$tmp/script/package.json"
got=$(cd "$tmp/script" && run "$nonpm" "$tmp/a" "$root/tools/npm" run --silent v) || fail "npm run"
[ "$got" = "$ver" ] || fail "npm in a package script: '$got'"
# the registry agrees with the pin, and the pinned npm reaches it
integ=$(run "$nonpm" "$tmp/a" "$root/tools/npm" view "npm@$ver" dist.integrity) || fail "npm view"
[ "$integ" = "sha512-$(node -p 'Buffer.from(process.argv[1], "hex").toString("base64")' "$sha")" ] || fail "registry integrity $integ"

step "npm there but broken"
run "$tmp/broken:$nonpm" "$tmp/b" "$root/tools/install-deps.sh" npm || fail "install-deps.sh npm"
got=$(run "$tmp/broken:$nonpm" "$tmp/b" "$root/tools/npm" --version) || fail "tools/npm --version"
[ "$got" = "$ver" ] || fail "tools/npm --version: '$got'"
out=$(run "$tmp/broken:$nonpm" "$tmp/b" "$root/tools/install-deps.sh" npm) || fail "again"
[ -z "$out" ] || fail "a second install-deps.sh npm did more than check: $out"

step "the registry of an npmrc, and a tarball that is not the pinned one"
mkdir -p "$tmp/reg/npm/-" "$tmp/bad/npm/-"
cp "$cache/npm-$ver.tgz" "$tmp/reg/npm/-/"
echo "registry=file://\${LUAMCP_TEST_REG}/" >"$tmp/npmrc"
LUAMCP_TEST_REG=$tmp/reg NPM_CONFIG_USERCONFIG=$tmp/npmrc LUAMCP_NPM_CACHE=$tmp/c1 \
  env PATH="$nonpm" LUAMCP_NPM_DIR="$tmp/c" "$root/tools/install-deps.sh" npm || fail "from the npmrc's registry"
[ "$(env PATH="$nonpm" LUAMCP_NPM_DIR="$tmp/c" "$root/tools/npm" --version)" = "$ver" ] || fail "npm from there"
head -c 100000 /dev/urandom >"$tmp/bad/npm/-/npm-$ver.tgz"
if NPM_CONFIG_REGISTRY=file://$tmp/bad/ LUAMCP_NPM_CACHE=$tmp/c2 \
  env PATH="$nonpm" LUAMCP_NPM_DIR="$tmp/d" "$root/tools/install-deps.sh" npm 2>"$tmp/err"; then
  fail "a tarball with another sha512 was used"
fi
grep -q 'sha512 differs' "$tmp/err" || { cat "$tmp/err"; fail "no sha512 message"; }
if [ -e "$tmp/d" ] || [ -e "$tmp/c2/npm-$ver.tgz" ]; then fail "the bad tarball left something behind"; fi

if [ -n "$sys_ver" ]; then
  step "npm runs: tools/npm is the system's"
  [ "$(LUAMCP_NPM_DIR="$tmp/a" "$root/tools/npm" --version)" = "$sys_ver" ] || fail "not the system npm"
  out=$("$root/tools/install-deps.sh" npm) || fail "install-deps.sh npm with a working npm"
  [ -z "$out" ] || fail "provided an npm although one runs: $out"
fi
echo "ok"
