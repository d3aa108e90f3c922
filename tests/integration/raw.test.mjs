// raw.test.mjs — the stdio transport byte by byte: NDJSON lines written to
// `luamcp serve`, replies read line by line and, where JS numbers would lose
// digits, compared as raw text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { BUSY_APP, EXAMPLE_APP, FEATURES_APP, PAGED_APP, SCALE, TEST_TIMEOUT, WAIT, ms, RawServer, rawMember, removeTemp, tempApp, withRaw, within } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };

const errorCode = (line) => JSON.parse(line).error?.code;

test('a line that is not JSON gets -32700 with id null, and the server keeps going', opts, () =>
  withRaw([EXAMPLE_APP], async (srv) => {
    await srv.initialize();
    srv.send('this is not json');
    const line = await srv.next();
    const msg = JSON.parse(line);
    assert.equal(msg.jsonrpc, '2.0');
    assert.equal(msg.error.code, -32700);
    assert.equal(rawMember(line, ['id']), 'null');
    srv.send('{"jsonrpc":"2.0","id":2,"method":"tools/list"'); // truncated
    assert.equal(errorCode(await srv.next()), -32700);
    const r = await srv.call(3, 'tools/list', {});
    assert.equal(r.result.tools[0].name, 'suggest_gifts');
  }));

test('-32600: jsonrpc "1.0", params that are not an object, a request before initialize', opts, () =>
  withRaw([EXAMPLE_APP], async (srv) => {
    const before = await srv.call(1, 'tools/list', {});
    assert.equal(before.error?.code, -32600, JSON.stringify(before));

    // ping is allowed before initialize
    assert.deepEqual((await srv.call(2, 'ping')).result, {});
    await srv.initialize();

    const v1 = JSON.parse(await srv.request({ jsonrpc: '1.0', id: 3, method: 'ping' }));
    assert.equal(v1.error?.code, -32600, JSON.stringify(v1));

    const arrayParams = await srv.call(4, 'tools/list', [1, 2]);
    assert.equal(arrayParams.error?.code, -32600, JSON.stringify(arrayParams));
    assert.equal(arrayParams.id, 4);

    const stringParams = await srv.call(5, 'tools/call', 'suggest_gifts');
    assert.equal(stringParams.error?.code, -32600, JSON.stringify(stringParams));

    const noJsonrpc = JSON.parse(await srv.request({ id: 6, method: 'ping' }));
    assert.equal(noJsonrpc.error?.code, -32600, JSON.stringify(noJsonrpc));

    // initialize only once
    const again = await srv.call(7, 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'x', version: '1' },
    });
    assert.ok(again.error, JSON.stringify(again));

    assert.ok((await srv.call(8, 'tools/list', {})).result);
  }));

test('-32601 for an unknown method', opts, () =>
  withRaw([EXAMPLE_APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call(1, 'tools/frobnicate', {});
    assert.equal(r.error?.code, -32601, JSON.stringify(r));
    assert.match(r.error.message, /tools\/frobnicate/);
  }));

test('-32602: unknown tool, missing prompt argument, garbage cursor, tampered cursor', opts, () =>
  withRaw([PAGED_APP, '--page-size', '100'], async (srv) => {
    await srv.initialize();
    const unknown = await srv.call(1, 'tools/call', { name: 'no_such_tool', arguments: {} });
    assert.equal(unknown.error?.code, -32602, JSON.stringify(unknown));

    const garbage = await srv.call(2, 'tools/list', { cursor: 'not-a-cursor' });
    assert.equal(garbage.error?.code, -32602, JSON.stringify(garbage));

    const first = await srv.call(3, 'tools/list', {});
    const cursor = first.result.nextCursor;
    assert.equal(typeof cursor, 'string');
    assert.ok((await srv.call(4, 'tools/list', { cursor })).result, 'the real cursor works');

    const flip = (ch) => (ch === '0' ? '1' : '0');
    const tamperedTail = cursor.slice(0, -1) + flip(cursor.at(-1));
    const tamperedHead = flip(cursor[0]) + cursor.slice(1);
    for (const [i, bad] of [tamperedTail, tamperedHead, cursor + '0', ''].entries()) {
      const r = await srv.call(10 + i, 'tools/list', { cursor: bad });
      assert.equal(r.error?.code, -32602, `cursor ${JSON.stringify(bad)}: ${JSON.stringify(r)}`);
    }
    const numeric = await srv.call(20, 'tools/list', { cursor: 100 });
    assert.equal(numeric.error?.code, -32602, JSON.stringify(numeric));
  }));

test('-32602 for a prompt without its required argument', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call(1, 'prompts/get', { name: 'code_review', arguments: { language: 'lua' } });
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.match(r.error.message, /code/);
    const unknown = await srv.call(2, 'prompts/get', { name: 'no_such_prompt' });
    assert.equal(unknown.error?.code, -32602, JSON.stringify(unknown));
  }));

