// http-hostile.test.mjs — `luamcp serve --http` against idle and hostile
// peers (issue 15): slowloris heads and trickled bodies are dropped in
// seconds, GET streams are capped below --threads, the per-peer session and
// initialize limits, sessions that never sent notifications/initialized
// expire, a stream whose reader falls behind is parked and resumed with
// Last-Event-ID, and request framing, Expect: 100-continue, Host and Origin
// are parsed exactly. Peers are told apart by their source address: every
// 127/8 address is local on Linux, and each is its own peer. Raw sockets
// (node:net) where node:http would fix the request up.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { APPS, FEATURES_APP, TEST_TIMEOUT, WAIT, ms, removeTemp, tempApp, within } from './helpers.mjs';
import {
  PROTOCOL_VERSION,
  answerOf,
  exchange,
  mcpHeaders,
  post,
  rawInitialize,
  request,
  rpc,
  withHttp,
} from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const call = (name, args = {}) => rpc('tools/call', { name, arguments: args });
const textOf = (msg) => msg.result.content.map((c) => c.text).join('\n');
const initMsg = () => rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'hostile', version: '0' } });

/** A refused request: this status, a JSON-RPC error body with id null, no session. */
function assertRefused(ex, status, what) {
  assert.equal(ex.status, status, `${what}: expected ${status}, got ${ex.status} ${ex.body}`);
  const body = JSON.parse(ex.body);
  assert.equal(body.id, null, `${what}: ${ex.body}`);
  assert.equal(typeof body.error?.code, 'number', `${what}: ${ex.body}`);
  assert.equal(ex.headers['mcp-session-id'], undefined, `${what}: no session may be issued`);
  return body;
}

/**
 * A raw connection to srv: `data` collects what comes back (latin1),
 * `until(pred)` waits for it, `closed` resolves when the server closes it.
 */
