// http-raw.test.mjs — `luamcp serve --http` spoken to with raw node:http
// requests: every status the Streamable HTTP transport answers with, the
// security checks (Origin, Host, bearer token) and proof that a refused
// request never reaches Lua, stateless mode, session ids and expiry,
// graceful shutdown, SSE keep-alives and dead GET clients. Each test starts
// its own server on a free 127.0.0.1 port and requires exit code 0 after
// SIGTERM.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { BUSY_APP, FEATURES_APP, SCALE, TEST_TIMEOUT, WAIT, ms, removeTemp, run, tempApp } from './helpers.mjs';
import { until } from './services.mjs';
import {
  HTTP_APP,
  HttpServer,
  freePort,
  PROTOCOL_VERSION,
  answerOf,
  exchange,
  mcpHeaders,
  note,
  post,
  rawInitialize,
  request,
  rpc,
  withHttp,
} from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };

const call = (name, args = {}) => rpc('tools/call', { name, arguments: args });
const textOf = (msg) => msg.result.content.map((c) => c.text).join('\n');

/** A refused request: this status, and a JSON-RPC error body with id null. */
function assertRefused(ex, status, what) {
  assert.equal(ex.status, status, `${what}: expected ${status}, got ${ex.status} ${ex.body}`);
  assert.match(ex.headers['content-type'] || '', /^application\/json/, `${what}: the error body is JSON`);
  const body = JSON.parse(ex.body);
  assert.equal(body.jsonrpc, '2.0', `${what}: ${ex.body}`);
  assert.equal(body.id, null, `${what}: ${ex.body}`);
  assert.equal(typeof body.error?.code, 'number', `${what}: ${ex.body}`);
  assert.equal(ex.headers['mcp-session-id'], undefined, `${what}: no session may be issued`);
  return body;
}

/** Content-Length is there and counts the bytes of the body. */
function assertLength(ex) {
  assert.ok(ex.headers['content-length'] !== undefined, `no Content-Length: ${JSON.stringify(ex.headers)}`);
  assert.equal(Number(ex.headers['content-length']), Buffer.concat(ex.chunks).length);
}

// {=================================================== 200 / 202

test('200 JSON for a simple request (Content-Type, Content-Length); 202 with no body for a notification and a response', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const init = await post(
      srv,
      rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '0' } }, 'init-1'),
      { version: null },
    );
    assert.equal(init.status, 200, init.body);
    assert.match(init.headers['content-type'], /^application\/json/);
    assertLength(init);
    const initMsg = JSON.parse(init.body);
    assert.equal(initMsg.id, 'init-1');
    assert.equal(initMsg.result.protocolVersion, PROTOCOL_VERSION);
    assert.equal(initMsg.result.serverInfo.name, 'luamcp-test-features');
    const session = init.headers['mcp-session-id'];
    assert.ok(session, 'initialize answers with Mcp-Session-Id');

    const inited = await post(srv, note('notifications/initialized'), { session });
    assert.equal(inited.status, 202);
    assert.equal(inited.body, '');
    assert.equal(inited.headers['content-type'], undefined, '202 has no body, so no Content-Type');

    const echo = await post(srv, call('echo', { text: 'hello over http' }), { session });
    assert.equal(echo.status, 200, echo.body);
    assert.match(echo.headers['content-type'], /^application\/json/);
    assertLength(echo);
    assert.equal(textOf(JSON.parse(echo.body)), 'hello over http');

    const list = await post(srv, rpc('tools/list', {}, 77), { session });
    assert.equal(list.status, 200);
    assertLength(list);
    const listMsg = JSON.parse(list.body);
    assert.equal(listMsg.id, 77);
    assert.ok(listMsg.result.tools.some((t) => t.name === 'echo'));

    // a JSON-RPC response (to no request of the server's) and an error response: 202, no body
    for (const msg of [
      { jsonrpc: '2.0', id: 424242, result: {} },
      { jsonrpc: '2.0', id: 424243, error: { code: -1, message: 'no' } },
    ]) {
      const r = await post(srv, msg, { session });
      assert.equal(r.status, 202, `${JSON.stringify(msg)} -> ${r.status} ${r.body}`);
      assert.equal(r.body, '');
    }
    // the session still works
    const again = await post(srv, call('echo', { text: 'still here' }), { session });
    assert.equal(textOf(answerOf(again)), 'still here');
  }));

test('SSE (text/event-stream) when the call logs first: priming event, the logs, then the answer, then the end', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const ex = await post(srv, call('log_levels'), { session });
    assert.equal(ex.status, 200, ex.body);
    assert.match(ex.headers['content-type'], /^text\/event-stream/);
    assert.match(ex.headers['cache-control'] || '', /no-cache/);
    assert.equal(ex.headers['content-length'], undefined, 'a stream has no Content-Length');
    const [priming, ...rest] = ex.events;
    assert.ok(priming.id, `the first event is a priming event with an id: ${ex.body}`);
    assert.equal(priming.data ?? '', '', 'the priming event carries no message');
    assert.match(priming.retry ?? '', /^\d+$/, 'the priming event says when to retry');
    const logs = rest.filter((e) => e.message?.method === 'notifications/message');
    assert.deepEqual(
      logs.map((e) => e.message.params.level),
      ['debug', 'info', 'notice', 'warning', 'error'],
    );
    const last = rest.at(-1);
    assert.ok(last.message && 'result' in last.message, `the answer comes last: ${ex.body}`);
    assert.equal(textOf(last.message), 'logged');
    assert.equal(rest.length, 6, `only the logs and the answer: ${ex.body}`);
    for (const e of rest) {
      assert.equal(e.event ?? 'message', 'message');
      assert.ok(e.id, `every event has an id: ${ex.body}`);
    }
    const ids = ex.events.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, `event ids are unique: ${ids}`);
  }));

