// sandbox.test.mjs — `--sandbox` (core/vm/sandbox.c). Every probe of
// tests/apps/sandbox/scripts/probe.lua is run with and without --sandbox:
// an escape must be refused under it, with "not allowed under --sandbox" at
// the script's line, and must work without it (so a sandbox that breaks, or
// one that refuses too much, fails here); what an app may still do works in
// both. Declared permissions allow exactly what they declare: a program, a
// URL prefix on a local HTTP server (redirects too), a host:port, a variable.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { APPS, TEST_TIMEOUT, removeTemp, run, tempApp, withRaw } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const SOURCE = path.join(APPS, 'sandbox');
const REFUSED = /^refused: \S*probe\.lua:\d+: .*not allowed under --sandbox/s;
// Debian's lua-socket: a C module and a Lua file outside any app folder
const HAVE_LUASOCKET = existsSync('/usr/share/lua/5.4/socket.lua');
const ENV = { ...process.env, LUAMCP_SANDBOX_SECRET: 'hunter2', LUAMCP_SANDBOX_VISIBLE: 'shown' };

// Escapes: refused under --sandbox; without it, what they answer.
const ESCAPES = {
  os_execute: /^ok: true$/,
  io_popen: /^ok: popen-ran\n$/,
  package_loaded_io_popen: /^ok: popen-ran\n$/,
  g_os_execute: /^ok: true$/,
  loadlib: /^ok: true$/,
  require_c_module: HAVE_LUASOCKET ? /^ok: table$/ : null,
  require_system_module: HAVE_LUASOCKET ? /^ok: table$/ : null,
  debug_getinfo: /^ok: \S*probe\.lua$/,
  debug_getupvalue: /^ok: \S+$/,
  debug_getregistry: /^ok: table$/,
  loaded_debug: /^ok: string$/,
  string_dump: /^ok: \d+$/,
  string_meta_dump: /^ok: \d+$/,
  open_absolute: /^ok: SECRET-OUTSIDE\n$/,
  open_dotdot: /^ok: SECRET-OUTSIDE\n$/,
  open_symlink: /^ok: SECRET-OUTSIDE\n$/,
  write_app_lua: /^ok: true$/,
  write_script: /^ok: true$/,
  write_data_symlink_dir: /^ok: true$/,
  write_data_dangling: /^ok: true$/,
  lines_outside: /^ok: SECRET-OUTSIDE$/,
  input_outside: /^ok: SECRET-OUTSIDE$/,
  output_outside: /^ok: true$/,
  remove_outside: /^ok: true$/,
  rename_outside: /^ok: true$/,
  tmpname: /^ok: string$/,
  tmpfile: /^ok: file$/,
  loadfile_outside: /^ok: evil-ran$/,
  dofile_outside: /^ok: evil-ran$/,
  require_outside: /^ok: evil-ran$/,
  require_symlink: /^ok: evil-ran$/,
  getenv_secret: /^ok: hunter2$/,
  setlocale: /^ok: C$/,
  exec_undeclared: /^ok: ran\n$/,
  exec_by_path: /^ok: 0$/,
  exec_ld_preload: /^ok: 0$/,
  exec_cwd_outside: /^ok: 0$/,
  http_undeclared: /^ok: 200 other$/,
  http_redirect_out: /^ok: 200 other$/,
  http_dotdot: /^ok: 200 other$/,
  http_userinfo: /^ok: 200 other-host$/,
  socket_undeclared: /^ok: true$/,
  socket_unix_undeclared: /^ok: nil$/, // connects to nothing: nil, "no such file"
};
// Refused under --sandbox, never run without it (it would end the server).
const SANDBOX_ONLY = ['os_exit'];
// What an app may still do: the same answer in both modes.
const ALLOWED = {
  debug_traceback: /^ok: tb\nstack traceback:$/,
  open_inside: /^ok: true$/,
  open_missing_inside: /^ok: \S*no-such-file: No such file or directory$/,
  write_data: /^ok: noted$/,
  remove_data: /^ok: true$/,
  require_inside: /^ok: 42$/,
  searchpath_inside: /^ok: lib\/helper\.lua$/,
  setvbuf: /^ok: true$/,
  getenv_declared: /^ok: shown$/,
  os_time: /^ok: integer$/,
  exec_declared: /^ok: 0$/,
  exec_cwd_inside: /^ok: 0$/,
  http_declared: /^ok: 200 hello$/,
  http_redirect_in: /^ok: 200 hello$/,
  socket_declared: /^ok: true$/,
};
// Differ in a way that is not an error.
const DIFFERENT = {
  c_searcher: { sandbox: /^ok: nil nil$/, plain: /^ok: function function$/ },
  // a file outside is "not found" under --sandbox (no oracle), found without it
  searchpath_outside: { sandbox: /^ok: nil$/, plain: /^ok: \S*outside\/secret\.txt$/ },
  exec_child_env: { sandbox: /^ok: no-secret visible path$/, plain: /^ok: secret visible path$/ },
};

