#!/usr/bin/env python3
"""bundle.py — a bundle of `luamcp pack` runs on a bare Debian (ctest deploy.bundle).

  bundle.py SOURCE_DIR BUILD_DIR LUAMCP_BINARY

Packs tests/apps/db, checks the manifest with the official `mcpb validate`
(compatibility.platforms exactly ["linux"], the glibc minimum and the
machine in _meta and long_description), unpacks it with `mcpb unpack` into
a Debian 12 minbase root (mmdebstrap, cached in BUILD_DIR/deploy-cache, as
the image test's base: no Lua, libuv, SQLite, civetweb... installed), and
there, through chroot (/proc mounted in a mount namespace), the official client initializes the bundle's luamcp
over stdio and calls a tool; the user_config entry the app declares for
LUAMCP_DATA (what --data says) puts mcp.db where the user chose. The binary without its libraries does not start
in that root: what the bundle carries is what makes it run. Exit 77 (skipped)
when not root (chroot), or without patchelf or a minbase root."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploylib import check, finish, minbase, need_packages, run, skip  # noqa: E402

src, build_dir, binary = (os.path.abspath(a) for a in sys.argv[1:4])
if os.geteuid() != 0:
    skip('not root (chroot)')
if not need_packages('patchelf', 'mmdebstrap'):
    skip('patchelf or mmdebstrap cannot be installed')
tar = minbase(build_dir)
if not tar:
    skip('no Debian minbase root (mmdebstrap failed)')
mcpb = os.path.join(src, 'tests', 'node_modules', '.bin', 'mcpb')
tmp = tempfile.mkdtemp(prefix='luamcp-bundle-')
try:
    out = os.path.join(tmp, 'out')
    # tests/apps/db, with a user_config entry that feeds --data (LUAMCP_DATA)
    app = os.path.join(tmp, 'app')
    shutil.copytree(os.path.join(src, 'tests', 'apps', 'db'), app)
    open(os.path.join(app, 'app.lua'), 'w').write(
        'return { name = "db-test", version = "1.0.0", description = "mcp.db from a bundle.", author = "t",\n'
        '  user_config = { data = { type = "directory", title = "Data folder", required = false,\n'
        '    description = "Where mcp.db is kept", env = "LUAMCP_DATA" } } }\n')
    r = run([binary, 'pack', '--out', out, app])
    check(r.returncode == 0, f'pack: {r.stderr}')
    check('shared libraries: runs on Linux' in r.stdout, f'pack says what it bundled: {r.stdout}')
    bundle = os.path.join(out, 'db-test-1.0.0.mcpb')

    root = os.path.join(tmp, 'root')
    os.makedirs(root)
    with tarfile.open(tar) as t:
        t.extractall(root)
    check(not os.path.exists(os.path.join(root, 'usr/lib/x86_64-linux-gnu/liblua5.4.so.0'))
          and not os.path.exists(os.path.join(root, 'usr/lib/x86_64-linux-gnu/libuv.so.1')),
          'the root is bare: no Lua, no libuv')
    unpacked = os.path.join(root, 'bundle')
    r = run([mcpb, 'unpack', bundle, unpacked])
    check(r.returncode == 0, f'mcpb unpack: {r.stdout}{r.stderr}')
    v = run([mcpb, 'validate', os.path.join(unpacked, 'manifest.json')])
    check(v.returncode == 0, f'mcpb validate: {v.stdout}{v.stderr}')
    m = json.load(open(os.path.join(unpacked, 'manifest.json')))
    check(m['compatibility']['platforms'] == ['linux'], f'platforms: {m["compatibility"]}')
    meta = m.get('_meta', {}).get('luamcp/bundle', {})
    check(meta.get('arch') == os.uname().machine and meta.get('glibc_min', '').startswith('2.'), f'_meta: {meta}')
    check(f'glibc {meta.get("glibc_min")} or newer' in m.get('long_description', ''),
          f'long_description says the glibc: {m.get("long_description")}')
    check(len(meta.get('libraries', [])) == len(os.listdir(os.path.join(unpacked, 'bin', 'lib'))),
          'each library bundled is named')

    def in_root(argv):
        """argv run in the root, with /proc (the loader reads /proc/self/exe for
        $ORIGIN, as on any real host) mounted in a mount namespace of its own:
        gone with the process"""
        return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"', root, *argv]

    # the binary alone does not start there
    os.makedirs(os.path.join(root, 'plain'))
    shutil.copy2(binary, os.path.join(root, 'plain', 'luamcp'))
    r = run(in_root(['/plain/luamcp', '--version']))
    check(r.returncode != 0 and 'error while loading shared libraries' in r.stderr,
          f'the binary without its libraries fails in the bare root: {r.returncode} {r.stderr}')

    # the bundle's, as Claude Desktop would run it (mcp_config), inside the root
    cfg = m['server']['mcp_config']
    argv = [a.replace('${__dirname}', '/bundle') for a in [cfg['command'], *cfg['args']]]
    check(cfg.get('env') == {'LUAMCP_DATA': '${user_config.data}'}, f'user_config feeds LUAMCP_DATA: {cfg}')
    os.makedirs(os.path.join(root, 'data'))
    user_env = {k: v.replace('${user_config.data}', '/data') for k, v in cfg.get('env', {}).items()}
    r = run(['node', os.path.join(src, 'tests', 'deploy', 'mcp_call.mjs'), '--stdio', 'sql',
             json.dumps({'op': 'query', 'sql': "SELECT sqlite_version() AS v"}), '--',
             *in_root(argv)], env=dict(os.environ, HOME='/root', **user_env))
    check(r.returncode == 0, f'the client spoke to the bundle in the bare root: {r.stderr[-1500:]}')
    if r.returncode == 0:
        a = json.loads(r.stdout)
        check(a['server']['name'] == 'db-test' and 'sql' in a['tools'], f'initialize: {a}')
        check('"v"' in a['result']['content'][0]['text'], f'the call answered: {a["result"]}')
        check(os.path.exists(os.path.join(root, 'data', 'db.sqlite')), 'mcp.db is where user_config said (--data)')
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