// }===================================================

// {=================================================== 400

test('400: a missing Mcp-Session-Id, an unsupported MCP-Protocol-Version, a body that is not JSON (-32700)', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);

    assertRefused(await post(srv, rpc('tools/list'), {}), 400, 'POST without Mcp-Session-Id');
    assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET' }) }), 400, 'GET without Mcp-Session-Id');
    assertRefused(await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE' }) }), 400, 'DELETE without Mcp-Session-Id');

    const bad = assertRefused(await post(srv, rpc('tools/list'), { session, version: '1999-01-01' }), 400, 'MCP-Protocol-Version 1999-01-01');
    assert.match(bad.error.message, /1999-01-01|Protocol-Version/i);
    assertRefused(await post(srv, rpc('tools/list'), { session, version: 'latest' }), 400, 'MCP-Protocol-Version latest');
    // a supported older version is fine, and so is none (then 2025-03-26 is assumed)
    for (const version of ['2025-06-18', '2025-03-26', null]) {
      const ok = await post(srv, rpc('tools/list'), { session, version });
      assert.equal(ok.status, 200, `MCP-Protocol-Version ${version}: ${ok.status} ${ok.body}`);
    }

    for (const body of ['{"jsonrpc":"2.0","id":1,"method":', 'not json at all']) {
      const ex = await request(srv, { headers: mcpHeaders({ session }), body });
      const err = assertRefused(ex, 400, `body ${body}`);
      assert.equal(err.error.code, -32700, ex.body);
    }
    // the session survived all of it
    assert.equal(textOf(answerOf(await post(srv, call('echo', { text: 'ok' }), { session }))), 'ok');
  }));

// }===================================================

// {=================================================== 403, and refused requests never reach Lua

test('403 for a foreign Origin or Host, on POST, GET and DELETE', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const evilOrigin = { Origin: 'http://evil.example.com' };
    const evilHost = { Host: 'evil.example.com' };
    for (const [what, extra] of [
      ['Origin', evilOrigin],
      ['Host', evilHost],
      ['Host with the right port', { Host: `evil.example.com:${srv.port}` }],
    ]) {
      assertRefused(await post(srv, rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '0' } }), { version: null, extra }), 403, `initialize, foreign ${what}`);
      assertRefused(await post(srv, rpc('tools/list'), { session, extra }), 403, `tools/list, foreign ${what}`);
      assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session, extra }) }), 403, `GET, foreign ${what}`);
      assertRefused(await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session, extra }) }), 403, `DELETE, foreign ${what}`);
    }
    // loopback origins and hosts are fine
    for (const extra of [{ Origin: `http://localhost:${srv.port}` }, { Origin: 'http://127.0.0.1:9' }, { Host: `localhost:${srv.port}` }]) {
      const ok = await post(srv, call('echo', { text: 'local' }), { session, extra });
      assert.equal(ok.status, 200, `${JSON.stringify(extra)}: ${ok.status} ${ok.body}`);
    }
    // the refused DELETEs did not end the session
    assert.equal(textOf(answerOf(await post(srv, call('echo', { text: 'alive' }), { session }))), 'alive');
  }));

test('a request refused with 403 never reaches Lua; --allow-origin admits exactly that origin', opts, async () => {
  const dir = await tempApp({ 'README': 'marker files of http-raw.test.mjs\n' });
  const marker = path.join(dir, 'touched');
  const env = { LUAMCP_HTTP_MARKER: marker };
  try {
    await withHttp(HTTP_APP, [], async (srv) => {
      const { session } = await rawInitialize(srv);
      for (const extra of [{ Origin: 'http://evil.example.com' }, { Host: 'evil.example.com' }]) {
        const ex = await post(srv, call('touch_marker'), { session, extra });
        assertRefused(ex, 403, `touch_marker with ${JSON.stringify(extra)}`);
      }
      // a later request is handled (the engine takes requests in order), and still no marker
      assert.equal(textOf(answerOf(await post(srv, call('tagged', { tag: 'x', seconds: 0 }), { session }))), 'tag x');
      assert.equal(existsSync(marker), false, 'a forbidden request ran the tool');
      // the same request without an Origin (not a browser) runs it
      const ok = await post(srv, call('touch_marker'), { session });
      assert.equal(ok.status, 200, ok.body);
      assert.equal(textOf(answerOf(ok)), 'touched');
      assert.equal(existsSync(marker), true, 'the allowed request did not run the tool');
    }, { env });

    await removeTemp(marker);
    await withHttp(HTTP_APP, ['--allow-origin', 'http://app.example'], async (srv) => {
      const { session } = await rawInitialize(srv, { extra: { Origin: 'http://app.example' } });
      for (const origin of ['http://evil.example.com', 'http://app.example.evil.com', 'https://evil.app.example']) {
        const ex = await post(srv, call('touch_marker'), { session, extra: { Origin: origin } });
        assertRefused(ex, 403, `Origin ${origin} with --allow-origin http://app.example`);
      }
      assert.equal(existsSync(marker), false, 'a forbidden request ran the tool');
      const ok = await post(srv, call('touch_marker'), { session, extra: { Origin: 'http://app.example' } });
      assert.equal(ok.status, 200, ok.body);
      assert.equal(existsSync(marker), true);
    }, { env });
  } finally {
    await removeTemp(dir);
  }
});

// }===================================================

// {=================================================== 401

