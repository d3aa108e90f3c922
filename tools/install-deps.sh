#!/usr/bin/env bash
# install-deps.sh {run|test|bench|npm} — install the Debian packages a target
# needs (when root), or print the exact apt-get line to run (when not). For
# test and bench, also make sure an npm runs (npm: only that step).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

build=(cmake make gcc pkg-config liblua5.4-dev lua-cjson-dev libcivetweb-dev libssl-dev libuv1-dev nettle-dev libpcre2-dev
       libcurl4-openssl-dev libzip-dev libhiredis-dev libsqlite3-dev libpq-dev ca-certificates
       patchelf)  # patchelf: luamcp pack bundles the shared libraries
mode=${1:-run}
case "$mode" in
  run) pkgs=("${build[@]}") ;;
  test) pkgs=("${build[@]}" valgrind json-schema-test-suite chromium openssl redis-server nginx-light lua-redis python3 prometheus libxml2-utils
        postgresql
        clang-14 libclang-rt-14-dev mandoc man-db systemd mmdebstrap) ;;
  bench) pkgs=("${build[@]}" wrk redis-server nginx-light python3 postgresql) ;;
  npm) pkgs=() ;;
  *) echo "usage: $0 {run|test|bench|npm}" >&2; exit 2 ;;
esac

# Node.js: any recent one on PATH will do (the tests need >= 20). npm must
# *run*, not just be there: seen, a nodesource Node 20 whose npm was
# half-removed by an interrupted self-update. Debian's npm conflicts with that
# nodejs, so then the npm pinned in tests/package.json goes to .tools/npm
# (provide_npm below), and tools/npm — which the Makefile calls — runs it.
need_npm=0
if [ "$mode" != run ]; then
  if ! command -v node >/dev/null 2>&1; then
    pkgs+=(nodejs npm)
  elif ! npm --version >/dev/null 2>&1; then
    need_npm=1
    command -v curl >/dev/null 2>&1 || pkgs+=(curl ca-certificates)
  fi
fi

