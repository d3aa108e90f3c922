// wedge.test.mjs — one client argument, or a coroutine made while the app
// loads, must not hold the server in a loop no limit ends (the hardening
// issue's items 3 and 4): string.rep and table.move with a client's numbers,
// coroutines made at load time resumed from handlers (also under --sandbox),
// and, for what nothing in-process can stop (a __gc finalizer that never
// returns), the server exits with the script line instead of ignoring
// SIGTERM forever. Nor a script that loops at its top level (issue 33, item
// 2): its load ends at --load-timeout, at its line; a reload loads on a
// thread of its own, so the last good version answers meanwhile; SIGTERM
// ends a load at once, the first one included.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { spawn } from 'node:child_process';

import { APPS, RawServer, TEST_TIMEOUT, WAIT, command, ms, removeTemp, run, tempApp, within, withRaw } from './helpers.mjs';
import { until } from './services.mjs';

const APP = path.join(APPS, 'wedge');
const opts = { timeout: TEST_TIMEOUT };
const source = readFileSync(path.join(APP, 'scripts', 'wedge.lua'), 'utf8').split('\n');
const lineOf = (mark) => source.findIndex((l) => l.includes(mark)) + 1;
const textOf = (r) => r.result?.content?.[0]?.text;
const TIMEOUT = ['--timeout', String(ms(1000) / 1000)];

// the call ends in a timeout at the line given, and the server answers the next call
async function timesOut(srv, id, name, args, mark) {
  const r = await srv.call(id, 'tools/call', { name, arguments: args });
  assert.equal(r.result?.isError, true, JSON.stringify(r));
  assert.match(textOf(r), new RegExp(`wedge\\.lua:${lineOf(mark)}: call timed out after`));
  assert.equal(textOf(await srv.call(id + 1000, 'tools/call', { name: 'ok', arguments: {} })), 'ok');
}

test('string.rep and table.move with a client\'s numbers: empty pads are instant, huge slices time out', opts, () =>
  withRaw([...TIMEOUT, APP], async (srv) => {
    await srv.initialize();
    const pad = await srv.call(2, 'tools/call', { name: 'pad', arguments: { text: 'ab', fill: '', width: 2 ** 62 } });
    assert.equal(textOf(pad), 'ab');
    const big = await srv.call(3, 'tools/call', { name: 'pad', arguments: { text: 'ab', fill: 'x', width: 2 ** 40 } });
    assert.match(textOf(big), /resulting string too large/);
    await timesOut(srv, 4, 'slice', { first: 1, last: 2 ** 62 }, 'SLICE LINE');
  }));

test('a client\'s cancel ends table.move in C as it ends Lua code', opts, () =>
  withRaw([APP], async (srv) => {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slice', arguments: { first: 1, last: 2 ** 62 } } });
    await delay(ms(300));
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
    assert.equal(textOf(await srv.call(3, 'tools/call', { name: 'ok', arguments: {} })), 'ok');
    assert.ok(!srv.lines.some((l) => JSON.parse(l).id === 2), 'no answer for the cancelled call');
  }));

for (const sandbox of [false, true]) {
  test(`coroutines made while the app loaded run under the call's limits${sandbox ? ' (--sandbox)' : ''}`, opts, () =>
    withRaw([...TIMEOUT, ...(sandbox ? ['--sandbox'] : []), APP], async (srv) => {
      await srv.initialize();
      // resume: the coroutine stops, then the handler (its next instruction)
      const r = await srv.call(2, 'tools/call', { name: 'load_coroutine', arguments: { how: 'resume' } });
      assert.equal(r.result?.isError, true, JSON.stringify(r));
      assert.match(textOf(r), /call timed out after/);
      // wrap: the error is raised where the wrap function was called
      await timesOut(srv, 3, 'load_coroutine', { how: 'wrap' }, 'WRAP CALL');
      const c = await srv.call(4, 'tools/call', { name: 'load_coroutine', arguments: { how: 'close' } });
      assert.match(textOf(c), /call timed out after/);
      // its __close loops: coroutine.close must not run it unbounded
      const closed = await srv.call(5, 'tools/call', { name: 'close_stopped', arguments: {} });
      assert.equal(textOf(closed), 'false the coroutine was stopped by a call\'s time limit or cancel: its <close> variables are not run');
    }));
}

