// raw.test.mjs — the stdio transport byte by byte: NDJSON lines written to
// `luamcp serve`, replies read line by line and, where JS numbers would lose
// digits, compared as raw text. What a transcript can say (lines in, lines
// out) is in tests/transcripts/, over stdio and HTTP; here what needs bytes
// that are not text, computed inputs, timing or the process itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { BUSY_APP, EXAMPLE_APP, FEATURES_APP, PAGED_APP, SCALE, TEST_TIMEOUT, WAIT, ms, RawServer, rawMember, removeTemp, tempApp, withRaw, within } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };

const errorCode = (line) => JSON.parse(line).error?.code;

// the plain cases (made up, empty, numeric, another list's): tests/transcripts/pagination.transcript
test('-32602 for a cursor with one byte changed, or one more', opts, () =>
  withRaw([PAGED_APP, '--page-size', '100'], async (srv) => {
    await srv.initialize();
    const first = await srv.call(3, 'tools/list', {});
    const cursor = first.result.nextCursor;
    assert.equal(typeof cursor, 'string');
    assert.ok((await srv.call(4, 'tools/list', { cursor })).result, 'the real cursor works');

    const flip = (ch) => (ch === '0' ? '1' : '0');
    const tamperedTail = cursor.slice(0, -1) + flip(cursor.at(-1));
    const tamperedHead = flip(cursor[0]) + cursor.slice(1);
    for (const [i, bad] of [tamperedTail, tamperedHead, cursor + '0'].entries()) {
      const r = await srv.call(10 + i, 'tools/list', { cursor: bad });
      assert.equal(r.error?.code, -32602, `cursor ${JSON.stringify(bad)}: ${JSON.stringify(r)}`);
    }
  }));

test('paged lists per version and audience: 250 tools (titled, app-only ones among them), every page and cursor right', opts, async () => {
  const dir = await tempApp({
    'scripts/mixed.lua': `local mcp = require "mcp"
for i = 1, 250 do
  mcp.tool {
    name = ("t%03d"):format(i),
    title = (i % 10 == 0) and ("Tool " .. i) or nil,
    visibility = (i % 25 == 0) and { "app" } or nil,
    handler = function() return "ok" end,
  }
end`,
  });
  const UI = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } };
  try {
    for (const [version, ui] of [['2024-11-05', false], ['2025-06-18', false], ['2025-11-25', false], ['2025-11-25', true]]) {
      await withRaw([dir, '--page-size', '100', '--no-watch'], async (srv) => {
        const init = await srv.call('init', 'initialize', {
          protocolVersion: version,
          capabilities: ui ? UI : {},
          clientInfo: { name: 'luamcp-raw-test', version: '0.0.0' },
        });
        assert.ok(init.result, JSON.stringify(init));
        srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        const names = [];
        let cursor, pages = 0;
        do {
          const r = await srv.call(100 + pages, 'tools/list', cursor ? { cursor } : {});
          assert.ok(r.result, `${version} page ${pages + 1}: ${JSON.stringify(r)}`);
          for (const t of r.result.tools) {
            const i = Number(t.name.slice(1));
            names.push(i);
            assert.equal('title' in t, version >= '2025-06-18' && i % 10 === 0, `${version}: title of ${t.name}`);
          }
          cursor = r.result.nextCursor;
          pages++;
        } while (cursor);
        const want = [];
        for (let i = 1; i <= 250; i++) if (ui || i % 25 !== 0) want.push(i);
        assert.deepEqual(names, want, `${version}${ui ? ' (MCP Apps host)' : ''}: the tools, in order`);
        assert.equal(pages, 3, `${version}: pages`);
      });
    }
  } finally {
    await removeTemp(dir);
  }
});