test('401 with WWW-Authenticate: Bearer without the right token (--token, LUAMCP_TOKEN); 200 with it; refused calls never run', opts, async () => {
  const dir = await tempApp({ 'README': 'marker files of http-raw.test.mjs\n' });
  const marker = path.join(dir, 'touched');
  try {
    for (const [args, env, token] of [
      [['--token', 'secret'], {}, 'secret'],
      [[], { LUAMCP_TOKEN: 'env-secret' }, 'env-secret'],
    ]) {
      await removeTemp(marker);
      await withHttp(HTTP_APP, args, async (srv) => {
        const initMsg = rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '0' } });
        for (const auth of [undefined, 'Bearer wrong', `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, `Basic ${token}`, token]) {
          const ex = await post(srv, initMsg, { version: null, extra: { Authorization: auth } });
          assertRefused(ex, 401, `Authorization: ${auth}`);
          assert.match(ex.headers['www-authenticate'] || '', /^Bearer\b/, `WWW-Authenticate on 401 (Authorization: ${auth})`);
        }
        const extra = { Authorization: `Bearer ${token}` };
        const { session } = await rawInitialize(srv, { extra });
        // a refused tool call does not run
        assertRefused(await post(srv, call('touch_marker'), { session }), 401, 'touch_marker without a token');
        assertRefused(await post(srv, call('touch_marker'), { session, extra: { Authorization: 'Bearer nope' } }), 401, 'touch_marker, wrong token');
        assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }) }), 401, 'GET without a token');
        assert.equal(textOf(answerOf(await post(srv, call('tagged', { tag: 't', seconds: 0 }), { session, extra }))), 'tag t');
        assert.equal(existsSync(marker), false, 'a request without the token ran the tool');
        const ok = await post(srv, call('touch_marker'), { session, extra });
        assert.equal(ok.status, 200, ok.body);
        assert.equal(existsSync(marker), true);
      }, { env: { ...env, LUAMCP_HTTP_MARKER: marker } });
    }
  } finally {
    await removeTemp(dir);
  }
});

// }===================================================

// {=================================================== 404 / 405 / 406 / 413 / 415

test('404 for an unknown or deleted session (POST, GET, DELETE); DELETE ends the session and its GET stream', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const unknown = 'f'.repeat(32);
    assertRefused(await post(srv, rpc('tools/list'), { session: unknown }), 404, 'POST, unknown session');
    assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session: unknown }) }), 404, 'GET, unknown session');
    assertRefused(await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session: unknown }) }), 404, 'DELETE, unknown session');

    const { session } = await rawInitialize(srv);
    const stream = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }) });
    assert.equal(stream.status, 200);
    await stream.waitEvent((e) => e.id !== undefined, 'the priming event of the GET stream');
    const del = await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session }) });
    assert.ok(del.status >= 200 && del.status < 300, `DELETE: ${del.status} ${del.body}`);
    await stream.finished(WAIT, 'the GET stream of a deleted session to end');

    assertRefused(await post(srv, rpc('tools/list'), { session }), 404, 'POST after DELETE');
    assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }) }), 404, 'GET after DELETE');
    assertRefused(await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session }) }), 404, 'DELETE after DELETE');
  }));

test('405 for PUT (and PATCH); GET and DELETE in --stateless mode', opts, async () => {
  await withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    for (const method of ['PUT', 'PATCH']) {
      const ex = await request(srv, { method, headers: mcpHeaders({ session }), body: rpc('tools/list') });
      assertRefused(ex, 405, method);
      assert.match(ex.headers.allow || '', /POST/, `${method}: an Allow header naming POST`);
    }
  });
  await withHttp(FEATURES_APP, ['--stateless'], async (srv) => {
    assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET' }) }), 405, 'GET, stateless');
    assertRefused(await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session: 'a'.repeat(32) }) }), 405, 'DELETE, stateless');
  });
});

test('406 for a POST whose Accept lacks text/event-stream, and a GET whose Accept lacks it', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    assertRefused(await post(srv, call('echo', { text: 'x' }), { session, accept: 'application/json' }), 406, 'POST Accept: application/json');
    assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session, accept: 'application/json' }) }), 406, 'GET Accept: application/json');
    assertRefused(await request(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session, accept: null }) }), 406, 'GET without Accept');
    const ok = await post(srv, call('echo', { text: 'x' }), { session });
    assert.equal(ok.status, 200);
  }));

test('413 for a body over --max-body 1 (1 MB); one just under it is served', opts, () =>
  withHttp(FEATURES_APP, ['--max-body', '1'], async (srv) => {
    const { session } = await rawInitialize(srv);
    const MB = 1024 * 1024;
    const body = (size) => {
      const msg = call('echo', { text: '' });
      const overhead = Buffer.byteLength(JSON.stringify(msg));
      msg.params.arguments.text = 'x'.repeat(size - overhead);
      const data = Buffer.from(JSON.stringify(msg));
      assert.equal(data.length, size);
      return data;
    };
    const over = await request(srv, { headers: mcpHeaders({ session }), body: body(MB + 1024) });
    assertRefused(over, 413, 'a body of 1 MB + 1 KB');
    const under = await request(srv, { headers: mcpHeaders({ session }), body: body(MB - 1024) });
    assert.equal(under.status, 200, `a body of 1 MB - 1 KB: ${under.status} ${under.body.slice(0, 200)}`);
    assert.equal(textOf(answerOf(under)).length, MB - 1024 - Buffer.byteLength(JSON.stringify(call('echo', { text: '' }))));
    // no Content-Length (chunked): the limit holds while reading
    const chunked = await request(srv, { headers: { ...mcpHeaders({ session }), 'Transfer-Encoding': 'chunked' }, body: body(MB + 1024) });
    assertRefused(chunked, 413, 'a chunked body of 1 MB + 1 KB');
  }));

test('415 for Content-Type text/plain (and none)', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    assertRefused(await post(srv, call('echo', { text: 'x' }), { session, contentType: 'text/plain' }), 415, 'Content-Type text/plain');
    assertRefused(await post(srv, call('echo', { text: 'x' }), { session, contentType: null }), 415, 'no Content-Type');
    const ok = await post(srv, call('echo', { text: 'x' }), { session, contentType: 'application/json; charset=utf-8' });
    assert.equal(ok.status, 200, 'application/json with a charset parameter is fine');
  }));

// }===================================================

// {=================================================== stateless, sessions

test('--stateless: tools/call works without initialize or a session id; no Mcp-Session-Id is ever issued', opts, () =>
  withHttp(FEATURES_APP, ['--stateless'], async (srv) => {
    const echo = await post(srv, call('echo', { text: 'stateless' }));
    assert.equal(echo.status, 200, echo.body);
    assert.equal(echo.headers['mcp-session-id'], undefined);
    assert.equal(textOf(answerOf(echo)), 'stateless');
    const noVersion = await post(srv, call('echo', { text: 'no version header' }), { version: null });
    assert.equal(textOf(answerOf(noVersion)), 'no version header');

    const init = await post(srv, rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '0' } }), { version: null });
    assert.equal(init.status, 200, init.body);
    assert.equal(init.headers['mcp-session-id'], undefined, 'a stateless server issues no session');
    assert.equal(answerOf(init).result.protocolVersion, PROTOCOL_VERSION);
    const inited = await post(srv, note('notifications/initialized'));
    assert.equal(inited.status, 202);

    const list = await post(srv, rpc('tools/list'));
    assert.equal(list.status, 200);
    assert.ok(answerOf(list).result.tools.length > 0);
    // logs still stream (SSE) within one POST
    const logged = await post(srv, call('log_levels'));
    assert.match(logged.headers['content-type'], /^text\/event-stream/);
    assert.equal(textOf(answerOf(logged)), 'logged');
    assert.equal(logged.headers['mcp-session-id'], undefined);
  }));

test('session ids: at least 32 visible ASCII characters, a new one for every initialize', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await rawInitialize(srv)).session);
    for (const id of ids) assert.match(id, /^[\x21-\x7e]{32,}$/, `session id ${JSON.stringify(id)}`);
    assert.equal(new Set(ids).size, ids.length, `ids differ: ${ids}`);
    // each works on its own
    for (const session of ids) assert.equal(textOf(answerOf(await post(srv, call('echo', { text: session }), { session }))), session);
  }));

test('--session-idle 1: an idle session ends (404 after ~2 s)', opts, () =>
  withHttp(FEATURES_APP, ['--session-idle', '1'], async (srv) => {
    const { session } = await rawInitialize(srv);
    const fresh = await post(srv, rpc('tools/list'), { session });
    assert.equal(fresh.status, 200, 'a fresh session works');
    // the one wait here is the feature under test: idle for more than
    // --session-idle plus the reaper's one-second tick (any request with the
    // id would keep the session alive, so there is nothing to poll)
    await delay(2500 + ms(1000));
    assertRefused(await post(srv, rpc('tools/list'), { session }), 404, 'a request after the idle limit');
  }));

// }===================================================

// {=================================================== shutdown, SSE streams

/** One round of the graceful-shutdown test: start, put calls in flight, SIGTERM, check. */
async function shutdownRound(sessions) {
  const srv = await new HttpServer(FEATURES_APP).start();
  try {
    const ids = [];
    for (let i = 0; i < sessions; i++) ids.push((await rawInitialize(srv)).session);
    const seconds = ms(500) / 1000;
    // one call per session, each an SSE response (the tool logs before it sleeps)
    const calls = [];
    for (const session of ids) calls.push(await exchange(srv, { headers: mcpHeaders({ session }), body: call('sleep', { seconds }) }));
    for (const ex of calls) {
      assert.equal(ex.status, 200);
      await ex.waitMessage((m) => m.method === 'notifications/message', 'the log of the sleep tool: the call is in flight');
    }
    srv.terminate();
    // a request that comes while the calls finish: a clean 503 saying when to come back
    // (issue 25 item 15), never a reset
    await until(() => /finishing calls in flight/.test(srv.stderr), 'the server to take the SIGTERM');
    const late = await post(srv, call('sleep', { seconds: 0 }), { session: ids[0] });
    assert.equal(late.status, 503, late.body);
    assert.equal(late.headers['retry-after'], '1');
    assert.equal(late.headers.connection, 'close');
    assert.equal(JSON.parse(late.body).error.message, 'Server shutting down');
    for (const [i, ex] of calls.entries()) {
      await ex.until((x) => x.ended, `the end of the response of call ${i} after SIGTERM`);
      const body = JSON.stringify(ex.body);
      const answers = ex.messages.filter((m) => 'result' in m || 'error' in m);
      assert.equal(answers.length, 1, `call ${i}: the answer was lost at shutdown; body: ${body}`);
      assert.equal(textOf(answers[0]), `slept ${seconds}`);
      assert.equal(ex.error, undefined, `call ${i}: the response was cut off after the answer (${ex.error?.message}); body: ${body}`);
    }
  } catch (err) {
    err.message += `\n--- server stderr ---\n${srv.stderr}`;
    await srv.kill();
    throw err;
  }
  await srv.stopClean();
}

test('graceful shutdown: SIGTERM while slow calls are in flight -> every call still gets its whole answer, then exit 0', opts, async () => {
  // the last answer races the server's stop: a few rounds make a lost or
  // truncated answer likely to show up
  for (const sessions of [1, 1, 1, 2]) await shutdownRound(sessions);
});

test('a GET stream gets keep-alive comments (--sse-keepalive 0.2)', opts, () =>
  withHttp(FEATURES_APP, ['--sse-keepalive', '0.2'], async (srv) => {
    const { session } = await rawInitialize(srv);
    const stream = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }) });
    assert.equal(stream.status, 200);
    assert.match(stream.headers['content-type'], /^text\/event-stream/);
    assert.match(stream.headers['cache-control'] || '', /no-cache/);
    const priming = await stream.waitEvent(() => true, 'the priming event');
    assert.ok(priming.id, 'the GET stream starts with an event id');
    await stream.until((s) => s.comments.length >= 3, 'three keep-alive comments', ms(10_000));
    assert.equal(stream.messages.length, 0, `nothing but keep-alives: ${stream.body}`);
    stream.abort();
  }));

test('dead GET clients do not pin the server: 20 aborted GET streams with --threads 8, then a request still succeeds', opts, () =>
  withHttp(FEATURES_APP, ['--threads', '8', '--max-streams', '4', '--max-streams-per-peer', '4', '--sse-keepalive', '0.5'], async (srv) => {
    const sessions = [];
    for (let i = 0; i < 20; i++) sessions.push((await rawInitialize(srv)).session);
    for (const [i, session] of sessions.entries()) {
      // past 4 open streams 503, until the keep-alives find the dead ones;
      // were they never found, every later GET would be 503
      let stream;
      const t0 = Date.now();
      for (;;) {
        stream = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }), limit: ms(20_000) });
        if (stream.status !== 503 || Date.now() - t0 > ms(20_000)) break;
        assert.ok(stream.headers['retry-after'], 'Retry-After on 503');
        await stream.finished();
        await delay(100);
      }
      assert.equal(stream.status, 200, `GET stream ${i}`);
      await stream.waitEvent(() => true, `the priming event of GET stream ${i}`, ms(20_000));
      stream.abort();
    }
    const t0 = Date.now();
    const ok = await post(srv, call('echo', { text: 'not pinned' }), { session: sessions[0], limit: ms(10_000) });
    assert.equal(textOf(answerOf(ok)), 'not pinned');
    assert.ok(Date.now() - t0 < ms(10_000));
  }));

// }===================================================

test('503 with Retry-After for initialize past --max-sessions; a DELETE makes room again', opts, () =>
  withHttp(FEATURES_APP, ['--max-sessions', '2'], async (srv) => {
    const a = await rawInitialize(srv);
    await rawInitialize(srv);
    const third = await post(
      srv,
      rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '0' } }),
      { version: null },
    );
    assert.equal(third.status, 503, third.body);
    assert.ok(third.headers['retry-after'], 'Retry-After on 503');
    assert.equal(third.headers['mcp-session-id'], undefined);
    const del = await request(srv, { method: 'DELETE', headers: mcpHeaders({ session: a.session }) });
    assert.equal(del.status, 200, del.body);
    await rawInitialize(srv); // room again
  }));

test('300 sessions (the session index grows past its first size): each finds its own, deleted ones are 404, the rest still answer', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const sessions = [];
    for (let i = 0; i < 300; i++) sessions.push((await rawInitialize(srv)).session);
    assert.equal(new Set(sessions).size, 300, 'every initialize gets its own id');
    // delete every third, from the middle of the list as well as its ends
    for (let i = 0; i < sessions.length; i += 3) {
      const del = await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session: sessions[i] }) });
      assert.equal(del.status, 200, `DELETE #${i}: ${del.body}`);
    }
    for (let i = 0; i < sessions.length; i++) {
      const ex = await post(srv, rpc('ping'), { session: sessions[i] });
      if (i % 3 === 0) assertRefused(ex, 404, `ping in deleted session #${i}`);
      else assert.equal(ex.status, 200, `ping in session #${i}: ${ex.status} ${ex.body}`);
    }
  }));

test('a handler that nests C calls deeply (lua-cjson decoding 999 levels) runs on an HTTP worker without crashing the server', opts, async () => {
  const dir = await tempApp({
    'scripts/deep.lua': `local mcp = require "mcp"
local cjson = require "cjson"
mcp.tool {
  name = "nested_decode",
  input = { n = mcp.integer {} },
  handler = function(args)
    local v = cjson.decode(string.rep("[", args.n) .. string.rep("]", args.n))
    local depth = 0
    while type(v) == "table" do depth, v = depth + 1, v[1] end
    return "depth " .. depth
  end,
}`,
  });
  try {
    await withHttp(dir, ['--stateless'], async (srv) => {
      for (const n of [10, 999, 999]) {
        const ex = await post(srv, call('nested_decode', { n }));
        assert.equal(ex.status, 200, ex.body);
        assert.equal(textOf(answerOf(ex)), `depth ${n}`);
      }
    });
  } finally {
    await removeTemp(dir);
  }
});

// The slow call's wake-up comes due while the quick call runs; the quick
// call's worker must send its answer before it runs the slow call on. The
// test lets the slow call go only once it has the quick answer: held behind
// it, the slow call would spin to its max_ms and say so (events, not clocks).
test('an answer is sent when it is ready, not after other clients\' resumed calls', opts, () =>
  withHttp(BUSY_APP, ['--stateless'], async (srv) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-hol-'));
    const [started, go, flag] = ['started', 'go', 'flag'].map((f) => path.join(dir, f));
    try {
      const slow = post(srv, call('nap_until_go_then_hold', { started, go, flag, max_ms: ms(20000) }));
      await until(() => existsSync(started), 'the slow call to park');
      const quick = await post(srv, call('go_then_busy', { go, ms: 200 }));
      assert.equal(textOf(answerOf(quick)), 'busy done');
      await writeFile(flag, '');
      assert.equal(textOf(answerOf(await slow)), 'released', 'the quick answer waited for the slow call');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }));

/** A temporary folder for a busy_until_flag call: {started, flag, release(), done()}. */
async function holdEngine() {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-hold-'));
  const started = path.join(dir, 'started'), flag = path.join(dir, 'flag');
  return {
    args: { started, flag, max_ms: 120000 },
    spinning: () => until(() => existsSync(started), 'the handler holding the engine', ms(60000)),
    release: () => writeFile(flag, ''),
    done: () => rm(dir, { recursive: true, force: true }),
  };
}

// The first call holds the engine until the test lets it go (an event), so
// the second stays queued whatever the machine's load; the one wait left is
// for the second POST to reach the server before its cancel does (nothing
// outside shows a queued request), and it costs the test nothing to be long.
test('notifications/cancelled for a request still waiting in the queue: it is not answered', opts, () =>
  withHttp(BUSY_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const hold = await holdEngine();
    try {
      const first = post(srv, call('busy_until_flag', hold.args), { session });
      await hold.spinning();
      const second = post(srv, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'busy', arguments: { ms: 10 } } }, { session });
      await delay(ms(1000));
      const cancel = await post(srv, note('notifications/cancelled', { requestId: 2, reason: 'changed my mind' }), { session });
      assert.equal(cancel.status, 202);
      await hold.release();
      assert.equal(textOf(answerOf(await first)), 'released');
      const ex = await second;
      assert.ok(!ex.body.includes('busy done'), `the cancelled request was answered: ${ex.status} ${ex.body}`);
    } finally {
      await hold.done();
    }
  }));