let root, app, outside, servers = [], port, port2;

function listen(handler) {
  const srv = http.createServer(handler);
  servers.push(srv);
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv.address().port)));
}

before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'luamcp-sandbox-'));
  app = path.join(root, 'app');
  outside = path.join(root, 'outside');
  port = await listen((req, res) => {
    const routes = {
      '/allowed/hello': [200, 'hello'],
      '/allowed/redirect': [302, '', '/other'],
      '/allowed/redirect-in': [302, '', '/allowed/hello'],
      '/other': [200, 'other'],
    };
    const [status, body, location] = routes[req.url] ?? [404, 'no route ' + req.url];
    res.writeHead(status, location ? { location } : {});
    res.end(body);
  });
  port2 = await listen((req, res) => res.end('other-host'));
  await cp(SOURCE, app, { recursive: true });
  await mkdir(path.join(app, 'data'));
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'SECRET-OUTSIDE\n');
  await writeFile(path.join(outside, 'evil.lua'), 'return "evil-ran"\n');
  await writeFile(path.join(outside, 'victim.txt'), 'remove me\n');
  await writeFile(path.join(outside, 'movable.txt'), 'move me\n');
  await symlink('../outside/secret.txt', path.join(app, 'link-out.txt'));
  await symlink('../../outside/evil.lua', path.join(app, 'lib', 'escape.lua'));
  await symlink('../../outside', path.join(app, 'data', 'out'));
  await symlink('../../outside/created-by-dangling.txt', path.join(app, 'data', 'dangling'));
  await writeFile(path.join(app, 'app.lua'), `return { name = "sandbox-probe", permissions = {
  exec = { "date", "env" },
  http = { "http://127.0.0.1:${port}/allowed/" },
  socket = { "127.0.0.1:${port}" },
  env = { "LUAMCP_SANDBOX_VISIBLE" },
} }
`);
});