test('stuck where nothing in-process can stop it: SIGTERM still ends the server, naming the line', opts, async () => {
  const srv = new RawServer(['--shutdown-grace', '0.5', APP]);
  try {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'gc_stuck', arguments: {} } });
    await delay(ms(300));
    const t0 = Date.now();
    srv.child.kill('SIGTERM');
    const exit = await within(srv.exited, ms(8000), 'the exit after SIGTERM');
    assert.equal(exit.code, 75, srv.stderr);
    assert.ok(Date.now() - t0 >= 1000, 'the grace and a second after it first');
    assert.match(srv.stderr, new RegExp(`stuck at .*wedge\\.lua:${lineOf('GC STUCK')}, past --shutdown-grace after the signal to stop; exiting \\(status 75\\)`));
  } finally {
    srv.child.kill('SIGKILL');
  }
});

test('stuck past its --timeout and a further --shutdown-grace: the server exits by itself, naming the line', opts, async () => {
  const srv = new RawServer([...TIMEOUT, '--shutdown-grace', '0.5', APP]);
  try {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'gc_stuck', arguments: {} } });
    const exit = await within(srv.exited, ms(8000), 'the exit of the stuck server');
    assert.equal(exit.code, 75, srv.stderr);
    assert.match(srv.stderr, new RegExp(`stuck at .*wedge\\.lua:${lineOf('GC STUCK')}, in code no time limit can stop`));
  } finally {
    srv.child.kill('SIGKILL');
  }
});

test('a second SIGTERM exits at once, without waiting for the calls in flight', opts, async () => {
  const srv = new RawServer([APP]);
  try {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slice', arguments: { first: 1, last: 2 ** 62 } } });
    await delay(ms(300));
    srv.child.kill('SIGTERM');
    await delay(ms(300));
    assert.equal(srv.child.exitCode, null, 'the first signal waits for the call in flight');
    srv.child.kill('SIGTERM');
    const exit = await within(srv.exited, ms(3000), 'the exit after the second SIGTERM');
    assert.equal(exit.code, 1);
    assert.match(srv.stderr, /Terminated again: exiting now, without the calls in flight/);
  } finally {
    srv.child.kill('SIGKILL');
  }
});