test('while a handler spins in Lua, another client\'s initialize, tools/list and ping are answered at once', opts, () =>
  withHttp(BUSY_APP, [], async (srv) => {
    const a = await rawInitialize(srv);
    const hold = await holdEngine();
    try {
      let ended = false;
      const busy = post(srv, call('busy_until_flag', hold.args), { session: a.session }).then((ex) => { ended = true; return ex; });
      await hold.spinning();
      const b = await rawInitialize(srv); // initialize + notifications/initialized
      const list = await post(srv, rpc('tools/list', {}), { session: b.session });
      const ping = await post(srv, rpc('ping'), { session: b.session });
      assert.ok(answerOf(list).result.tools.some((t) => t.name === 'busy'));
      assert.deepEqual(answerOf(ping).result, {});
      // structural: the spinning call cannot end before the flag, so all four came while it ran
      assert.equal(ended, false);
      await hold.release();
      assert.equal(textOf(answerOf(await busy)), 'released');
    } finally {
      await hold.done();
    }
  }));

// issue 33, item 2: a reload loaded on the engine's loop, under the run lock
// the workers need; its limit is far away here (600 s), so whatever answers,
// answers during the load, and withHttp's SIGTERM must end it at once (exit 0)
test('while a reload\'s script loops at its top level, workers answer from the last good version; SIGTERM ends the load at once', opts, async () => {
  const dir = await tempApp({ 'scripts/ok.lua': 'local mcp = require "mcp"\nmcp.tool { name = "ok", description = "ok", handler = function() return "v1" end }\n' });
  const marker = path.join(dir, 'loading');
  try {
    await withHttp(dir, ['--load-timeout', '600'], async (srv) => {
      const { session } = await rawInitialize(srv);
      assert.equal(textOf(answerOf(await post(srv, call('ok'), { session }))), 'v1');
      await writeFile(path.join(dir, 'scripts', 'loop.lua'),
        `assert(io.open(${JSON.stringify(marker)}, "w")):close()\nwhile true do end\n`);
      await until(() => existsSync(marker), 'the looping script to begin loading');
      assert.deepEqual(answerOf(await post(srv, rpc('ping'), { session })).result, {});
      assert.equal(textOf(answerOf(await post(srv, call('ok'), { session }))), 'v1');
      assert.doesNotMatch(srv.stderr, /reloaded|reload failed/);
    });
  } finally {
    await removeTemp(dir);
  }
});

