// hostile.test.mjs — what a careless script or a hostile client can send:
// every case is answered (an error or an isError result), and the server
// keeps serving the next request.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { APPS, BIN, TEST_TIMEOUT, WAIT, removeTemp, run, tempApp, within, withRaw } from './helpers.mjs';
import { REDIS, startRedis, stopChild } from './services.mjs';

const HOSTILE_APP = path.join(APPS, 'hostile');
const opts = { timeout: TEST_TIMEOUT };

const complete = (srv, id, uri, value) =>
  srv.call(id, 'completion/complete', {
    ref: { type: 'ref/resource', uri },
    argument: { name: 'name', value },
  });

async function stillServing(srv, id) {
  assert.deepEqual((await srv.call(id, 'ping')).result, {});
}

test('completion on a template whose complete table raises in __index: an error, no abort', opts, () =>
  withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const r = await complete(srv, 2, 'test://trap/{name}', 'x');
    assert.ok(r.error || r.result, JSON.stringify(r));
    if (r.result) assert.deepEqual(r.result.completion.values, []);
    await stillServing(srv, 3);
  }));

test('completion values that are not strings: numbers become text, a bad __tostring is an error', opts, () =>
  withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const good = await complete(srv, 2, 'test://values/{name}', 'a');
    assert.deepEqual(good.result.completion.values, ['a1', 'a2']);
    const nums = await complete(srv, 3, 'test://values/{name}', 'num');
    assert.deepEqual(nums.result.completion.values, ['1', '2.5']);
    const bad = await complete(srv, 4, 'test://values/{name}', 'bad');
    assert.equal(bad.error?.code, -32603, JSON.stringify(bad));
    assert.match(bad.error.message, /hostile\.lua:\d+|string/);
    await stillServing(srv, 5);
  }));

test('load() of corrupted bytecode is refused: binary chunks are off', opts, () =>
  withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call(2, 'tools/call', { name: 'load_bytecode', arguments: {} });
    const text = r.result?.content?.[0]?.text ?? '';
    assert.match(text, /^refused: .*binary/, JSON.stringify(r));
    await stillServing(srv, 3);
  }));

test('a result whose metatable raises on access is an isError result, not an abort', opts, () =>
  withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call(2, 'tools/call', { name: 'bad_result_index', arguments: {} });
    assert.ok(r.result?.isError || r.error, JSON.stringify(r));
    await stillServing(srv, 3);
  }));

test('an app.lua table whose __index raises is a load error naming it, not an abort', opts, async () => {
  const dir = await tempApp({
    'app.lua': 'return setmetatable({ name = "x" }, { __index = function() error("app.lua trap") end })\n',
    'scripts/t.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", handler = function() return "t" end }\n',
  });
  try {
    const r = await run(['check', dir]);
    assert.equal(r.signal, null, r.stderr);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /app\.lua trap/);
  } finally {
    await removeTemp(dir);
  }
});

test('require of a precompiled module is refused like load()', opts, async () => {
  const dir = await tempApp({
    'lib/compiled.lua': '', // replaced by bytecode: the script writes it
    'scripts/t.lua': '', // written below, once the folder's name is known
  });
  try {
    // the script writes a compiled chunk into lib/ and requires it
    const script = [
      'local mcp = require "mcp"',
      `local out = assert(io.open(${JSON.stringify(dir + '/lib/compiled.lua')}, "wb"))`,
      'out:write(string.dump(function() return 7 end)); out:close()',
      'local ok, err = pcall(require, "compiled")',
      'mcp.tool { name = "t", handler = function() return tostring(ok) .. " " .. tostring(err) end }',
    ].join('\n');
    await writeFile(path.join(dir, 'scripts', 't.lua'), script);
    const r = await run(['call', dir, 't', '{}']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /false .*binary chunk/);
  } finally {
    await removeTemp(dir);
  }
});

const BLOCKING_LINE = (await import('node:fs')).readFileSync(path.join(HOSTILE_APP, 'scripts', 'hostile.lua'), 'utf8')
  .split('\n').findIndex((l) => l.includes('BLOCKING LINE')) + 1;