after(async () => {
  for (const s of servers) s.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const probe = (srv, id, name) =>
  srv.call(id, 'tools/call', { name: 'probe', arguments: { name, outside, port, port2 } }).then((r) => {
    assert.ok(r.result && !r.result.isError, `probe ${name}: ${JSON.stringify(r)}`);
    return r.result.content[0].text;
  });

test('every probe of probe.lua has its expectation here', opts, () =>
  withRaw(['--no-watch', app], async (srv) => {
    await srv.initialize();
    const r = await srv.call(2, 'tools/call', { name: 'probes', arguments: {} });
    const names = r.result.content[0].text.split(' ').sort();
    const known = [...Object.keys(ESCAPES), ...SANDBOX_ONLY, ...Object.keys(ALLOWED), ...Object.keys(DIFFERENT)].sort();
    assert.deepEqual(names, known);
  }, { env: ENV }));

// --sandbox first: what it refused is still there for the plain run
test('under --sandbox every escape is refused at the script line, and the rest still works', opts, () =>
  withRaw(['--sandbox', '--no-watch', app], async (srv) => {
    await srv.initialize();
    let id = 10;
    for (const name of [...Object.keys(ESCAPES), ...SANDBOX_ONLY]) {
      assert.match(await probe(srv, id++, name), REFUSED, `probe ${name}`);
    }
    for (const [name, want] of Object.entries(ALLOWED)) assert.match(await probe(srv, id++, name), want, `probe ${name}`);
    for (const [name, want] of Object.entries(DIFFERENT)) assert.match(await probe(srv, id++, name), want.sandbox, `probe ${name}`);
    // nothing outside was touched
    for (const f of ['victim.txt', 'movable.txt']) assert.ok(existsSync(path.join(outside, f)), f);
    for (const f of ['new.txt', 'created-by-dangling.txt', 'written.txt']) assert.ok(!existsSync(path.join(outside, f)), f);
    assert.ok(!existsSync(path.join(app, 'scripts', 'new.lua')));
    assert.match(readFileSync(path.join(app, 'data', 'note.txt'), 'utf8'), /^noted$/);
    assert.match(srv.stderr, /sandboxed/);
  }, { env: ENV }));

test('without --sandbox the same escapes work (the sandbox is what refuses them)', opts, () =>
  withRaw(['--no-watch', app], async (srv) => {
    await srv.initialize();
    let id = 10;
    for (const [name, want] of Object.entries(ESCAPES)) {
      if (want) assert.match(await probe(srv, id++, name), want, `probe ${name}`);
    }
    for (const [name, want] of Object.entries(ALLOWED)) assert.match(await probe(srv, id++, name), want, `probe ${name}`);
    for (const [name, want] of Object.entries(DIFFERENT)) assert.match(await probe(srv, id++, name), want.plain, `probe ${name}`);
    for (const f of ['new.txt', 'created-by-dangling.txt', 'written.txt']) assert.ok(existsSync(path.join(outside, f)), f);
    assert.ok(!existsSync(path.join(outside, 'victim.txt')));
  }, { env: ENV }));

test('the refusals name what is missing: the program, the URL, the host:port, the variable', opts, () =>
  withRaw(['--sandbox', '--no-watch', app], async (srv) => {
    await srv.initialize();
    assert.match(await probe(srv, 2, 'exec_undeclared'), /mcp\.exec: running 'echo' is not allowed under --sandbox: app\.lua's permissions\.exec does not list it/);
    assert.match(await probe(srv, 3, 'http_undeclared'), new RegExp(`mcp\\.http: http://127\\.0\\.0\\.1:${port}/other is not allowed under --sandbox: no prefix in app\\.lua's permissions\\.http`));
    assert.match(await probe(srv, 4, 'http_redirect_out'), new RegExp(`the redirect to http://127\\.0\\.0\\.1:${port}/other is not allowed under --sandbox`));
    assert.match(await probe(srv, 5, 'socket_undeclared'), new RegExp(`connecting to 127\\.0\\.0\\.1:${port2} is not allowed under --sandbox: app\\.lua's permissions\\.socket`));
    assert.match(await probe(srv, 6, 'getenv_secret'), /os\.getenv\('LUAMCP_SANDBOX_SECRET'\) is not allowed under --sandbox: app\.lua's permissions\.env/);
    assert.match(await probe(srv, 7, 'exec_ld_preload'), /setting LD_PRELOAD is not allowed under --sandbox/);
    assert.match(await probe(srv, 8, 'write_app_lua'), /may be written only inside the app's data\/ folder/);
    assert.match(await probe(srv, 9, 'require_c_module'), /module 'socket\.core' not found:.*C modules and files outside the app folder are not allowed under --sandbox/s);
  }, { env: ENV }));

test('luamcp call --sandbox runs the tool sandboxed too', opts, async () => {
  const args = (name) => JSON.stringify({ name, outside, port, port2 });
  const refused = await run(['call', '--sandbox', app, 'probe', args('os_execute')]);
  assert.equal(refused.code, 0, refused.stderr);
  assert.match(JSON.parse(refused.stdout).content[0].text, REFUSED);
  const allowed = await run(['call', '--sandbox', app, 'probe', args('require_inside')]);
  assert.equal(JSON.parse(allowed.stdout).content[0].text, 'ok: 42');
});

test('--sandbox with --allow-bytecode is refused with the reason (exit 2)', opts, async () => {
  for (const cmd of ['serve', 'check']) {
    const r = await run([cmd, '--sandbox', '--allow-bytecode', app]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--allow-bytecode cannot be used with --sandbox: Lua does not verify bytecode/);
  }
});

test('check --sandbox runs app.lua and the scripts sandboxed: an escape at load time is a load error', opts, async () => {
  const dir = await tempApp({
    'app.lua': 'os.execute("true")\nreturn { name = "x" }\n',
    'scripts/t.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", handler = function() return "t" end }\n',
  });
  try {
    const plain = await run(['check', dir]);
    assert.equal(plain.code, 0, plain.stderr);
    const sandboxed = await run(['check', '--sandbox', dir]);
    assert.equal(sandboxed.code, 1, sandboxed.stdout);
    assert.match(sandboxed.stderr, /app\.lua:1: os\.execute is not allowed under --sandbox/);
  } finally {
    await removeTemp(dir);
  }
});

test('a malformed permissions table is a load error naming app.lua, with or without --sandbox', opts, async () => {
  const cases = [
    ['{ exec = "git" }', /permissions\.exec must be a list of strings/],
    ['{ htp = {} }', /permissions: unknown field 'htp'/],
    ['{ http = { "ftp://example.com/" } }', /permissions\.http\[1\] 'ftp:\/\/example\.com\/': not an http:\/\/ or https:\/\/ URL prefix/],
    ['{ socket = { "127.0.0.1" } }', /permissions\.socket\[1\] '127\.0\.0\.1': not host:port/],
    ['{ env = { "" } }', /permissions\.env\[1\] must be a non-empty string/],
    ['"all"', /permissions must be a table/],
  ];
  for (const [perm, want] of cases) {
    const dir = await tempApp({
      'app.lua': `return { name = "x", permissions = ${perm} }\n`,
      'scripts/t.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", handler = function() return "t" end }\n',
    });
    try {
      for (const extra of [[], ['--sandbox']]) {
        const r = await run(['check', ...extra, dir]);
        assert.equal(r.code, 1, `${perm} ${extra}: ${r.stdout}`);
        assert.match(r.stderr, /app\.lua: /);
        assert.match(r.stderr, want);
      }
    } finally {
      await removeTemp(dir);
    }
  }
});

test('a data/ that is a symlink out of the app folder allows no writes', opts, async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'luamcp-sandbox-out-'));
  const dir = await tempApp({
    'scripts/t.lua': [
      'local mcp = require "mcp"',
      'mcp.tool { name = "t", handler = function()',
      '  local ok, err = pcall(function() return io.open(mcp.path.app("data/x.txt"), "w") end)',
      '  return tostring(ok) .. " " .. tostring(err)',
      'end }',
    ].join('\n'),
  });
  try {
    await symlink(out, path.join(dir, 'data'));
    const r = await run(['call', '--sandbox', dir, 't']);
    assert.match(JSON.parse(r.stdout).content[0].text, /^false .*t\.lua:3: .*not allowed under --sandbox: files may be written only inside the app's data\/ folder .*there is none/);
    assert.ok(!existsSync(path.join(out, 'x.txt')));
  } finally {
    await removeTemp(dir);
    await removeTemp(out);
  }
});

test('a hot reload is sandboxed too (the new version of a script runs under the same rules)', opts, async () => {
  const script = (word) => [
    'local mcp = require "mcp"',
    'mcp.tool { name = "t", handler = function()',
    `  local ok, err = pcall(function() return os.execute("true") end)`,
    `  return "${word} " .. tostring(ok) .. " " .. tostring(err)`,
    'end }',
  ].join('\n');
  const dir = await tempApp({ 'scripts/t.lua': script('first') });
  try {
    await withRaw(['--sandbox', dir], async (srv) => {
      await srv.initialize();
      const call = async (id) => (await srv.call(id, 'tools/call', { name: 't', arguments: {} })).result.content[0].text;
      assert.match(await call(2), /^first false .*not allowed under --sandbox/);
      await writeFile(path.join(dir, 'scripts', 't.lua'), script('second'));
      let text = '';
      for (let id = 3; id < 200 && !text.startsWith('second'); id++) {
        text = await call(id);
        if (!text.startsWith('second')) await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(text, /^second false .*t\.lua:3: os\.execute is not allowed under --sandbox/);
      assert.match(srv.stderr, /reloaded/);
    });
  } finally {
    await removeTemp(dir);
  }
});
