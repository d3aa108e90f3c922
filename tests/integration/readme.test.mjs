// readme.test.mjs — every code example in README.md and docs/*.md is run: each
// ```lua block is loaded into an app of its own by `luamcp check` (and
// README's first one is called), each ```json block parses. The info string says what a Lua block
// is: `lua` a script, `lua app.lua` an app.lua, `lua body` the body of a tool
// handler, `lua handler` the handler field of an mcp.tool{}. The ```sh blocks
// are `make run` / `make test`, which is what runs this.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { BIN as LUAMCP, REPO_ROOT, TEST_TIMEOUT, removeTemp, tempApp } from './helpers.mjs';

const run = promisify(execFile);
const opts = { timeout: TEST_TIMEOUT };
const DOCS = ['README.md', ...(await readdir(path.join(REPO_ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

// [{ info, code, line }] of the fenced blocks (indented ones too)
function blocks(file, text) {
  const out = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const body = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++) body.push(lines[j].slice(indent));
    out.push({ lang: open[2], kind: open[3], code: body.join('\n'), line: i + 1, where: `${file}:${i + 1}` });
    i = j;
  }
  return out;
}

const all = [];
for (const file of DOCS) all.push(...blocks(file, await readFile(path.join(REPO_ROOT, file), 'utf8')));
const lua = all.filter((b) => b.lang === 'lua');

function script(b) {
  const mcp = /require\s*"mcp"/.test(b.code) ? '' : 'local mcp = require "mcp"\n';
  switch (b.kind) {
    case '': return { 'scripts/example.lua': mcp + b.code + '\n' };
    case 'body': return { 'scripts/example.lua': `${mcp}mcp.tool { name = "example", handler = function(args, ctx)\n${b.code}\nend }\n` };
    case 'handler': return { 'scripts/example.lua': `${mcp}mcp.tool { name = "example",\n${b.code}\n}\n` };
    case 'app.lua': return { 'app.lua': b.code + '\n', 'scripts/example.lua': `${mcp}mcp.tool { name = "example", handler = function() return "ok" end }\n` };
    default:
      if (b.kind.startsWith('test ')) return null; // a test file of an app: run by luamcp test below
      throw new Error(`${b.where}: unknown kind of lua block '${b.kind}'`);
  }
}

test('the docs have Lua examples of every kind', () => {
  assert.ok(lua.length >= 10, `found ${lua.length} lua blocks`);
  for (const kind of ['', 'body', 'handler', 'app.lua']) assert.ok(lua.some((b) => b.kind === kind), `a 'lua ${kind}' block`);
});

for (const b of lua.filter((x) => x.kind.startsWith('test '))) {
  // `lua test APPDIR`: a test file of that app (docs/testing.md), which luamcp test passes
  test(`${b.where}: the test of ${b.kind.slice(5)} passes (luamcp test)`, opts, async () => {
    const dir = await tempApp({ [`tests/doc_test.lua`]: b.code + '\n' });
    try {
      await cp(path.join(REPO_ROOT, b.kind.slice(5), 'scripts'), path.join(dir, 'scripts'), { recursive: true });
      const migrations = path.join(REPO_ROOT, b.kind.slice(5), 'migrations');
      if (existsSync(migrations)) await cp(migrations, path.join(dir, 'migrations'), { recursive: true });
      const { stdout } = await run(LUAMCP, ['test', dir]);
      assert.match(stdout, /\n[1-9]\d* passed, 0 failed/);
    } catch (err) {
      throw new Error(`${b.where}: ${err.stdout || ''}${err.stderr || err.message}`);
    } finally {
      await removeTemp(dir);
    }
  });
}

for (const b of lua.filter((x) => !x.kind.startsWith('test '))) {
  test(`${b.where}: the lua${b.kind ? ' ' + b.kind : ''} example loads (luamcp check)`, opts, async () => {
    const dir = await tempApp(script(b));
    try {
      if (/file\s*=\s*"/.test(b.code)) await cp(path.join(REPO_ROOT, 'widgets'), path.join(dir, 'widgets'), { recursive: true });
      const { stdout } = await run(LUAMCP, ['check', dir]);
      assert.match(stdout, /ok/);
    } catch (err) {
      throw new Error(`${b.where}: ${err.stderr || err.message}`);
    } finally {
      await removeTemp(dir);
    }
  });
}

test('the first example answers as README says', opts, async () => {
  assert.ok(lua[0].where.startsWith('README.md:'), 'README.md opens with the greet tool');
  const dir = await tempApp(script(lua[0]));
  try {
    const { stdout } = await run(LUAMCP, ['call', dir, 'greet', '{"name":"Ada"}']);
    assert.deepEqual(JSON.parse(stdout).content, [{ type: 'text', text: 'Hello, Ada!' }]);
  } finally {
    await removeTemp(dir);
  }
});

test('every json example parses', () => {
  const json = all.filter((b) => b.lang === 'json');
  assert.ok(json.length >= 2);
  for (const b of json) assert.doesNotThrow(() => JSON.parse(b.code), b.where);
});

// README's "Ship your app" transcript, pasted in order as a new user would (issue 24
// rough edge 4): each `$ build/luamcp ...` line runs in an empty folder and prints
// exactly the lines under it (the bundle's size aside). `serve` gets an empty stdin.
function words(line) {
  const out = [];
  for (const m of line.matchAll(/'([^']*)'|(\S+)/g)) out.push(m[1] ?? m[2]);
  return out;
}

function sh(argv, cwd) {
  return new Promise((resolve, reject) => {
    // PATH without any luamcp: as on a fresh checkout, before make install
    const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PATH: '/usr/bin:/bin' } });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

test("README's Ship your app transcript runs as printed, pasted in order", opts, async () => {
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const b = all.find((x) => x.where.startsWith('README.md:') && x.code.startsWith('$ build/luamcp new '));
  assert.ok(b, 'README has the transcript, starting with $ build/luamcp new');
  assert.ok(readme.includes(b.code));
  const me = await realpath(LUAMCP);
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-readme-'));
  try {
    const steps = [];
    for (const line of b.code.split('\n')) {
      if (line.startsWith('$ ')) steps.push({ cmd: line.slice(2).replace(/\s{2,}#.*$/, ''), want: [] });
      else steps.at(-1).want.push(line);
    }
    assert.ok(steps.length >= 8, `${steps.length} commands`);
    for (const { cmd, want } of steps) {
      const argv = words(cmd);
      assert.equal(argv[0], 'build/luamcp', `${b.where}: ${cmd}`);
      const r = await sh([LUAMCP, ...argv.slice(1)], dir);
      assert.equal(r.code, 0, `${cmd}: exit ${r.code}: ${r.stderr}`);
      const got = r.stdout.replaceAll(me, 'build/luamcp').replace(/\n$/, '').split('\n').filter((l, i, a) => a.length > 1 || l !== '');
      assert.equal(got.length, want.length, `${cmd}: printed\n${r.stdout}`);
      got.forEach((l, i) => {
        // sizes, times and the number of libraries bundled vary: their digits are any digits
        if (/ bytes$| ms\)$| shared libraries: /.test(want[i])) assert.match(l, new RegExp('^' + want[i].replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\d+/g, '\\d+') + '$'), cmd);
        else if (want[i].startsWith('{')) assert.deepEqual(JSON.parse(l), JSON.parse(want[i]), cmd); // key order is Lua's
        else assert.equal(l, want[i], `${cmd}: line ${i + 1}`);
      });
    }
  } finally {
    await removeTemp(dir);
  }
});