test('the watchdog names the script line of a C call that blocks the server, on stderr and to the client', opts, () =>
  withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    assert.deepEqual((await srv.call(2, 'logging/setLevel', { level: 'warning' })).result, {});
    const r = await srv.call(3, 'tools/call', { name: 'blocking_sleep', arguments: { seconds: 0.6 } });
    assert.equal(r.result.content[0].text, 'slept');
    const note = srv.lines.map((l) => JSON.parse(l)).find((m) => m.method === 'notifications/message');
    assert.ok(note, 'a notifications/message reached the client');
    assert.match(note.params.data, new RegExp(`hostile\\.lua:${BLOCKING_LINE}: .*'execute' blocked the server for \\d+ ms`));
    assert.match(srv.stderr, new RegExp(`hostile\\.lua:${BLOCKING_LINE}: .*blocked the server`));
    // a short call is not reported
    const before = srv.lines.length;
    await srv.call(4, 'tools/call', { name: 'blocking_sleep', arguments: { seconds: 0 } });
    assert.ok(!srv.lines.slice(before).some((l) => l.includes('blocked the server')));
  }));

test('a block inside a coroutine the handler made is reported too, and --warn-blocking 0 turns the watchdog off', opts, async () => {
  await withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call(2, 'tools/call', { name: 'blocking_in_coroutine', arguments: {} });
    assert.equal(r.result.content[0].text, 'done');
    await delay(50);
    assert.match(srv.stderr, /blocked the server for \d+ ms/);
  });
  await withRaw(['--warn-blocking', '0', HOSTILE_APP], async (srv) => {
    await srv.initialize();
    await srv.call(2, 'tools/call', { name: 'blocking_sleep', arguments: { seconds: 0.5 } });
    assert.doesNotMatch(srv.stderr, /blocked the server/);
  });
});

test('the limit hook cannot be removed, the collector cannot be stopped', opts, () =>
  withRaw(['--timeout', '2', HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const hook = await srv.call(2, 'tools/call', { name: 'escape_hook', arguments: {} });
    assert.match(hook.result.content[0].text, /^refused: .*debug\.sethook is not available/, JSON.stringify(hook));
    const gc = await srv.call(3, 'tools/call', { name: 'stop_gc', arguments: {} });
    assert.match(gc.result.content[0].text, /^refused: .*collectgarbage\("stop"\) is not available/);
  }));

test('stdio: io.read in a handler does not take the next protocol line; an infinite progress total is an error', opts, () =>
  withRaw([HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const pending = srv.call(2, 'tools/call', { name: 'read_stdin', arguments: {} });
    srv.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }));
    const r = await pending;
    assert.equal(r.result.content[0].text, 'read: nil');
    assert.deepEqual(JSON.parse(await srv.reply('3')).result, {}); // the ping reached the server, not the script
    const p = await srv.call(4, 'tools/call', { name: 'infinite_progress', arguments: {}, _meta: { progressToken: 'p' } });
    assert.equal(p.result.isError, true, JSON.stringify(p));
    assert.match(p.result.content[0].text, /must be a finite number/);
    assert.ok(!srv.lines.some((l) => /Infinity|inf/.test(l) && l.includes('progress"')), 'no inf on the stream');
  }));

test('stdio: --max-message holds for a line read in one piece', opts, () =>
  withRaw(['--max-message', '1', HOSTILE_APP], async (srv) => {
    await srv.initialize();
    const big = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x', arguments: { pad: 'a'.repeat((1 << 20) + 45) } } });
    srv.send(big);
    const err = JSON.parse(await srv.next());
    assert.equal(err.error?.code, -32600, JSON.stringify(err).slice(0, 200));
    assert.match(err.error.message, /larger than/);
    assert.deepEqual((await srv.call(3, 'ping')).result, {});
  }));