// /healthz and /readyz (issue 31, item 1): without a token, on the MCP listener and
// the --metrics one; a call blocked in C past --unhealthy-after makes /healthz 503
// until it returns (decided by events: a flag file ends the blocking call); /readyz
// names a dependency that does not answer (Redis for --store on a closed port).
test('/healthz and /readyz: alive and ready; a wedged engine is unhealthy until it moves; a missing dependency is not ready', opts, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-health-'));
  const flag = path.join(dir, 'go');
  const app = await tempApp({
    'scripts/wedge.lua': `local mcp = require "mcp"
mcp.tool { name = "wedge", input = { flag = mcp.string() },
  handler = function(a) os.execute("until [ -e '" .. a.flag .. "' ]; do sleep 0.05; done") return "moved" end }
`,
  });
  const closed = await freePort();
  const mport = await freePort();
  const get = async (port, p) => {
    const res = await fetch(`http://127.0.0.1:${port}${p}`);
    return { status: res.status, body: await res.json() };
  };
  try {
    await withHttp(app, ['--unhealthy-after', '0.3', '--store', `redis://127.0.0.1:${closed}/0`, '--metrics', `127.0.0.1:${mport}`], async (srv) => {
      assert.deepEqual(await get(srv.port, '/healthz'), { status: 200, body: { status: 'ok' } });
      assert.deepEqual(await get(mport, '/healthz'), { status: 200, body: { status: 'ok' } });
      const notReady = await get(srv.port, '/readyz');
      assert.equal(notReady.status, 503);
      assert.match(notReady.body.reason, new RegExp(`mcp\\.store: redis 127\\.0\\.0\\.1:${closed}/0 is not connected`));
      const REV = '2026-07-28';
      const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
      const wedged = post(srv, rpc('tools/call', { name: 'wedge', arguments: { flag }, _meta: meta }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'wedge' } });
      let seen;
      await until(async () => (seen = await get(srv.port, '/healthz')).status === 503, 'a 503 from /healthz', ms(30000));
      assert.equal(seen.body.status, 'unhealthy');
      assert.match(seen.body.reason, /held for \d+ s by one call/);
      assert.equal((await get(mport, '/healthz')).status, 503, 'the metrics listener says the same');
      await writeFile(flag, '');
      assert.equal(textOf(answerOf(await wedged)), 'moved');
      await until(async () => (await get(srv.port, '/healthz')).status === 200, 'a 200 again', ms(30000));
    });
  } finally {
    await removeTemp(app);
    await rm(dir, { recursive: true, force: true });
  }
});