test('Ctrl-C ends a command other than serve even while a script loops (check, list, call)', opts, async () => {
  const dir = await tempApp({ 'scripts/loop.lua': 'while true do end\n' });
  try {
    for (const args of [['check', dir], ['list', dir], ['call', dir, 'x', '{}']]) {
      const { command: cmd, args: argv } = command(args);
      const child = spawn(cmd, argv, { stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      try {
        await delay(ms(300));
        child.kill('SIGINT');
        const exit = await within(exited, ms(3000), `the exit of luamcp ${args[0]} after SIGINT`);
        assert.equal(exit.signal, 'SIGINT', `luamcp ${args[0]}: ${JSON.stringify(exit)}`);
      } finally {
        child.kill('SIGKILL'); // a no-op once it has exited
      }
    }
  } finally {
    await removeTemp(dir);
  }
});

const OK_SCRIPT = 'local mcp = require "mcp"\nmcp.tool { name = "ok", description = "ok", handler = function() return "v1" end }\n';
// makes `marker` (the load has begun), then loops at its line 3
const loopingScript = (marker) =>
  `assert(io.open(${JSON.stringify(marker)}, "w")):close()\nlocal n = 0\nwhile true do n = n + 1 end -- LOOP\n`;

test('a reload whose script loops at its top level ends at --load-timeout, at its line; the last good version keeps serving', opts, async () => {
  const dir = await tempApp({ 'scripts/ok.lua': OK_SCRIPT });
  try {
    await withRaw(['--load-timeout', String(ms(1000) / 1000), dir], async (srv) => {
      await srv.initialize();
      assert.equal(textOf(await srv.call(2, 'tools/call', { name: 'ok', arguments: {} })), 'v1');
      await writeFile(path.join(dir, 'scripts', 'loop.lua'), loopingScript(path.join(dir, 'loading')));
      await until(() => srv.stderr.includes('loading took longer'), 'the report of the stuck reload', ms(8000));
      assert.match(srv.stderr, /loop\.lua:3: loading took longer than --load-timeout \([0-9.]+ s\)/);
      assert.equal(textOf(await srv.call(3, 'tools/call', { name: 'ok', arguments: {} })), 'v1');
    });
  } finally {
    await removeTemp(dir);
  }
});

// issue 33, item 2: the load ran on the engine's loop, under its run lock;
// here its limit is far away (600 s), so whatever answers, answers during it
test('while a reload\'s script loops at its top level, the last good version answers; SIGTERM ends the load and the server at once', opts, async () => {
  const dir = await tempApp({ 'scripts/ok.lua': OK_SCRIPT });
  const marker = path.join(dir, 'loading');
  const srv = new RawServer(['--load-timeout', '600', dir]);
  try {
    await srv.initialize();
    assert.equal(textOf(await srv.call(2, 'tools/call', { name: 'ok', arguments: {} })), 'v1');
    await writeFile(path.join(dir, 'scripts', 'loop.lua'), loopingScript(marker));
    await until(() => existsSync(marker), 'the looping script to begin loading');
    assert.deepEqual((await srv.call(3, 'ping')).result, {});
    assert.equal(textOf(await srv.call(4, 'tools/call', { name: 'ok', arguments: {} })), 'v1');
    srv.child.kill('SIGTERM');
    const exit = await within(srv.exited, WAIT, 'the exit after SIGTERM during the load');
    assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
    assert.doesNotMatch(srv.stderr, /reloaded|reload failed/);
  } finally {
    srv.child.kill('SIGKILL'); // a no-op once it has exited
    await removeTemp(dir);
  }
});

test('a fix saved over a script that loops at its top level loads at once: the looping load stops', opts, async () => {
  const dir = await tempApp({ 'scripts/ok.lua': OK_SCRIPT });
  const marker = path.join(dir, 'loading');
  const file = path.join(dir, 'scripts', 'loop.lua');
  try {
    await withRaw(['--load-timeout', '600', '--log-level', 'info', dir], async (srv) => {
      await srv.initialize();
      await writeFile(file, loopingScript(marker));
      await until(() => existsSync(marker), 'the looping script to begin loading');
      await writeFile(file, OK_SCRIPT.replaceAll('ok', 'fixed').replace('v1', 'v2'));
      await until(() => /reloaded /.test(srv.stderr), 'the reload of the fix');
      assert.match(srv.stderr, /a newer change came while loading \(\S*loop\.lua:3: loading stopped\): loading again/);
      assert.equal(textOf(await srv.call(2, 'tools/call', { name: 'fixed', arguments: {} })), 'v2');
      assert.equal(textOf(await srv.call(3, 'tools/call', { name: 'ok', arguments: {} })), 'v1');
    });
  } finally {
    await removeTemp(dir);
  }
});

// the state is copied when the load begins; a handler that changes it on
// the version serving meanwhile must not see its change lost when the new
// version is published (a counter in mcp.state counted twice the same)
const BUMP_SCRIPT = 'local mcp = require "mcp"\nmcp.tool { name = "bump", description = "bump", handler = function()\n' +
  '  mcp.state.n = (mcp.state.n or 0) + 1\n  return tostring(mcp.state.n)\nend }\n';
// makes `marker` (the load has begun), then waits at its top level for `release`
const waitingScript = (marker, release) =>
  `assert(io.open(${JSON.stringify(marker)}, "w")):close()\nwhile not io.open(${JSON.stringify(release)}) do end\n`;

test('mcp.state changed by a handler while a reload loads is carried into the new version', opts, async () => {
  const dir = await tempApp({ 'scripts/bump.lua': BUMP_SCRIPT });
  const marker = path.join(dir, 'loading');
  const release = path.join(dir, 'release');
  try {
    await withRaw(['--load-timeout', '600', '--log-level', 'info', dir], async (srv) => {
      await srv.initialize();
      assert.equal(textOf(await srv.call(2, 'tools/call', { name: 'bump', arguments: {} })), '1');
      await writeFile(path.join(dir, 'scripts', 'wait.lua'), waitingScript(marker, release));
      await until(() => existsSync(marker), 'the reload to begin loading');
      // the version serving answers, and counts
      assert.equal(textOf(await srv.call(3, 'tools/call', { name: 'bump', arguments: {} })), '2');
      await writeFile(release, '');
      await until(() => /reloaded /.test(srv.stderr), 'the reload');
      assert.equal(textOf(await srv.call(4, 'tools/call', { name: 'bump', arguments: {} })), '3', srv.stderr);
    });
  } finally {
    await removeTemp(dir);
  }
});

test('the first load: a loop at a script\'s top level fails at its line past --load-timeout; SIGTERM ends it at once', opts, async () => {
  const dir = await tempApp({});
  const marker = path.join(dir, 'loading');
  await mkdir(path.join(dir, 'scripts'));
  await writeFile(path.join(dir, 'scripts', 'loop.lua'), loopingScript(marker));
  try {
    const r = await run(['serve', '--load-timeout', '0.2', dir]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /loop\.lua:3: loading took longer than --load-timeout \(0\.2 s\)/);
    await removeTemp(marker);
    const { command: cmd, args } = command(['serve', '--load-timeout', '600', dir]);
    const child = spawn(cmd, args, { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      await until(() => existsSync(marker), 'the looping script to begin loading');
      child.kill('SIGTERM');
      const exit = await within(exited, WAIT, 'the exit after SIGTERM during the first load');
      assert.equal(exit.signal, 'SIGTERM', JSON.stringify(exit));
    } finally {
      child.kill('SIGKILL');
    }
  } finally {
    await removeTemp(dir);
  }
});