test('a 2 MB argument comes back intact', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    const unit = 'abc"\\\n\t/é€🎉\u0001 ';
    const text = unit.repeat(Math.ceil((2 * 1024 * 1024) / Buffer.byteLength(unit)));
    assert.ok(Buffer.byteLength(text) >= 2 * 1024 * 1024);
    const r = await srv.call(1, 'tools/call', { name: 'echo', arguments: { text } });
    assert.equal(r.result.content[0].text.length, text.length);
    assert.ok(r.result.content[0].text === text, 'the echoed text differs');
    assert.ok((await srv.call(2, 'ping')).result, 'alive afterwards');
  }));

// valid UTF-8 and \u escapes: tests/transcripts/json-mapping.transcript
test('invalid UTF-8 is a parse error (id null), and the server goes on', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    const head = Buffer.from('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"');
    const tail = Buffer.from('"}}}');
    const invalid = {
      'bytes ff fe': [0xff, 0xfe],
      'a lone continuation byte': [0x61, 0x80, 0x62],
      'a truncated sequence': [0xe6, 0x97],
      'an overlong slash': [0xc0, 0xaf],
      'an encoded surrogate': [0xed, 0xa0, 0x80],
    };
    for (const [what, bytes] of Object.entries(invalid)) {
      srv.send(Buffer.concat([head, Buffer.from(bytes), tail]));
      const line = await srv.next();
      assert.equal(errorCode(line), -32700, `${what}: ${line}`);
      assert.equal(rawMember(line, ['id']), 'null', `${what}: ${line}`);
    }
    const after = await srv.call(4, 'tools/call', { name: 'echo', arguments: { text: 'still here ✓' } });
    assert.equal(after.result.content[0].text, 'still here ✓');
  }));

test('pipelined requests, written while a CPU-bound call runs, all get their reply', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    const batch = [{ jsonrpc: '2.0', id: 'work', method: 'tools/call', params: { name: 'work', arguments: { seconds: 0.2 * SCALE } } }];
    for (let i = 0; i < 20; i++) {
      batch.push({ jsonrpc: '2.0', id: i, method: i % 2 ? 'ping' : 'tools/call', params: i % 2 ? undefined : { name: 'echo', arguments: { text: `n${i}` } } });
    }
    // one write, many lines: the rest of the batch waits in the input buffer while "work" runs
    srv.send(batch.map((m) => JSON.stringify(m)).join('\n'));
    await srv.take((l) => l.includes('"working"'), 'the CPU-bound call to start');
    // and these arrive while it runs
    const more = [];
    for (let i = 20; i < 40; i++) more.push(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `n${i}` } } }));
    srv.send(more.join('\n'));
    assert.equal(JSON.parse(await srv.reply('"work"')).result.content[0].text, 'worked');
    for (let i = 0; i < 40; i++) {
      const r = JSON.parse(await srv.reply(String(i)));
      assert.ok(r.result, JSON.stringify(r));
      if (i % 2 === 0 || i >= 20) assert.equal(r.result.content[0].text, `n${i}`);
    }
    assert.ok(!srv.lines.some((l) => JSON.parse(l).error), srv.lines.filter((l) => JSON.parse(l).error).join('\n'));
  }));

test('EOF on stdin: the process exits 0 promptly', opts, async () => {
  const srv = new RawServer([EXAMPLE_APP]);
  await srv.initialize();
  const t0 = Date.now();
  const exit = await srv.close();
  assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
  assert.ok(Date.now() - t0 < ms(3000), `exited after ${Date.now() - t0} ms`);
});

test('EOF with a call in flight: the reply is written before the exit', opts, async () => {
  const srv = new RawServer([FEATURES_APP]);
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 'inflight', method: 'tools/call', params: { name: 'sleep', arguments: { seconds: 0.2 } } });
  const exit = await srv.close();
  assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
  const reply = await within(srv.reply('"inflight"'), WAIT, 'the in-flight reply');
  assert.equal(JSON.parse(reply).result.content[0].text, 'slept 0.2');
});

test('EOF right after a request without a trailing newline still answers it', opts, async () => {
  const srv = new RawServer([EXAMPLE_APP]);
  await srv.initialize();
  srv.child.stdin.write('{"jsonrpc":"2.0","id":"last","method":"tools/list"}');
  const exit = await srv.close();
  assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
  assert.ok(JSON.parse(await srv.reply('"last"')).result.tools);
});

