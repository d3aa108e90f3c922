// install.test.mjs — make install / make uninstall into a DESTDIR: the
// installed binary serves an app (and finds its TLS shim and annotations
// where it was installed), the man page is a man page (mandoc -T lint, and
// man -l renders it without warnings), uninstall removes every file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { BIN, REPO_ROOT, TEST_TIMEOUT, removeTemp } from './helpers.mjs';

const sh = promisify(execFile);
const opts = { timeout: TEST_TIMEOUT };
const MAN = path.join(REPO_ROOT, 'docs', 'luamcp.1');

function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true }).filter((f) => statSync(path.join(dir, f)).isFile()).sort();
}

test('make install DESTDIR=... PREFIX=/usr, the installed luamcp runs, make uninstall removes it', opts, async () => {
  const dest = await mkdtemp(path.join(tmpdir(), 'luamcp-install-'));
  const make = (target) => sh('make', ['-s', target, `DESTDIR=${dest}`, 'PREFIX=/usr', `BUILD=${path.dirname(BIN)}`],
    { cwd: REPO_ROOT });
  try {
    await make('install');
    const installed = files(dest);
    for (const f of ['usr/bin/luamcp', 'usr/share/luamcp/mcp.d.lua', 'usr/share/luamcp/mcp.test.d.lua', 'usr/share/man/man1/luamcp.1',
      'usr/share/doc/luamcp/README.md', 'usr/share/doc/luamcp/docs/lua-api.md']) assert.ok(installed.includes(f), `${f} in ${installed}`);
    if (existsSync(path.join(path.dirname(BIN), 'libluamcp-tls.so'))) {
      assert.ok(installed.includes('usr/lib/luamcp/libluamcp-tls.so'), 'the TLS shim');
    }
    const luamcp = path.join(dest, 'usr', 'bin', 'luamcp');
    assert.ok(statSync(luamcp).mode & 0o100);
    const v = await sh(luamcp, ['--version']);
    assert.match(v.stdout, /^luamcp \d+\.\d+\.\d+/);
    const check = await sh(luamcp, ['check', REPO_ROOT]);
    assert.match(check.stdout, /ok — 2 tools/);
    const call = await sh(luamcp, ['call', REPO_ROOT, 'suggest_gifts', '{"occasion":"birthday","budget":50}']);
    assert.equal(JSON.parse(call.stdout).structuredContent.gifts.length, 3);
    // the installed binary's scaffold points editors at the installed annotations
    const app = path.join(dest, 'app');
    await sh(luamcp, ['new', app]);
    assert.deepEqual(JSON.parse(readFileSync(path.join(app, '.luarc.json'), 'utf8'))['workspace.library'],
      [path.join(dest, 'usr', 'share', 'luamcp')]);
    const served = await sh(luamcp, ['call', app, 'greet', '{"name":"Ada"}']);
    assert.equal(JSON.parse(served.stdout).content[0].text, 'Hello, Ada!');
    await make('uninstall');
    assert.deepEqual(files(path.join(dest, 'usr')), [], 'uninstall leaves no file');
  } finally {
    await removeTemp(dest);
  }
});

test('the man page: mandoc -T lint finds nothing, man -l renders it without warnings', opts, async () => {
  await sh('mandoc', ['-T', 'lint', MAN]); // exits non-zero on any message
  const r = await sh('man', ['--warnings', '-l', MAN], { env: { ...process.env, MANWIDTH: '80', MAN_KEEP_FORMATTING: '' } });
  assert.equal(r.stderr, '', r.stderr);
  for (const section of ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'COMMANDS', 'OPTIONS', 'EXIT STATUS', 'FILES']) {
    assert.match(r.stdout, new RegExp(`^${section}$`, 'm'), section);
  }
  // every command of luamcp --help has its entry
  for (const cmd of ['serve', 'call', 'read', 'prompt', 'list', 'check', 'new', 'pack', 'help']) {
    assert.match(r.stdout, new RegExp(`^ {7}${cmd}\\b`, 'm'), cmd);
  }
});
