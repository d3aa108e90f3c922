// http-modern.test.mjs — Streamable HTTP in its 2026-07-28 form beside
// 2025 sessions on one endpoint: no sessions for modern requests, the
// standard headers checked against the body, statuses for errors, streams
// without ids, x-mcp-header parameters, subscriptions/listen on an SSE
// response that a hot reload writes to.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, TEST_TIMEOUT, removeTemp, run, tempApp } from './helpers.mjs';
import { answerOf, post, rawInitialize, rpc, withHttp } from './http-helpers.mjs';

const APP = path.join(APPS, 'modern');
const opts = { timeout: TEST_TIMEOUT };
const REV = '2026-07-28';
const meta = (caps = {}) => ({ 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': caps });
const modern = (msg, name, extra = {}) => ({
  version: REV,
  extra: { 'Mcp-Method': msg.method, ...(name !== undefined ? { 'Mcp-Name': name } : {}), ...extra },
});

test('modern requests need no session and get none; the 2025 session beside them works as before', opts, () =>
  withHttp(APP, [], async (srv) => {
    const list = rpc('tools/list', { _meta: meta() });
    const ex = await post(srv, list, modern(list));
    assert.equal(ex.status, 200);
    assert.equal(ex.headers['mcp-session-id'], undefined);
    assert.equal(answerOf(ex).result.resultType, 'complete');
    const stray = rpc('tools/call', { name: 'echo', arguments: { text: 'x' }, _meta: meta() });
    const ex2 = await post(srv, stray, modern(stray, 'echo', { 'Mcp-Session-Id': 'not-a-session' }));
    assert.equal(answerOf(ex2).result.content[0].text, 'x');
    const { session } = await rawInitialize(srv);
    const old = rpc('tools/call', { name: 'echo', arguments: { text: 'old' } });
    assert.equal(answerOf(await post(srv, old, { session })).result.content[0].text, 'old');
  }));

test('standard headers against the body: -32020 and 400, with the request id', opts, () =>
  withHttp(APP, [], async (srv) => {
    const call = rpc('tools/call', { name: 'echo', arguments: { text: 'x' }, _meta: meta() }, 77);
    const cases = [
      modern(call, 'other'), // Mcp-Name differs
      modern({ method: 'tools/list' }, 'echo'), // Mcp-Method differs
      modern(call, undefined), // Mcp-Name missing
      { version: '2025-11-25', extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'echo' } }, // versions differ
      modern(call, '=?base64?ZWNo!!?='), // a broken sentinel
    ];
    for (const h of cases) {
      const ex = await post(srv, call, h);
      assert.equal(ex.status, 400, JSON.stringify(h));
      const a = answerOf(ex);
      assert.equal(a.error.code, -32020, JSON.stringify(a));
      assert.equal(a.id, 77);
    }
    const b64 = await post(srv, call, modern(call, '=?base64?ZWNobw==?='));
    assert.equal(answerOf(b64).result.content[0].text, 'x');
  }));

test('statuses: a broken envelope 400, an unknown version 400, -32601 404, -32021 400; streams carry no ids', opts, () =>
  withHttp(APP, [], async (srv) => {
    const noEnv = rpc('tools/list', {});
    const e1 = await post(srv, noEnv, modern(noEnv));
    assert.equal(e1.status, 400);
    assert.equal(answerOf(e1).error.code, -32602);
    const bad = rpc('tools/list', { _meta: { ...meta(), 'io.modelcontextprotocol/protocolVersion': '2031-01-01' } });
    const e2 = await post(srv, bad, { version: '2031-01-01', extra: { 'Mcp-Method': 'tools/list' } });
    assert.equal(e2.status, 400);
    assert.equal(answerOf(e2).error.code, -32022);
    const ping = rpc('ping', { _meta: meta() });
    const e3 = await post(srv, ping, modern(ping));
    assert.equal(e3.status, 404);
    assert.equal(answerOf(e3).error.code, -32601);
    const greet = rpc('tools/call', { name: 'greet', arguments: { greeting: 'Hi' }, _meta: meta() });
    const e4 = await post(srv, greet, modern(greet, 'greet'));
    assert.equal(e4.status, 400);
    assert.equal(answerOf(e4).error.code, -32021);
    const logs = rpc('tools/call', { name: 'log_and_progress', arguments: {}, _meta: { ...meta(), progressToken: 'p' } });
    const e5 = await post(srv, logs, modern(logs, 'log_and_progress'));
    assert.ok(e5.sse, 'progress makes it a stream');
    assert.ok(!/^id:/m.test(e5.body), `no event ids: ${e5.body}`);
    assert.equal(answerOf(e5).result.content[0].text, 'logged');
    // the status is the message's own kind: an error object inside a result is data
    const shaped = rpc('tools/call', { name: 'error_shaped', arguments: {}, _meta: meta() }, '"x"\\');
    const e6 = await post(srv, shaped, modern(shaped, 'error_shaped'));
    assert.equal(e6.status, 200, e6.body);
    assert.equal(answerOf(e6).result.structuredContent.error.code, -32601);
    const ping2 = rpc('ping', { _meta: meta() }, 'a "quoted\\" id');
    const e7 = await post(srv, ping2, modern(ping2));
    assert.equal(e7.status, 404, e7.body);
  }));

test('x-mcp-header: Mcp-Param-* must mirror the arguments (strings exactly, integers in their decimal form only)', opts, () =>
  withHttp(APP, [], async (srv) => {
    const call = (args, id) => rpc('tools/call', { name: 'route', arguments: args, _meta: meta() }, id);
    const c1 = call({ region: 'eu-1', shard: 42 }, 1);
    const ok = await post(srv, c1, modern(c1, 'route', { 'Mcp-Param-Region': 'eu-1', 'Mcp-Param-Shard': '42' }));
    assert.equal(answerOf(ok).result.content[0].text, 'routed to eu-1');
    // 42 is written "42" (the spec's encoding rule): no other spelling of the number matches
    for (const shard of ['42.0', '0x2A', '4.2e1', '042', '+42', ' 42x']) {
      const other = await post(srv, c1, modern(c1, 'route', { 'Mcp-Param-Region': 'eu-1', 'Mcp-Param-Shard': shard }));
      assert.equal(answerOf(other).error?.code, -32020, `Mcp-Param-Shard: ${shard}`);
    }
    const c3 = rpc('tools/call', { name: 'route', arguments: { region: 'eu-1', shard: 42.0 }, _meta: meta() }, 3);
    const asFloat = await post(srv, c3, modern(c3, 'route', { 'Mcp-Param-Region': 'eu-1', 'Mcp-Param-Shard': '42' }));
    assert.equal(answerOf(asFloat).result?.content[0].text, 'routed to eu-1', asFloat.body);
    const missing = await post(srv, c1, modern(c1, 'route', { 'Mcp-Param-Shard': '42' }));
    assert.equal(missing.status, 400);
    assert.equal(answerOf(missing).error.code, -32020);
    const wrong = await post(srv, c1, modern(c1, 'route', { 'Mcp-Param-Region': 'us-1', 'Mcp-Param-Shard': '42' }));
    assert.equal(answerOf(wrong).error.code, -32020);
    const c2 = call({ region: 'eu 1' }, 2); // no shard: no header expected for it
    const enc = await post(srv, c2, modern(c2, 'route', { 'Mcp-Param-Region': '=?base64?ZXUgMQ==?=' }));
    assert.equal(answerOf(enc).result.content[0].text, 'routed to eu 1');
  }));

test('luamcp check refuses x-mcp-header where clients would drop the tool', opts, async () => {
  const bad = {
    items: '{ type = "array", items = { type = "string", ["x-mcp-header"] = "Item" } }',
    number: '{ type = "number", ["x-mcp-header"] = "N" }',
    token: '{ type = "string", ["x-mcp-header"] = "Two Words" }',
  };
  for (const [what, prop] of Object.entries(bad)) {
    const dir = await tempApp({
      'scripts/x.lua': `local mcp = require "mcp"\nmcp.tool { name = "x", description = "x", input = { type = "object", properties = { p = ${prop} } }, handler = function() return "x" end }\n`,
    });
    try {
      const r = await run(['check', dir]);
      assert.equal(r.code, 1, `${what}: ${r.stdout}${r.stderr}`);
      assert.match(r.stdout + r.stderr, /x\.lua:2: mcp\.tool: x-mcp-header/);
    } finally {
      await removeTemp(dir);
    }
  }
});

test('a 2026-07-28 client that closes its connection cancels the call (no session, no notification)', opts, async () => {
  const dir = await tempApp({
    'scripts/nap.lua': 'local mcp = require "mcp"\nmcp.tool { name = "nap", description = "sleeps", handler = function(_, ctx) ctx:sleep(20) return "woke" end }\n',
  });
  try {
    await withHttp(dir, ['--sse-keepalive', '0.3'], async (srv) => {
      const msg = rpc('tools/call', { name: 'nap', arguments: {}, _meta: meta() }, 'nap-1');
      const ac = new AbortController();
      const done = fetch(srv.url, {
        method: 'POST', body: JSON.stringify(msg), signal: ac.signal,
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': REV, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'nap' },
      }).catch(() => 'aborted');
      await new Promise((r) => setTimeout(r, 300));
      ac.abort();
      assert.equal(await done, 'aborted');
      for (let i = 0; i < 60 && !/call "nap-1" cancelled/.test(srv.stderr); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(srv.stderr, /call "nap-1" cancelled/);
    });
  } finally {
    await removeTemp(dir);
  }
});