test('mcp.store in memory is bounded: past 256 MiB set raises "full", a delete makes room', { timeout: TEST_TIMEOUT }, async () => {
  const dir = await tempApp({
    'scripts/s.lua': `local mcp = require "mcp"
mcp.tool { name = "fill", handler = function()
  local big = string.rep("x", 1 << 20)
  for i = 1, 300 do
    local ok, err = pcall(mcp.store.set, "k" .. i, big)
    if not ok then return i .. " " .. err end
  end
  return "no limit"
end }
mcp.tool { name = "after", handler = function()
  mcp.store.delete("k1")
  return tostring(mcp.store.set("again", string.rep("y", 1 << 20)))
end }
`,
  });
  try {
    await withRaw(['--no-watch', '--store', 'memory', dir], async (srv) => {
      await srv.initialize();
      const fill = (await srv.call(1, 'tools/call', { name: 'fill', arguments: {} })).result;
      assert.match(fill.content[0].text, /^25\d mcp\.store\.set: the in-memory store is full \(256 MiB/);
      const after = (await srv.call(2, 'tools/call', { name: 'after', arguments: {} })).result;
      assert.equal(after.content[0].text, 'true');
    });
  } finally {
    await removeTemp(dir);
  }
});

// issue 25 item 8: a Redis reply is held whole by hiredis before it is handed
// over; past 64 MiB pending the connection is dropped (the call gets an error,
// the store reconnects) instead of the server growing with the key.
test('mcp.store on Redis: an 80 MB value someone else wrote drops the connection at 64 MiB, not the heap', { timeout: TEST_TIMEOUT, skip: !existsSync(REDIS) && 'redis-server is not installed' }, async () => {
  const redis = await startRedis();
  const dir = await tempApp({
    'scripts/s.lua': `local mcp = require "mcp"
mcp.tool { name = "get", description = "A key's length.", input = { key = mcp.string() }, handler = function(args)
  local v = mcp.store.get(args.key)
  return v and #v or "nil"
end }
`,
  });
  try {
    const cli = await new Promise((resolve, reject) => {
      const child = spawn('redis-cli', ['-p', String(redis.port), '-x', 'SET', 'big'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.on('error', reject).on('close', () => resolve(out));
      child.stdin.end(Buffer.alloc(80 << 20, 'x'));
    });
    assert.match(cli, /OK/);
    await withRaw(['--no-watch', '--store', `redis://127.0.0.1:${redis.port}/0`, dir], async (srv) => {
      await srv.initialize();
      const small = (await srv.call(1, 'tools/call', { name: 'get', arguments: { key: 'nothing' } })).result;
      assert.equal(small.content[0].text, 'nil');
      const hwm = async () => Number((await readFile(`/proc/${srv.child.pid}/status`, 'utf8')).match(/VmHWM:\s+(\d+) kB/)[1]) * 1024;
      const before = await hwm();
      const big = (await srv.call(2, 'tools/call', { name: 'get', arguments: { key: 'big' } })).result;
      assert.equal(big.isError, true);
      assert.match(big.content[0].text, /mcp\.store\.get: the connection to redis 127\.0\.0\.1:\d+\/0 was lost/);
      // (not under ASan: its quarantine keeps every buffer hiredis outgrew)
      if (!/asan/.test(BIN)) assert.ok((await hwm()) - before < 120 << 20, `peak RSS grew by ${((await hwm()) - before) >> 20} MiB`);
      assert.match(srv.stderr, /sent a reply larger than 64 MiB: the connection was dropped/);
      // it reconnects: the next get works
      const again = await within((async () => {
        for (;;) {
          const r = (await srv.call(`a${Date.now()}`, 'tools/call', { name: 'get', arguments: { key: 'nothing' } })).result;
          if (!r.isError) return r;
          await delay(100);
        }
      })(), WAIT, 'the store to reconnect');
      assert.equal(again.content[0].text, 'nil');
    });
  } finally {
    await stopChild(redis.child, redis.exited);
    await removeTemp(dir);
  }
});

// Issue 33, item 6: what a client chooses reaches log lines (initialize's
// protocolVersion); with --access-log - both go to stderr, and a client
// wrote a whole fake access-log line and a fake "luamcp: info:" line. Now a
// line break goes on as "  | ", control bytes and what is not UTF-8 as \xHH.
test('a client cannot forge log lines: its line breaks, control bytes and bad UTF-8 are escaped', opts, () =>
  withRaw(['--no-watch', '--access-log', '-', HOSTILE_APP], async (srv) => {
    const fakeAccess = JSON.stringify({ time: '2026-12-01T00:00:00Z', peer: '10.0.0.1', method: 'tools/call', name: 'admin', outcome: 'ok' });
    const forged = `2025-11-25\nluamcp: info: session of admin opened\n${fakeAccess}\r\u001b[2J`;
    const r = await srv.call('f', 'initialize', { protocolVersion: forged, capabilities: {}, clientInfo: { name: 'x\ny', version: '1' } });
    assert.ok(r.result, JSON.stringify(r));
    await srv.call('p', 'ping');
    const lines = srv.stderr.split('\n');
    assert.ok(!lines.some((l) => l.startsWith('luamcp: info: session of admin')), srv.stderr);
    assert.ok(!lines.some((l) => l.startsWith('{') && l.includes('"admin"')), srv.stderr);
    assert.ok(!srv.stderr.includes('\r') && !srv.stderr.includes('\u001b'), JSON.stringify(srv.stderr));
    assert.match(srv.stderr, /client initialized \(asked 2025-11-25\n {2}\| luamcp: info: session of admin opened\n {2}\| \{/);
  }));