test('an input-schema violation: -32602 under 2025-06-18, an isError result under 2025-11-25', opts, async () => {
  await withRaw([FEATURES_APP], async (srv) => {
    assert.equal((await srv.initialize('2025-06-18')).protocolVersion, '2025-06-18');
    const r = await srv.call(1, 'tools/call', { name: 'strict', arguments: { count: 'three' } });
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.match(r.error.message, /count/);
    assert.ok((await srv.call(2, 'tools/call', { name: 'strict', arguments: { count: 3 } })).result);
  });
  await withRaw([FEATURES_APP], async (srv) => {
    assert.equal((await srv.initialize('2025-11-25')).protocolVersion, '2025-11-25');
    const r = await srv.call(1, 'tools/call', { name: 'strict', arguments: { count: 'three' } });
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.equal(r.result.isError, true);
    assert.match(r.result.content[0].text, /count/);
  });
});

test('version negotiation: supported versions are echoed, an unknown one gets 2025-11-25', opts, async () => {
  const cases = [
    ['2024-11-05', '2024-11-05'],
    ['2025-03-26', '2025-03-26'],
    ['2025-06-18', '2025-06-18'],
    ['2025-11-25', '2025-11-25'],
    ['1999-01-01', '2025-11-25'],
  ];
  for (const [asked, expected] of cases) {
    await withRaw([EXAMPLE_APP], async (srv) => {
      const result = await srv.initialize(asked);
      assert.equal(result.protocolVersion, expected, `asked ${asked}`);
      assert.equal(result.serverInfo.name, 'gift-server');
      assert.ok((await srv.call(1, 'tools/list', {})).result, `serves after negotiating ${expected}`);
    });
  }
});

test('lists leave out the fields an older protocol version does not know', opts, async () => {
  // title/outputSchema arrived in 2025-06-18, tool annotations in 2025-03-26
  const expect = {
    '2024-11-05': { title: false, outputSchema: false, annotations: false, serverTitle: false },
    '2025-03-26': { title: false, outputSchema: false, annotations: true, serverTitle: false },
    '2025-06-18': { title: true, outputSchema: true, annotations: true, serverTitle: true },
    '2025-11-25': { title: true, outputSchema: true, annotations: true, serverTitle: true },
  };
  for (const [version, has] of Object.entries(expect)) {
    await withRaw([EXAMPLE_APP], async (srv) => {
      const init = await srv.initialize(version);
      assert.equal('title' in init.serverInfo, has.serverTitle, `serverInfo.title under ${version}`);
      const [tool] = (await srv.call(1, 'tools/list', {})).result.tools;
      assert.equal(tool.name, 'suggest_gifts');
      assert.ok(tool.inputSchema, version);
      for (const field of ['title', 'outputSchema', 'annotations'])
        assert.equal(field in tool, has[field], `${field} under ${version}`);
      const [prompt] = (await srv.call(2, 'prompts/list', {})).result.prompts;
      assert.equal('title' in prompt, has.title, `prompt title under ${version}`);
    });
  }
});

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

test('notifications get no reply', opts, () =>
  withRaw([EXAMPLE_APP], async (srv) => {
    await srv.initialize();
    await srv.call('warmup', 'ping');
    const start = srv.lines.length;
    srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 12345, reason: 'none' } });
    srv.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    srv.send({ jsonrpc: '2.0', method: 'notifications/no_such_thing', params: {} });
    srv.send({ jsonrpc: '2.0', method: 'tools/list' }); // a known method, but without id: a notification
    srv.send({ jsonrpc: '2.0', id: 99, method: 'ping' });
    // tools/list goes through the same queue as the notifications: any reply
    // to them would come before its reply
    srv.send({ jsonrpc: '2.0', id: 100, method: 'tools/list' });
    await srv.reply('100');
    const after = srv.lines.slice(start);
    assert.equal(after.length, 2, `expected only the two replies, got:\n${after.join('\n')}`);
    assert.equal(rawMember(after[0], ['id']), '99', 'the first reply is the ping\'s');
    assert.deepEqual(JSON.parse(after[0]).result, {});
    assert.equal(rawMember(after[1], ['id']), '100');
  }));

test('ids are echoed exactly (raw bytes for numbers)', opts, () =>
  withRaw([EXAMPLE_APP], async (srv) => {
    await srv.initialize();
    for (const rawId of ['-7', '0', '123456789012345678', '9007199254740993', '-9007199254740993']) {
      const line = await srv.request(`{"jsonrpc":"2.0","id":${rawId},"method":"ping"}`, rawId);
      assert.equal(rawMember(line, ['id']), rawId);
      assert.ok(line.includes(`"id":${rawId}`), line);
    }
    // the same through the engine (not only the fast ping path)
    const big = '123456789012345678';
    const line = await srv.request(`{"jsonrpc":"2.0","id":${big},"method":"tools/list","params":{}}`, big);
    assert.equal(rawMember(line, ['id']), big);

    const strings = [
      ['"a\\"b\\u00e9"', 'a"bé'], // an escaped quote and a \u escape
      ['"a\\"b\\\\u00e9"', 'a"b\\u00e9'], // an escaped backslash
      ['"日本🎉"', '日本🎉'],
      ['""', ''],
    ];
    for (const [i, [rawId, value]] of strings.entries()) {
      const method = i % 2 ? 'ping' : 'tools/list';
      const reply = await srv.request(`{"jsonrpc":"2.0","id":${rawId},"method":"${method}"}`, rawId);
      assert.equal(JSON.parse(rawMember(reply, ['id'])), value);
      assert.ok(JSON.parse(reply).result, reply);
    }
  }));

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