test('stdout carries only protocol, even when scripts print()/io.write()', opts, async () => {
  const srv = new RawServer([FEATURES_APP]);
  await srv.initialize();
  const r = await srv.call(1, 'tools/call', { name: 'noisy', arguments: {} });
  assert.equal(r.result.content[0].text, 'noisy done');
  await srv.call(2, 'tools/call', { name: 'noisy', arguments: {} });
  const exit = await srv.close();
  assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
  for (const line of srv.lines) {
    let msg;
    assert.doesNotThrow(() => (msg = JSON.parse(line)), `not JSON on stdout: ${line}`);
    assert.equal(msg.jsonrpc, '2.0', `not JSON-RPC on stdout: ${line}`);
  }
  for (const text of ['PRINT-AT-LOAD', 'PRINT-IN-HANDLER', 'IO-WRITE-IN-HANDLER', 'IO-STDOUT-IN-HANDLER']) {
    assert.ok(srv.stderr.includes(text), `${text} should reach stderr:\n${srv.stderr}`);
    assert.ok(!srv.lines.some((l) => l.includes(text)), `${text} leaked to stdout`);
  }
});

test('a request read while a resumed call is busy is answered at once, without more input', opts, () =>
  withRaw([BUSY_APP, '--no-watch'], async (srv) => {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nap_then_busy', arguments: { nap: 0.05, ms: 600 } } });
    await delay(300); // inside the busy part, which a timer resumed
    srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } });
    // nothing else is sent: the answer must not wait for the next input
    const r = JSON.parse(await srv.reply('2'));
    assert.equal(r.result.content[0].text, 'hello');
    JSON.parse(await srv.reply('1'));
  }));

// s:match("^%s*(.-)%s*$") on a text with 100k spaces inside is ~5e9 matcher
// steps in one C call, where the count hook never runs (about a minute with
// Lua's own string.match): the pattern functions ask the engine themselves
// (core/vm/lua_pattern.h)
const SPACES = `x${' '.repeat(100_000)}x`;

test('--timeout stops a quadratic Lua pattern match (the trim idiom, 100k spaces inside)', opts, () =>
  withRaw([BUSY_APP, '--no-watch', '--timeout', '1'], async (srv) => {
    await srv.initialize();
    const t0 = Date.now();
    const r = await srv.call(1, 'tools/call', { name: 'trim', arguments: { text: SPACES } }, ms(20_000));
    assert.equal(r.result?.isError, true, JSON.stringify(r).slice(0, 300));
    assert.match(r.result.content[0].text, /timed out after 1 s/);
    assert.ok(Date.now() - t0 < ms(15_000), `answered after ${Date.now() - t0} ms`);
    // the state is fine afterwards: the same tool on ordinary text, and ping
    const ok = await srv.call(2, 'tools/call', { name: 'trim', arguments: { text: '  hello  ' } });
    assert.equal(ok.result.content[0].text, 'hello');
    assert.deepEqual((await srv.call(3, 'ping')).result, {});
  }));

test('while a long pattern match runs, ping is answered and notifications/cancelled ends it', opts, () =>
  withRaw([BUSY_APP, '--no-watch', '--timeout', '600'], async (srv) => {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 'trim', method: 'tools/call', params: { name: 'trim', arguments: { text: SPACES } } });
    await delay(300); // inside string.match
    assert.deepEqual((await srv.call('ping', 'ping', undefined, ms(3000))).result, {});
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'trim', reason: 'test' } });
    // the engine is free again only once the match has stopped (600 s otherwise)
    const r = await srv.call('after', 'tools/call', { name: 'echo', arguments: { text: 'after' } }, ms(5000));
    assert.equal(r.result.content[0].text, 'after');
    assert.ok(!srv.lines.some((l) => rawMember(l, ['id']) === '"trim"'), 'no reply for the cancelled call');
  }));