// Node's fetch reuses an idle socket for the Keep-Alive hint less a second;
// without a hint it kept sockets 4 s against civetweb's 0.5 s, and a request
// sent as the server closed failed ("fetch failed") now and then.
test('keep-alive: the idle timeout is announced and held (a request 1.2 s after the last still lands)', opts, () =>
  withHttp(HTTP_APP, ['--stateless'], async (srv) => {
    const net = await import('node:net');
    const sock = net.connect(srv.port, '127.0.0.1');
    await new Promise((resolve, reject) => sock.once('connect', resolve).once('error', reject));
    let got = '';
    sock.setEncoding('utf8').on('data', (d) => (got += d));
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const req = `POST /mcp HTTP/1.1\r\nHost: ${srv.host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const answered = async (n) => {
      for (let t = 0; t < 100 && (got.match(/HTTP\/1\.1 200/g) || []).length < n; t++) await delay(20);
      return (got.match(/HTTP\/1\.1 200/g) || []).length >= n;
    };
    sock.write(req);
    assert.ok(await answered(1), `first answer: ${got}`);
    const hint = /keep-alive: timeout=(\d+)/i.exec(got);
    assert.ok(hint, `a Keep-Alive hint in ${got}`);
    assert.ok(Number(hint[1]) >= 2, 'at least 2 s, so a client that keeps a second less has one to spare');
    await delay(1200);
    assert.ok(!sock.destroyed && sock.readyState === 'open', 'still open after 1.2 s idle');
    sock.write(req);
    assert.ok(await answered(2), `second answer on the same connection: ${got}`);
    sock.destroy();
  }));

// A worker that answers its own request runs the call itself: until the call
// is handed to the engine's thread it cannot relay what the call sends.
test('a busy handler\'s progress streams while it runs (not all at its end)', opts, () =>
  withHttp(BUSY_APP, ['--stateless'], async (srv) => {
    // no clock in the verdict: the handler spins until the client, having seen its
    // first progress, makes the flag; progress held to the end would leave it
    // spinning to max_ms and answer "never released"
    const dir = await tempApp({});
    try {
      const flag = path.join(dir, 'seen');
      const max = 30000 * SCALE;
      const msg = rpc('tools/call', { name: 'busy_until_seen', arguments: { flag, max_ms: max, step: 20 }, _meta: { progressToken: 'p' } });
      const ex = await exchange(srv, { headers: mcpHeaders(), body: msg, limit: max * 2 });
      const first = await ex.waitMessage((m) => m.method === 'notifications/progress', 'the first progress', max * 2);
      assert.equal(first.params.progressToken, 'p');
      await writeFile(flag, '');
      await ex.finished(max * 2);
      assert.equal(textOf(answerOf(ex)), 'released', 'the progress reached the client while the handler ran');
    } finally {
      await removeTemp(dir);
    }
  }));

// {=================================================== CORS (--cors)

const APP_ORIGIN = 'https://app.example.com';
const EXPOSED = /^Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate$/;

/** The CORS headers of an answer to an allowed origin. */
function assertCors(ex, origin, what) {
  assert.equal(ex.headers['access-control-allow-origin'], origin, `${what}: ${JSON.stringify(ex.headers)}`);
  if (origin !== '*') assert.match(ex.headers.vary || '', /\bOrigin\b/, `${what}: Vary: Origin`);
  assert.match(ex.headers['access-control-expose-headers'] || '', EXPOSED, `${what}: exposed headers`);
  assert.equal(ex.headers['access-control-allow-credentials'], undefined, `${what}: no credentials`);
}

/** No CORS header at all. */
function assertNoCors(ex, what) {
  const cors = Object.keys(ex.headers).filter((h) => h.startsWith('access-control-'));
  assert.deepEqual(cors, [], `${what}: ${JSON.stringify(ex.headers)}`);
}

const preflight = (srv, origin, headers = 'content-type, mcp-protocol-version, mcp-session-id') =>
  request(srv, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': headers },
  });

test('--cors: a preflight from an allowed origin is 204 with the methods, the headers asked and a max age; from another, no CORS', opts, () =>
  withHttp(FEATURES_APP, ['--cors', `${APP_ORIGIN},http://localhost:6274`], async (srv) => {
    for (const origin of [APP_ORIGIN, 'http://localhost:6274', 'HTTPS://APP.example.com']) {
      const ex = await preflight(srv, origin);
      assert.equal(ex.status, 204, `${origin}: ${ex.status} ${ex.body}`);
      assertCors(ex, origin, `preflight from ${origin}`);
      assert.match(ex.headers['access-control-allow-methods'], /^GET, POST, DELETE, OPTIONS$/);
      assert.equal(ex.headers['access-control-allow-headers'], 'content-type, mcp-protocol-version, mcp-session-id');
      assert.match(ex.headers['access-control-max-age'] || '', /^\d+$/);
      assert.equal(ex.body, '');
    }
    // 2026-07-28's headers, Mcp-Param-* among them, are granted as asked
    const asked = 'Authorization, Content-Type, Last-Event-ID, Mcp-Method, Mcp-Name, Mcp-Param-Region, MCP-Protocol-Version';
    assert.equal((await preflight(srv, APP_ORIGIN, asked)).headers['access-control-allow-headers'], asked);
    // a header no client of /mcp sends: the fixed list, which lacks it (the browser refuses)
    const odd = await preflight(srv, APP_ORIGIN, 'content-type, x-evil');
    assert.equal(odd.status, 204);
    assert.doesNotMatch(odd.headers['access-control-allow-headers'], /x-evil/i);
    assert.match(odd.headers['access-control-allow-headers'], /Mcp-Session-Id/);
    // a foreign origin: refused by the Origin check, no CORS; a loopback one not named: 405 as before
    const evil = await preflight(srv, 'https://evil.example.com');
    assertRefused(evil, 403, 'preflight from a foreign origin');
    assertNoCors(evil, 'preflight from a foreign origin');
    for (const origin of ['http://localhost:9', 'https://app.example.com.evil.com', 'https://app.example.co']) {
      const ex = await preflight(srv, origin);
      assert.notEqual(ex.status, 204, `${origin}: ${ex.status}`);
      assertNoCors(ex, `preflight from ${origin}`);
    }
  }));