test('UTF-8 multibyte text and emoji round-trip; invalid UTF-8 is a parse error', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    const text = 'héllo wörld — 日本語 🎉 👩‍👩‍👧 ẞ';
    const r = await srv.call(1, 'tools/call', { name: 'echo', arguments: { text } });
    assert.equal(r.result.content[0].text, text);

    // \u escapes, including a surrogate pair, decode to the same characters
    const escaped = await srv.request(
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\\u00e9\\ud83c\\udf89\\u65e5"}}}',
      '2',
    );
    assert.equal(JSON.parse(escaped).result.content[0].text, 'é🎉日');

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

test('empty arrays and objects keep their JSON type; integers stay integers', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    const list = await srv.request({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const tools = JSON.parse(list).result.tools;
    const idx = tools.findIndex((t) => t.name === 'no_params');
    assert.ok(idx >= 0);
    assert.deepEqual(tools[idx].inputSchema, { type: 'object', additionalProperties: false });
    assert.deepEqual(JSON.parse(rawMember(list, ['result', 'tools', idx, 'inputSchema'])), {
      type: 'object',
      additionalProperties: false,
    });

    const empty = await srv.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'empty', arguments: {} } });
    assert.equal(rawMember(empty, ['result', 'content']), '[]', empty);

    const nums = await srv.request({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'numbers', arguments: {} } });
    const sc = (k) => rawMember(nums, ['result', 'structuredContent', k]);
    assert.equal(sc('n'), '3', nums);
    assert.equal(sc('zero'), '0');
    assert.equal(sc('neg'), '-7');
    assert.equal(sc('f'), '0.1');
    assert.equal(sc('half'), '0.5');
    assert.equal(sc('big'), '9007199254740992'); // 2^53, a float in Lua
    assert.equal(sc('maxint'), '9223372036854775807');
    // the text fallback carries the same JSON
    const fallback = JSON.parse(nums).result.content[0].text;
    assert.equal(rawMember(fallback, ['n']), '3');
    assert.equal(rawMember(fallback, ['maxint']), '9223372036854775807');

    // an integer argument arrives as an integer ("%d" would fail on 3.0)
    const strict = await srv.call(4, 'tools/call', { name: 'strict', arguments: { count: 3, label: 'apples' } });
    assert.equal(strict.result.content[0].text, '3 x apples');
  }));

test('progress: notifications carry the token exactly and come before the reply', opts, () =>
  withRaw([FEATURES_APP], async (srv) => {
    await srv.initialize();
    for (const [id, token] of [[1, '"tok-\\u00e9"'], [2, '123456789012345678'], [3, '-4']]) {
      const start = srv.lines.length;
      srv.send(
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":${token}}}}`,
      );
      await srv.reply(String(id));
      const lines = srv.lines.slice(start);
      assert.equal(lines.length, 4, lines.join('\n'));
      for (const [i, line] of lines.slice(0, 3).entries()) {
        const msg = JSON.parse(line);
        assert.equal(msg.method, 'notifications/progress', line);
        assert.equal(msg.id, undefined);
        const got = rawMember(line, ['params', 'progressToken']);
        if (token.startsWith('"')) assert.equal(JSON.parse(got), JSON.parse(token));
        else assert.equal(got, token); // every digit
        assert.equal(msg.params.progress, i + 1);
        assert.equal(msg.params.total, 3);
        assert.equal(msg.params.message, `step ${i + 1} of 3`);
      }
      assert.equal(JSON.parse(lines[3]).result.content[0].text, 'progress sent: true');
    }
    // no token: no notifications
    const start = srv.lines.length;
    const r = await srv.call(4, 'tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.equal(r.result.content[0].text, 'progress sent: false');
    assert.equal(srv.lines.length - start, 1);
  }));

test('notifications/cancelled: a spinning call gets no reply; the server keeps serving', opts, () =>
  withRaw([FEATURES_APP, '--timeout', '600'], async (srv) => {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 'spin', method: 'tools/call', params: { name: 'spin', arguments: {} } });
    await srv.take((l) => l.includes('"spinning"'), 'the handler to start');
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'spin', reason: 'test' } });
    const r = await srv.call('after', 'tools/call', { name: 'echo', arguments: { text: 'after' } });
    assert.equal(r.result.content[0].text, 'after');
    // cancelling what already finished (or never existed) is harmless
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'after' } });
    assert.deepEqual((await srv.call('ping', 'ping')).result, {});
    assert.ok(!srv.lines.some((l) => rawMember(l, ['id']) === '"spin"'), 'no reply for the cancelled call');
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
// (core/lua_pattern.h)
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