# The pinned npm, fetched from the configured registry with curl (which keeps
# to the proxy environment and the system's CA store) and checked against the
# sha512 pinned in the repository, not against what the registry says.
# Corepack could run the same pin, but only with its signature check turned
# off on a mirror whose metadata carries no signatures, and it is on its way
# out of Node; a tarball and a hash need nothing but curl and tar.
# The pin is the npm that writes tests/package-lock.json here (npm 11: Node
# ^20.17 or >= 22.9). Nothing outside the checkout is written
# (LUAMCP_NPM_DIR, LUAMCP_NPM_CACHE move it: tests/deps/npm-fallback.sh puts
# both in temporary folders).
provide_npm() {
  local pin ver sha dir cache tgz tmp url cafile proxy reg
  pin=$(node -p 'require(process.argv[1]).packageManager || ""' "$root/tests/package.json")
  if ! [[ $pin =~ ^npm@([0-9]+\.[0-9]+\.[0-9]+)\+sha512\.([0-9a-f]{128})$ ]]; then
    echo "tests/package.json: packageManager is '$pin', not npm@X.Y.Z+sha512.<hex>" >&2
    return 1
  fi
  ver=${BASH_REMATCH[1]} sha=${BASH_REMATCH[2]}
  dir=${LUAMCP_NPM_DIR:-$root/.tools/npm}
  cache=${LUAMCP_NPM_CACHE:-$root/.tools/cache}
  if [ -x "$dir/shim/npm" ] && [ "$(node "$dir/bin/npm-cli.js" --version 2>/dev/null)" = "$ver" ]; then
    return 0
  fi
  echo "npm does not run: providing npm $ver in $dir"
  tgz=$cache/npm-$ver.tgz
  mkdir -p "$cache" "$(dirname "$dir")"
  if ! [ -f "$tgz" ] || [ "$(sha512sum <"$tgz" | cut -d' ' -f1)" != "$sha" ]; then
    local cfg conf
    cfg=$(npm_config) || { echo "could not read npm's configuration" >&2; return 1; }
    mapfile -t conf <<<"$cfg"
    reg=${conf[0]} cafile=${conf[1]:-} proxy=${conf[2]:-}
    url=${reg%/}/npm/-/npm-$ver.tgz
    local opts=(-fsSL --retry 2 --connect-timeout 20)
    [ -z "$cafile" ] || opts+=(--cacert "$cafile")
    [ -z "$proxy" ] || opts+=(--proxy "$proxy")
    curl "${opts[@]}" -o "$tgz.$$" "$url" || { rm -f "$tgz.$$"; echo "could not fetch $url" >&2; return 1; }
    if [ "$(sha512sum <"$tgz.$$" | cut -d' ' -f1)" != "$sha" ]; then
      rm -f "$tgz.$$"
      echo "$url: sha512 differs from the one tests/package.json pins: not used" >&2
      return 1
    fi
    mv -f "$tgz.$$" "$tgz"
  fi
  tmp=$(mktemp -d "$dir.XXXXXX")
  tar -xzf "$tgz" -C "$tmp" --strip-components=1 --no-same-owner || { rm -rf "$tmp"; return 1; }
  # npm puts no npm of its own on the PATH of package scripts, and the tests'
  # `node` package runs `npm install` in one: these shims are that npm (npm's
  # own bin/npm would go back to the npm beside node, the broken one).
  mkdir "$tmp/shim"
  for cmd in npm npx; do
    # shellcheck disable=SC2016 # $0 and $@ are the shim's
    printf '#!/bin/sh\nexec node "$(dirname "$0")/../bin/%s-cli.js" "$@"\n' "$cmd" >"$tmp/shim/$cmd"
    chmod +x "$tmp/shim/$cmd"
  done
  if [ "$(node "$tmp/bin/npm-cli.js" --version)" != "$ver" ]; then
    rm -rf "$tmp"; echo "the npm $ver tarball does not run" >&2; return 1
  fi
  rm -rf "$dir"
  mv -T "$tmp" "$dir"
}

# registry, cafile and proxy for the registry, as npm would read them (its
# environment, then the tests' .npmrc, the user's, the global one), one a
# line; the registry defaults to npm's documented default.
npm_config() {
  node - "$root/tests" <<'JS'
const fs = require('fs'), path = require('path'), os = require('os');
const conf = {};
const set = (k, v) => { if (!(k in conf)) conf[k] = v; };
for (const [k, v] of Object.entries(process.env))
  if (/^npm_config_/i.test(k)) set(k.slice(11).replace(/(?!^)_/g, '-').toLowerCase(), v);
const read = (file) => {
  let text;
  try { text = fs.readFileSync(file, 'utf8'); } catch { return; }
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*([^=;#\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    let v = m[2].replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
    v = v.replace(/\$\{([^${}?]+)\??\}/g, (_, n) => process.env[n] ?? '');
    set(m[1], v);
  }
};
const prefix = conf.prefix || path.dirname(path.dirname(process.execPath));
read(path.join(process.argv[2], '.npmrc'));
read(conf.userconfig || path.join(os.homedir(), '.npmrc'));
read(conf.globalconfig || path.join(prefix, 'etc', 'npmrc'));
read(path.join(prefix, 'lib', 'node_modules', 'npm', 'npmrc'));
read('/etc/npmrc');
const reg = conf.registry || 'https://registry.npmjs.org/';
const proxy = reg.startsWith('https:') ? conf['https-proxy'] || conf.proxy : conf.proxy;
for (const v of [reg, conf.cafile, proxy]) console.log(!v || v === 'null' ? '' : v);
JS
}

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "Missing Debian packages. Install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "Installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# not in a || list: that would turn set -e off inside provide_npm
if [ $need_npm -eq 1 ]; then provide_npm; fi