test('--cors: JSON and SSE answers, GET streams, DELETE and errors to an allowed origin carry the CORS headers; no Origin or another: none', opts, () =>
  withHttp(FEATURES_APP, ['--cors', APP_ORIGIN], async (srv) => {
    const extra = { Origin: APP_ORIGIN };
    const init = await rawInitialize(srv, { extra });
    assertCors(init.exchange, APP_ORIGIN, 'initialize');
    const { session } = init;
    const json = await post(srv, rpc('ping'), { session, extra });
    assert.equal(json.status, 200, json.body);
    assertCors(json, APP_ORIGIN, 'POST JSON');
    const sse = await post(srv, call('log_levels'), { session, extra });
    assert.match(sse.headers['content-type'], /^text\/event-stream/);
    assertCors(sse, APP_ORIGIN, 'POST SSE');
    const get = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session, extra }) });
    assert.equal(get.status, 200);
    assertCors(get, APP_ORIGIN, 'GET stream');
    get.req.destroy();
    assertCors(await post(srv, rpc('ping'), { session: 'nope', extra }), APP_ORIGIN, '404');
    assertCors(await post(srv, rpc('ping'), { session, extra, version: '1999-01-01' }), APP_ORIGIN, '400');
    const del = await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session, extra }) });
    assert.equal(del.status, 200);
    assertCors(del, APP_ORIGIN, 'DELETE');
    // no Origin (not a browser), or a loopback one not named: no CORS headers
    const { session: s2 } = await rawInitialize(srv);
    for (const e of [{}, { Origin: `http://localhost:${srv.port}` }]) {
      assertNoCors(await post(srv, rpc('ping'), { session: s2, extra: e }), `POST with ${JSON.stringify(e)}`);
    }
  }));