function rawConn(srv, { localAddress } = {}) {
  const sock = net.connect({ host: '127.0.0.1', port: srv.port, localAddress });
  const conn = { sock, data: '', t0: Date.now(), closedAt: null };
  let waiters = [];
  const wake = () => {
    for (const w of waiters) w();
  };
  conn.opened = new Promise((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  conn.closed = new Promise((resolve) =>
    sock.on('close', () => {
      conn.closedAt = Date.now();
      wake();
      resolve(conn);
    }),
  );
  sock.on('data', (d) => {
    conn.data += d.toString('latin1');
    wake();
  });
  sock.on('error', () => {}); // a reset shows up as the close
  conn.until = (pred, what, limit = WAIT) =>
    within(
      new Promise((resolve, reject) => {
        const w = () => {
          if (pred(conn)) {
            waiters = waiters.filter((x) => x !== w);
            resolve(conn);
          } else if (conn.closedAt) {
            waiters = waiters.filter((x) => x !== w);
            reject(new Error(`the connection closed before ${what}; got: ${conn.data.slice(0, 2000)}`));
          }
        };
        waiters.push(w);
        w();
      }),
      limit,
      `${what}; got so far: ${conn.data.slice(0, 2000)}`,
    );
  return conn;
}

/** The status codes of the responses in raw, in order. */
const statuses = (raw) => [...raw.matchAll(/(?:^|\r\n)HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

const postHead = (srv, { session, length, extra = '' } = {}) =>
  `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\n` +
  'Accept: application/json, text/event-stream\r\n' +
  (session ? `Mcp-Session-Id: ${session}\r\n` : '') +
  (length !== undefined ? `Content-Length: ${length}\r\n` : '') +
  extra +
  '\r\n';

// {=================================================== workers: slow peers, streams

test('slowloris: peers sending their head a byte at a time are dropped after --header-timeout, and a client waiting behind them is served', opts, () =>
  withHttp(FEATURES_APP, ['--threads', '4', '--header-timeout', '1'], async (srv) => {
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nX-Pad: ${'a'.repeat(200)}\r\n`;
    const peers = [];
    for (let i = 0; i < 4; i++) {
      const c = rawConn(srv, { localAddress: `127.0.2.${i + 1}` });
      await c.opened;
      c.sock.write(head[0]);
      peers.push(c);
    }
    let i = 1;
    const tick = setInterval(() => {
      for (const c of peers) if (!c.sock.destroyed) c.sock.write(head[i % head.length]);
      i++;
    }, 100);
    try {
      await delay(200); // every worker is reading a slow head now
      // queued behind them: served once they are dropped, not after 30 s
      const { session } = await rawInitialize(srv);
      assert.equal(textOf(answerOf(await post(srv, call('echo', { text: 'served' }), { session }))), 'served');
      for (const c of peers) await within(c.closed, ms(10_000), 'the server to drop a slowloris peer');
      for (const c of peers) assert.ok(c.closedAt - c.t0 < ms(8000), `a slow head was kept ${c.closedAt - c.t0} ms`);
    } finally {
      clearInterval(tick);
      for (const c of peers) c.sock.destroy();
    }
  }));

test('a body trickled a byte at a time gets 408 after --body-timeout, and the connection closes', opts, () =>
  withHttp(FEATURES_APP, ['--body-timeout', '1', '--header-timeout', '1'], async (srv) => {
    const { session } = await rawInitialize(srv);
    const c = rawConn(srv);
    await c.opened;
    c.sock.write(`${postHead(srv, { session, length: 100_000 })}{`);
    const tick = setInterval(() => c.sock.destroyed || c.sock.write(' '), 50);
    try {
      await within(c.closed, ms(10_000), 'the server to give up on a trickled body');
      assert.deepEqual(statuses(c.data), [408], c.data);
      assert.match(c.data, /"id":null/);
    } finally {
      clearInterval(tick);
      c.sock.destroy();
    }
    assert.equal(textOf(answerOf(await post(srv, call('echo', { text: 'still' }), { session }))), 'still');
  }));

test('GET streams are capped (--max-streams defaults to a fifth of --threads): 503 with Retry-After past it, requests are still served, a closed stream makes room', opts, () =>
  withHttp(FEATURES_APP, ['--threads', '10', '--sse-keepalive', '0.2'], async (srv) => {
    const sessions = [];
    for (let i = 0; i < 3; i++) sessions.push((await rawInitialize(srv)).session);
    // three addresses: one address may hold only half of the pool (--max-streams-per-peer)
    const addr = (session) => `127.0.4.${sessions.indexOf(session) + 1}`;
    const get = (session) => exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }), localAddress: addr(session) });
    const open = [];
    for (const session of sessions.slice(0, 2)) {
      const s = await get(session);
      assert.equal(s.status, 200);
      await s.waitEvent(() => true, 'the priming event');
      open.push(s);
    }
    const third = await get(sessions[2]);
    await third.finished();
    assertRefused(third, 503, 'a GET past the cap');
    assert.ok(Number(third.headers['retry-after']) > 0, 'Retry-After on 503');
    // the other 8 workers serve requests, several at once
    const calls = await Promise.all(sessions.map((session) => post(srv, call('echo', { text: session }), { session })));
    for (const [i, ex] of calls.entries()) assert.equal(textOf(answerOf(ex)), sessions[i]);
    // a client going away frees its slot (its keep-alive fails)
    open[0].abort();
    const t0 = Date.now();
    let again;
    do {
      if (again) await delay(100);
      again = await get(sessions[2]);
      if (again.status === 503) await again.finished();
    } while (again.status === 503 && Date.now() - t0 < ms(10_000));
    assert.equal(again.status, 200, 'a GET once a stream was closed');
    again.abort();
    open[1].abort();
  }));

// }===================================================

// {=================================================== sessions: per-peer limits, unacknowledged sessions

test('--max-sessions-per-peer: 429 with Retry-After for one address past it, other addresses are served; a DELETE makes room', opts, () =>
  withHttp(FEATURES_APP, ['--max-sessions-per-peer', '3'], async (srv) => {
    const A = '127.0.3.1';
    const B = '127.0.3.2';
    const mine = [];
    for (let i = 0; i < 3; i++) mine.push((await rawInitialize(srv, { localAddress: A })).session);
    const fourth = await post(srv, initMsg(), { version: null, localAddress: A });
    assertRefused(fourth, 429, 'a fourth session from one address');
    // when its least recently used session may be ended for a new one: after 60 s idle
    const retry = Number(fourth.headers['retry-after']);
    assert.ok(retry >= 50 && retry <= 60, `Retry-After: ${retry}`);
    await rawInitialize(srv, { localAddress: B }); // another peer is not affected
    const del = await request(srv, { method: 'DELETE', headers: mcpHeaders({ method: 'DELETE', session: mine[0] }), localAddress: A });
    assert.equal(del.status, 200, del.body);
    await rawInitialize(srv, { localAddress: A });
  }));

test('--init-rate: one address flooding initialize gets 429 once its bucket (10 s worth) is empty; another address is served', opts, () =>
  withHttp(FEATURES_APP, ['--init-rate', '2'], async (srv) => {
    const A = '127.0.4.1';
    let ok = 0;
    let refused;
    while (ok < 100) {
      const r = await post(srv, initMsg(), { version: null, localAddress: A });
      if (r.status !== 200) {
        refused = r;
        break;
      }
      ok++;
    }
    assert.ok(refused, 'a flood of initialize was never refused');
    assertRefused(refused, 429, 'initialize past the rate');
    assert.ok(ok >= 20, `only ${ok} initialize before 429: the bucket holds 20`);
    assert.ok(Number(refused.headers['retry-after']) >= 1, 'Retry-After on 429');
    // the body names the flag: a load test from one address knows what to change
    assert.match(JSON.parse(refused.body).error.message, /\(--init-rate 2 per second\).*--init-rate 0 \(no limit\)/);
    await rawInitialize(srv, { localAddress: '127.0.4.2' });
  }));

test('--init-timeout 1: a session that never sent notifications/initialized ends soon; an initialized one stays', opts, () =>
  withHttp(FEATURES_APP, ['--init-timeout', '1'], async (srv) => {
    const acked = await rawInitialize(srv);
    const init = await post(srv, initMsg(), { version: null });
    assert.equal(init.status, 200, init.body);
    const unacked = init.headers['mcp-session-id'];
    // the one wait here is the feature under test (as for --session-idle):
    // idle for more than the limit plus the reaper's one-second tick
    await delay(2500 + ms(1000));
    assertRefused(await post(srv, rpc('ping'), { session: unacked }), 404, 'a session never initialized, after the limit');
    assert.deepEqual(answerOf(await post(srv, rpc('ping'), { session: acked.session })).result, {});
  }));

// }===================================================

// {=================================================== a reader that falls behind

test('a client that stops reading while a tool logs fast: its response ends (parked, --stream-buffer), and GET with Last-Event-ID brings the answer', opts, async () => {
  const dir = await tempApp({
    'scripts/flood.lua': `local mcp = require "mcp"
mcp.tool {
  name = "flood",
  input = { n = mcp.integer {}, size = mcp.integer {} },
  handler = function(args, ctx)
    local line = ("x"):rep(args.size)
    for i = 1, args.n do ctx:info(line) end
    return "flooded " .. args.n
  end,
}`,
  });
  try {
    await withHttp(dir, ['--stream-buffer', '0.0625', '--header-timeout', '1'], async (srv) => {
      const { session } = await rawInitialize(srv);
      const n = 32_000; // 32 MB of logs: far more than the socket buffers hold
      const body = JSON.stringify(call('flood', { n, size: 1000 }));
      const c = rawConn(srv);
      await c.opened;
      c.sock.write(postHead(srv, { session, length: Buffer.byteLength(body) }) + body);
      await c.until((x) => /\r\n\r\n[\s\S]*?id: (\d+)-/.test(x.data), 'the SSE head and the priming event');
      const streamId = /\r\n\r\n[\s\S]*?id: (\d+)-/.exec(c.data)[1];
      c.sock.pause(); // stop reading: the socket buffers fill, then the server's unsent lines
      await delay(ms(3000));
      c.sock.resume();
      // the response ends (or the connection does) without the answer
      await c.until((x) => x.closedAt || /\r\n0\r\n\r\n/.test(x.data) || x.data.includes('flooded'), 'the end of the POST response', ms(30_000));
      assert.ok(!c.data.includes('"flooded'), 'the whole flood was relayed to a client that did not read');
      assert.ok(c.data.length < n * 1000 / 2, `${c.data.length} bytes relayed`);
      c.sock.destroy();
      const seen = [...c.data.matchAll(/id: (\d+)-(\d+)\n/g)].map((m) => Number(m[2]));
      const last = seen.length ? Math.max(...seen) : 0;
      // resumed: what the ring kept, then the rest live, then the answer
      const resumed = await exchange(srv, {
        method: 'GET',
        headers: mcpHeaders({ method: 'GET', session, extra: { 'Last-Event-ID': `${streamId}-${last}` } }),
      });
      assert.equal(resumed.status, 200);
      const answer = await resumed.waitMessage((m) => 'result' in m, 'the answer on the resumed stream', ms(30_000));
      assert.equal(textOf(answer), `flooded ${n}`);
      await resumed.finished();
      const ids = resumed.events.filter((e) => e.message).map((e) => Number(e.id.split('-')[1]));
      assert.ok(ids.every((q) => q > last), `replayed events come after ${last}: ${ids.slice(0, 5)}`);
      assert.equal(textOf(answerOf(await post(srv, call('flood', { n: 1, size: 1 }), { session }))), 'flooded 1');
    });
  } finally {
    await removeTemp(dir);
  }
});

// }===================================================

// {=================================================== framing, Expect, Host, Origin

test('Content-Length with Transfer-Encoding (or two Content-Lengths, or one not a number) is 400 and the connection closes: nothing smuggled after it runs', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    // behind a proxy that frames by Content-Length, the DELETE would be
    // part of this body; read as chunked, it is a request of its own
    const smuggled = `DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nMcp-Session-Id: ${session}\r\n\r\n`;
    const payload = `0\r\n\r\n${smuggled}`;
    const cases = [
      [postHead(srv, { session, length: payload.length, extra: 'Transfer-Encoding: chunked\r\n' }) + payload, 'Content-Length and Transfer-Encoding'],
      [postHead(srv, { session, length: 0, extra: `Content-Length: ${smuggled.length}\r\n` }) + smuggled, 'two Content-Lengths'],
      [postHead(srv, { session, length: '0x' }) + smuggled, 'Content-Length: 0x'],
    ];
    for (const [raw, what] of cases) {
      const c = rawConn(srv);
      await c.opened;
      c.sock.write(raw);
      await within(c.closed, WAIT, `the server to close the connection (${what})`);
      assert.deepEqual(statuses(c.data), [400], `${what}: ${c.data}`);
      assert.match(c.data, /"id":null/, what);
    }
    // the session was not deleted by any of them
    assert.equal(textOf(answerOf(await post(srv, call('echo', { text: 'alive' }), { session }))), 'alive');
  }));

test('Expect: 100-continue gets "100 Continue" before the body is sent; another expectation gets 417', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const body = JSON.stringify(call('echo', { text: 'after continue' }));
    const c = rawConn(srv);
    await c.opened;
    c.sock.write(postHead(srv, { session, length: Buffer.byteLength(body), extra: 'Expect: 100-continue\r\n' }));
    await c.until((x) => x.data.includes('\r\n\r\n'), 'HTTP/1.1 100 Continue');
    assert.ok(c.data.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), c.data);
    c.sock.write(body);
    await c.until((x) => /HTTP\/1\.1 200 [\s\S]*after continue/.test(x.data), 'the answer');
    c.sock.destroy();

    const other = await post(srv, call('echo', { text: 'x' }), { session, extra: { Expect: 'something-else' } });
    assertRefused(other, 417, 'Expect: something-else');
  }));

test('Host and Origin are parsed exactly: no userinfo, a numeric port, http(s) only', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    for (const host of ['localhost:evil', `localhost:${srv.port}x`, 'user@localhost', 'localhost:99999', 'localhost:', '[::1', `127.0.0.1:${srv.port}/mcp`]) {
      assertRefused(await post(srv, call('echo', { text: 'x' }), { session, extra: { Host: host } }), 400, `Host: ${host}`);
    }
    for (const host of ['localhost.evil.com', 'evil.com:80', '127.0.0.1.evil.com']) {
      assertRefused(await post(srv, call('echo', { text: 'x' }), { session, extra: { Host: host } }), 403, `Host: ${host}`);
    }
    for (const origin of [
      'http://localhost:@evil.com',
      'http://localhost@evil.com',
      'http://user:pass@localhost',
      'ftp://localhost',
      'file://localhost',
      'localhost',
      'null',
      'http://localhost:evil',
      'http://localhost.evil.com',
      'http://127.0.0.1/path',
      'http://localhost:99999',
    ]) {
      assertRefused(await post(srv, call('echo', { text: 'x' }), { session, extra: { Origin: origin } }), 403, `Origin: ${origin}`);
    }
    for (const [name, value] of [
      ['Host', `localhost:${srv.port}`],
      ['Host', `[::1]:${srv.port}`],
      ['Host', 'LOCALHOST'],
      ['Origin', 'http://localhost:3000'],
      ['Origin', 'https://127.0.0.1'],
      ['Origin', 'http://[::1]:8080'],
    ]) {
      const ok = await post(srv, call('echo', { text: 'ok' }), { session, extra: { [name]: value } });
      assert.equal(ok.status, 200, `${name}: ${value}: ${ok.status} ${ok.body}`);
    }
  }));

// }===================================================

// {=================================================== subscriptions/listen: one stream pool, per peer, bounded filters

const MODERN_APP = path.join(APPS, 'modern');
const REV = '2026-07-28';
const meta = () => ({ 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} });
const listenMsg = (notifications, id = nextListen++) => rpc('subscriptions/listen', { _meta: meta(), notifications }, id);
let nextListen = 1000;
const listen = (srv, notifications, localAddress) =>
  exchange(srv, { method: 'POST', body: listenMsg(notifications), localAddress,
                  headers: mcpHeaders({ version: REV, extra: { 'Mcp-Method': 'subscriptions/listen' } }) });
const acked = (ex) => ex.waitEvent((e) => e.message?.method === 'notifications/subscriptions/acknowledged', 'the acknowledgement');

test('subscriptions/listen streams count in the --max-streams pool and per address: 429 for the address past its half, 503 past the pool, requests still served, a closed one makes room', opts, () =>
  withHttp(MODERN_APP, ['--threads', '10', '--max-streams', '4', '--sse-keepalive', '0.2'], async (srv) => {
    const A = '127.0.5.1', B = '127.0.5.2', C = '127.0.5.3';
    const open = [];
    for (const addr of [A, A]) {
      const ex = await listen(srv, { toolsListChanged: true }, addr);
      assert.equal(ex.status, 200);
      await acked(ex);
      open.push(ex);
    }
    const third = await listen(srv, { toolsListChanged: true }, A);
    await third.finished();
    assert.equal(third.status, 429, third.body);
    assert.equal(JSON.parse(third.body).error.code, -32603);
    assert.ok(Number(third.headers['retry-after']) > 0, 'Retry-After on 429');
    // a GET stream of a 2025 session shares the pool
    const { session } = await rawInitialize(srv, { localAddress: B });
    const get = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }), localAddress: B });
    assert.equal(get.status, 200);
    const fourth = await listen(srv, { toolsListChanged: true }, B);
    await acked(fourth);
    const full = await listen(srv, { toolsListChanged: true }, C);
    await full.finished();
    assert.equal(full.status, 503, full.body);
    // the workers left serve requests
    const echo = rpc('tools/call', { name: 'echo', arguments: { text: 'served' }, _meta: meta() });
    const ok = await post(srv, echo, { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'echo' }, localAddress: C });
    assert.equal(textOf(answerOf(ok)), 'served');
    // a client that closes its listen gives its place back
    open[0].abort();
    const t0 = Date.now();
    let again;
    do {
      if (again) await delay(100);
      again = await listen(srv, { toolsListChanged: true }, C);
      if (again.status !== 200) await again.finished();
    } while (again.status === 503 && Date.now() - t0 < ms(10_000));
    assert.equal(again.status, 200, 'a listen once a stream was closed');
    await acked(again);
    for (const ex of [open[1], get, fourth, again]) ex.abort();
  }));

test('a listen filter is bounded: more than 1024 URIs (or 256 KiB of them) is -32602, duplicates are kept once', opts, () =>
  withHttp(MODERN_APP, [], async (srv) => {
    const many = await listen(srv, { resourceSubscriptions: Array(300_000).fill('') });
    await many.finished();
    const err = JSON.parse(many.body).error;
    assert.equal(err.code, -32602);
    assert.match(err.message, /at most 1024 URIs/);
    const long = await listen(srv, { resourceSubscriptions: Array(40).fill(0).map((_, i) => `test://modern/${i}/${'x'.repeat(8000)}`) });
    await long.finished();
    assert.match(JSON.parse(long.body).error.message, /at most 256 KiB/);
    const dup = await listen(srv, { resourceSubscriptions: Array(1024).fill('test://modern/a') });
    const ack = await acked(dup);
    assert.deepEqual(ack.message.params.notifications.resourceSubscriptions, ['test://modern/a']);
    dup.abort();
  }));

// }===================================================

test('--trust-proxy: a forwarded loopback client is loopback however its address is written (Host checked)', opts, () =>
  withHttp(FEATURES_APP, ['--trust-proxy', '127.0.0.1'], async (srv) => {
    const init = (xff, host) => post(srv, initMsg(), { version: null, extra: { 'X-Forwarded-For': xff, 'X-Forwarded-Host': host } });
    for (const xff of ['127.0.0.1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1', '::1', '::ffff:7f00:2']) {
      assertRefused(await init(xff, 'rebound.example'), 403, `X-Forwarded-For: ${xff} with a foreign Host`);
      assert.equal((await init(xff, 'localhost')).status, 200, `X-Forwarded-For: ${xff} with Host localhost`);
    }
    // a remote client behind the proxy: its Host is the service's name, not checked against loopback
    assert.equal((await init('203.0.113.5', 'mcp.example')).status, 200);
  }));