test('--cors: a 401 challenge is readable by the page (WWW-Authenticate exposed); the preflight needs no token', opts, () =>
  withHttp(HTTP_APP, ['--cors', APP_ORIGIN, '--token', 'secret'], async (srv) => {
    const pre = await preflight(srv, APP_ORIGIN, 'authorization, content-type');
    assert.equal(pre.status, 204, pre.body);
    assertCors(pre, APP_ORIGIN, 'preflight with --token');
    const initMsg = rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '0' } });
    const ex = await post(srv, initMsg, { version: null, extra: { Origin: APP_ORIGIN } });
    assertRefused(ex, 401, 'no token');
    assert.match(ex.headers['www-authenticate'] || '', /^Bearer\b/);
    assertCors(ex, APP_ORIGIN, '401');
    const ok = await post(srv, initMsg, { version: null, extra: { Origin: APP_ORIGIN, Authorization: 'Bearer secret' } });
    assert.equal(ok.status, 200, ok.body);
    assertCors(ok, APP_ORIGIN, '200 with the token');
  }));

test("--cors '*': every origin, Access-Control-Allow-Origin: *, never with a token; no --cors: OPTIONS stays 405 without CORS", opts, async () => {
  await withHttp(FEATURES_APP, ['--cors', '*'], async (srv) => {
    for (const origin of ['https://anywhere.example', 'http://localhost:6274']) {
      const pre = await preflight(srv, origin);
      assert.equal(pre.status, 204, pre.body);
      assertCors(pre, '*', `preflight from ${origin}`);
      const { session } = await rawInitialize(srv, { extra: { Origin: origin } });
      assertCors(await post(srv, rpc('ping'), { session, extra: { Origin: origin } }), '*', `POST from ${origin}`);
    }
  });
  await withHttp(FEATURES_APP, ['--cors', APP_ORIGIN, '--stateless'], async (srv) => {
    const pre = await preflight(srv, APP_ORIGIN);
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-methods'], 'POST, OPTIONS', '--stateless: no GET, no DELETE');
  });
  await withHttp(FEATURES_APP, [], async (srv) => {
    const pre = await preflight(srv, `http://localhost:${srv.port}`);
    assert.equal(pre.status, 405);
    assertNoCors(pre, 'OPTIONS without --cors');
    const { session } = await rawInitialize(srv, { extra: { Origin: `http://localhost:${srv.port}` } });
    assertNoCors(await post(srv, rpc('ping'), { session, extra: { Origin: `http://localhost:${srv.port}` } }), 'POST without --cors');
  });
});

test('--cors: a malformed origin, or * with --token, is a usage error (exit 2) before serving', opts, async () => {
  for (const [value, more] of [
    ['https://app.example.com/', []],
    ['app.example.com', []],
    ['https://app.example.com/mcp', []],
    ['ftp://app.example.com', []],
    ['https://user@app.example.com', []],
    ['https://app.example.com:99999', []],
    ['https://a.example, http://b.example/x', []],
    ['', []],
    ['*', ['--token', 'secret']],
  ]) {
    const r = await run(['serve', HTTP_APP, '--http', '0', '--cors', value, ...more], { limit: WAIT });
    assert.equal(r.code, 2, `--cors '${value}' ${more.join(' ')}: exit ${r.code} ${r.stderr}`);
    assert.match(r.stderr, value === '*' ? /--cors '\*'.*--token/ : /--cors .*(an origin is|needs an ORIGIN)/, r.stderr);
  }
});

// }===================================================
