// client.test.mjs — mcp.client (core/io/mcp_client.c, lua/client.lua): the
// tools of a luamcp app (tests/apps/client-gateway) call other MCP servers.
// Real upstreams: the official server-everything over stdio and Streamable
// HTTP, a luamcp app (tests/apps/client-upstream) over HTTP in both
// revisions and over stdio; and a raw HTTP server of the test's that
// answers, answers garbage, or never answers. Cancellation reaches the
// upstream, a killed upstream is an error and then a new process, and the
// bearer token of our own client never reaches an upstream.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { cp } from 'node:fs/promises';
import { createRequire } from 'node:module';

import { APPS, BIN, REPO_ROOT, TEST_TIMEOUT, WAIT, removeTemp, watchLines, within, withRaw } from './helpers.mjs';
import { answerOf, freePort, mcpHeaders, post, rpc, withHttp, HttpServer } from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const GW = path.join(APPS, 'client-gateway');
const UP = path.join(APPS, 'client-upstream');
const EVERYTHING = path.join(REPO_ROOT, 'tests', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const UPSTREAM_TOKEN = 'upstream-token-7f3a';

// {====== the upstreams every test shares

let up, every, raw, marks, refusedUrl;

/** server-everything's Streamable HTTP transport on a free port. */
async function startEverything() {
  const port = await freePort();
  const child = spawn('node', [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  await within(new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d) => {
      err += d;
      if (err.includes(`listening on port ${port}`)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`server-everything exited (${code}): ${err}`)));
  }), WAIT, 'server-everything to listen');
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

/** /legacy: a 2025-11-25 server (discover refused) whose first session it
    forgets after initialize: a call on it is answered 404. */
function legacy(state, req, res, m) {
  const json = (status, v, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(v));
  };
  if (m.method === 'server/discover') return json(400, { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  if (m.method === 'initialize') {
    state.sessions = (state.sessions || 0) + 1;
    return json(200, { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'legacy', version: '1' } } },
      { 'mcp-session-id': `s${state.sessions}` });
  }
  if (!m.id) { res.writeHead(202); return res.end(); }
  if (req.headers['mcp-session-id'] === 's1') return json(404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
  return json(200, { jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: `legacy ok on ${req.headers['mcp-session-id']}` }] } });
}

/** The raw upstream: POST /ok answers like a 2026-07-28 server, /garbage
    answers a body that is no JSON, /hang holds the request (closed tells
    when the client gave up). Every request's headers are kept. */
function startRaw() {
  const state = { requests: [], closed: [] };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d) => (body += d));
    req.on('end', () => {
      state.requests.push({ path: req.url, headers: req.headers, body });
      if (req.url === '/garbage') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"jsonrpc": "2.0", "id": garbage');
      }
      if (req.url === '/hang') {
        res.on('close', () => state.closed.push(JSON.parse(body).method));
        return; // never answered
      }
      const m = JSON.parse(body);
      if (req.url === '/legacy') return legacy(state, req, res, m);
      const result = m.method === 'server/discover'
        ? { supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' }, resultType: 'complete' }
        : { content: [{ type: 'text', text: 'raw ok' }], resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    state.server = server;
    state.base = `http://127.0.0.1:${server.address().port}`;
    resolve(state);
  }));
}

before(async () => {
  marks = await mkdtemp(path.join(tmpdir(), 'luamcp-client-'));
  up = await new HttpServer(UP, [], { env: { CLIENT_MARKS: marks } }).start();
  every = await startEverything();
  raw = await startRaw();
  refusedUrl = `http://127.0.0.1:${await freePort()}/mcp`; // nothing listens there
});

after(async () => {
  every?.child.kill('SIGKILL');
  raw?.server.closeAllConnections();
  raw?.server.close();
  await up?.kill();
  await removeTemp(marks);
});

const gwEnv = () => ({
  ...process.env, EVERYTHING, EVERYTHING_URL: every.url, UP_URL: up.url, LUAMCP: BIN, UP_APP: UP,
  CLIENT_MARKS: marks, RAW_BASE: raw.base, REFUSED_URL: refusedUrl, UPSTREAM_TOKEN,
});

// }======

// {====== calling the gateway's tools

let nextId = 1;
/** tools/call of the gateway's tool; {isError, text, json} */
async function tool(gw, name, args, id = nextId++) {
  const r = await gw.call(id, 'tools/call', { name, arguments: args });
  assert.ok(r.result, `${name}: ${JSON.stringify(r)}`);
  return shape(r.result);
}
function shape(result) {
  const text = result.content?.[0]?.text;
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { isError: result.isError === true, text, json };
}
const ok = (r) => {
  assert.ok(!r.isError, `an error: ${r.text}`);
  return r.json;
};
/** The file's text once it exists (the upstream's marks). */
async function markOf(name) {
  const file = path.join(marks, name);
  return within((async () => {
    for (;;) {
      try { return await readFile(file, 'utf8'); } catch { await new Promise((r) => setTimeout(r, 20)); }
    }
  })(), WAIT, `the mark ${name}`);
}
const withGateway = (body, args = []) => withRaw([...args, GW], async (gw) => {
  await gw.initialize();
  return body(gw);
}, { env: gwEnv() });

// }======

test('server-everything over stdio and over Streamable HTTP: list, call, read, prompt, complete', opts, () =>
  withGateway(async (gw) => {
    for (const upName of ['every_stdio', 'every_http']) {
      const tools = ok(await tool(gw, 'run', { up: upName, op: 'list', name: 'tools' }));
      const names = tools.map((t) => t.name);
      assert.ok(names.includes('echo') && names.includes('get-sum'), `${upName}: ${names}`);
      const echo = ok(await tool(gw, 'run', { up: upName, op: 'call', name: 'echo', args: { message: 'hi' } }));
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: hi' }]);
      const sum = ok(await tool(gw, 'run', { up: upName, op: 'call', name: 'get-sum', args: { a: 2, b: 40 } }));
      assert.match(sum.content[0].text, /42/);
      const resources = ok(await tool(gw, 'run', { up: upName, op: 'list', name: 'resources' }));
      assert.ok(resources.length > 0, upName);
      const read = ok(await tool(gw, 'run', { up: upName, op: 'read', name: resources[0].uri }));
      assert.equal(read.contents[0].uri, resources[0].uri);
      const prompts = ok(await tool(gw, 'run', { up: upName, op: 'list', name: 'prompts' })).map((p) => p.name);
      assert.ok(prompts.includes('args-prompt'), `${upName}: ${prompts}`);
      const prompt = ok(await tool(gw, 'run', { up: upName, op: 'prompt', name: 'args-prompt', args: { city: 'Lyon' } }));
      assert.match(JSON.stringify(prompt.messages), /Lyon/);
      const done = ok(await tool(gw, 'run', { up: upName, op: 'complete', ref: { type: 'ref/prompt', name: 'completable-prompt' }, args: { name: 'department', value: 'S' } }));
      assert.deepEqual(done.completion.values.sort(), ['Sales', 'Support']);
      // a tool the upstream does not have: its SDK answers an isError result, returned as one
      const none = ok(await tool(gw, 'caught', { up: upName, name: 'no-such-tool' }));
      assert.equal(none.ok, true);
      assert.equal(none.result.isError, true);
    }
  }));

test('a luamcp upstream, 2026-07-28 and 2025-11-25 over HTTP and over stdio: list, call, read, prompt, complete, progress, errors', opts, () =>
  withGateway(async (gw) => {
    for (const upName of ['up_modern', 'up_legacy', 'up_stdio']) {
      const tools = ok(await tool(gw, 'run', { up: upName, op: 'list', name: 'tools' })).map((t) => t.name);
      assert.deepEqual(tools.sort(), ['big', 'echo', 'fail', 'slow', 'steps', 'whoami']);
      const echo = ok(await tool(gw, 'run', { up: upName, op: 'call', name: 'echo', args: { text: 'hello' } }));
      assert.deepEqual(echo.content, [{ type: 'text', text: 'hello' }]);
      // the revision spoken: a 2026-07-28 result says so
      assert.equal(echo.resultType, upName === 'up_legacy' ? undefined : 'complete', upName);
      const fail = ok(await tool(gw, 'run', { up: upName, op: 'call', name: 'fail', args: {} }));
      assert.equal(fail.isError, true, 'an isError result is returned as a result');
      const read = ok(await tool(gw, 'run', { up: upName, op: 'read', name: 'test://up/a' }));
      assert.equal(read.contents[0].text, 'resource a');
      const templates = ok(await tool(gw, 'run', { up: upName, op: 'list', name: 'resourceTemplates' }));
      assert.deepEqual(templates.map((t) => t.uriTemplate), ['test://up/items/{id}']);
      const prompt = ok(await tool(gw, 'run', { up: upName, op: 'prompt', name: 'greet', args: { who: 'Ann' } }));
      assert.deepEqual(prompt.messages, [{ role: 'user', content: { type: 'text', text: 'Hello, Ann' } }]);
      const done = ok(await tool(gw, 'run', { up: upName, op: 'complete', ref: { type: 'ref/resource', uri: 'test://up/items/{id}' }, args: { name: 'id', value: '1' } }));
      assert.deepEqual(done.completion.values, ['1', '10', '11']);
      const steps = ok(await tool(gw, 'progress', { up: upName, name: 'steps' }));
      assert.deepEqual(steps.progress, [{ progress: 1, total: 2, message: 'half' }, { progress: 2, total: 2, message: 'done' }]);
      // a JSON-RPC error (luamcp answers -32602 for an unknown tool), raised as the documented table
      const bad = ok(await tool(gw, 'caught', { up: upName, name: 'no-such-tool' }));
      assert.equal(bad.ok, false);
      assert.equal(bad.code, -32602, JSON.stringify(bad));
      assert.equal(bad.upstream, upName);
      assert.match(bad.message, new RegExp(`^upstream ${upName}: tools/call: .*\\(-32602\\)$`));
      // not caught: an isError naming the handler's line and the upstream
      const raised = await tool(gw, 'run', { up: upName, op: 'call', name: 'nothing-here', args: {} });
      assert.equal(raised.isError, true);
      assert.match(raised.text, new RegExp(`gw\\.lua:\\d+: upstream ${upName}: tools/call: `));
    }
  }));

test('an ad-hoc client: a URL no declaration names', opts, () =>
  withGateway(async (gw) => {
    const r = ok(await tool(gw, 'adhoc', { url: up.url, text: 'ad hoc' }));
    assert.equal(r.name, 'mcp.client(127.0.0.1)');
    assert.deepEqual(r.result.content, [{ type: 'text', text: 'ad hoc' }]);
    const bad = await tool(gw, 'adhoc', { url: 'ftp://127.0.0.1/', text: 'x' });
    assert.equal(bad.isError, true);
    assert.match(bad.text, /gw\.lua:\d+: mcp\.client: url must be an http:\/\/ or https:\/\/ URL/);
  }));

test('a 2025-11-25 session the upstream forgot (404): one new handshake, and the call goes through', opts, () =>
  withGateway(async (gw) => {
    const r = ok(await tool(gw, 'run', { up: 'legacy', op: 'call', name: 'x', args: {} }));
    assert.deepEqual(r.content, [{ type: 'text', text: 'legacy ok on s2' }]);
    assert.equal(raw.sessions, 2);
  }));

test('a cancelled call cancels its upstream request (notifications/cancelled)', opts, () =>
  withGateway(async (gw) => {
    const id = nextId++;
    gw.send(rpc('tools/call', { name: 'run', arguments: { up: 'up_stdio', op: 'call', name: 'slow', args: { tag: 'c1' } } }, id));
    assert.equal(await markOf('started-c1'), 'started');
    gw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the test' } });
    // the upstream's call ended as cancelled: its cleanup said so
    assert.equal(await markOf('cancelled-c1'), 'cancelled');
    // and the gateway serves on, with the same child
    assert.deepEqual(ok(await tool(gw, 'run', { up: 'up_stdio', op: 'call', name: 'echo', args: { text: 'after' } })).content[0].text, 'after');
  }));

test('over HTTP too: the request is closed, and a 2025-11-25 session gets notifications/cancelled', opts, () =>
  withGateway(async (gw) => {
    const id = nextId++;
    gw.send(rpc('tools/call', { name: 'run', arguments: { up: 'up_legacy', op: 'call', name: 'slow', args: { tag: 'h1' } } }, id));
    assert.equal(await markOf('started-h1'), 'started');
    gw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the test' } });
    assert.equal(await markOf('cancelled-h1'), 'cancelled');
  }));

test('an upstream killed mid-call: an error naming it, and the next call runs on a new process', opts, () =>
  withGateway(async (gw) => {
    const first = ok(await tool(gw, 'run', { up: 'up_stdio', op: 'call', name: 'whoami', args: {} })).structuredContent.pid;
    const id = nextId++;
    const pending = gw.call(id, 'tools/call', { name: 'run', arguments: { up: 'up_stdio', op: 'call', name: 'slow', args: { tag: 'k1' } } });
    await markOf('started-k1');
    process.kill(first, 'SIGKILL');
    const r = shape((await pending).result);
    assert.equal(r.isError, true);
    assert.match(r.text, /upstream up_stdio: the process ended/);
    const second = ok(await tool(gw, 'run', { up: 'up_stdio', op: 'call', name: 'whoami', args: {} })).structuredContent.pid;
    assert.notEqual(second, first);
  }));

test('refused, garbage, hung: errors naming the upstream, and the server answers meanwhile', opts, () =>
  withGateway(async (gw) => {
    const refused = await tool(gw, 'run', { up: 'refused', op: 'call', name: 'x', args: {} });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /upstream refused: server\/discover: |upstream refused: /);
    const garbage = await tool(gw, 'run', { up: 'garbage', op: 'call', name: 'x', args: {} });
    assert.equal(garbage.isError, true);
    assert.match(garbage.text, /upstream garbage: .*not JSON/);
    // a hung upstream holds its call until the call's deadline, nothing else
    const id = nextId++;
    const hung = gw.call(id, 'tools/call', { name: 'run', arguments: { up: 'hang', op: 'call', name: 'x', args: {} } });
    const meanwhile = ok(await tool(gw, 'run', { up: 'up_modern', op: 'call', name: 'echo', args: { text: 'still here' } }));
    assert.equal(meanwhile.content[0].text, 'still here');
    const r = shape((await hung).result);
    assert.equal(r.isError, true);
    assert.match(r.text, /timed out/);
    // the request was closed when the call ended
    await within((async () => { while (!raw.closed.length) await new Promise((res) => setTimeout(res, 20)); })(), WAIT, 'the hung request to close');
  }, ['--timeout', '1.5']));

test('a stdio upstream: one child and one handshake for calls that come at once, kept across a reload, replaced when its declaration changes', opts, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-client-gw-'));
  await cp(GW, dir, { recursive: true });
  try {
    await withRaw(['--log-level', 'info', dir], async (gw) => {
      await gw.initialize();
      const err = watchLines(gw.child.stderr, gw.stderr);
      const reloaded = /^luamcp: info: reloaded .* in [0-9.]+ ms/;
      const whoami = { up: 'up_stdio', op: 'call', name: 'whoami', args: {} };
      // three calls before the child exists: one child, one handshake, three answers
      const ids = [nextId++, nextId++, nextId++];
      for (const id of ids) gw.send(rpc('tools/call', { name: 'run', arguments: whoami }, id));
      const pids = [];
      for (const id of ids) pids.push(ok(shape(JSON.parse(await gw.reply(String(id))).result)).structuredContent.pid);
      assert.equal(new Set(pids).size, 1, `one child: ${pids}`);
      const file = path.join(dir, 'scripts', 'gw.lua');
      const source = await readFile(file, 'utf8');
      await writeFile(file, `${source}\n-- touched\n`);
      await err.until((l) => l.filter((x) => reloaded.test(x)).length >= 1, 'the first reload');
      const same = ok(await tool(gw, 'run', whoami)).structuredContent.pid;
      assert.equal(same, pids[0], 'the same declaration keeps its child across the reload');
      await writeFile(file, source.replace('CLIENT_MARKS = env', 'CHANGED = "1", CLIENT_MARKS = env'));
      await err.until((l) => l.filter((x) => reloaded.test(x)).length >= 2, 'the second reload');
      const other = ok(await tool(gw, 'run', whoami)).structuredContent.pid;
      assert.notEqual(other, same, 'a changed declaration starts a new child');
    }, { env: gwEnv() });
  } finally {
    await removeTemp(dir);
  }
});

test('a child that dies before answering: an error naming it, then restarts with a backoff', opts, () =>
  withGateway(async (gw) => {
    const first = await tool(gw, 'run', { up: 'dies', op: 'call', name: 'x', args: {} });
    assert.equal(first.isError, true);
    assert.match(first.text, /upstream dies: the process ended/);
    let backoff;
    for (let i = 0; i < 8 && !backoff; i++) {
      const r = await tool(gw, 'run', { up: 'dies', op: 'call', name: 'x', args: {} });
      assert.equal(r.isError, true);
      if (/failed starts in a row, the next try in [0-9.]+ s/.test(r.text)) backoff = r.text;
    }
    assert.ok(backoff, 'a call inside the backoff is refused at once');
    assert.match(backoff, /gw\.lua:\d+: upstream dies: the process ended \([^)]*\); \d+ failed starts/, 'named once');
  }));

test('an answer larger than the call may hold (--memory-limit) is an error naming the upstream, over stdio and HTTP', opts, () =>
  withGateway(async (gw) => {
    for (const upName of ['up_stdio', 'up_modern']) {
      const r = await tool(gw, 'run', { up: upName, op: 'call', name: 'big', args: { n: 3_000_000 } });
      assert.equal(r.isError, true, upName);
      assert.match(r.text, new RegExp(`upstream ${upName}: `));
      const small = ok(await tool(gw, 'run', { up: upName, op: 'call', name: 'big', args: { n: 10 } }));
      assert.equal(small.content[0].text, 'xxxxxxxxxx');
    }
  }, ['--memory-limit', '2']));

// {====== traces: a CLIENT span per upstream request, its context carried across

const otlp = createRequire(import.meta.url)('@opentelemetry/otlp-transformer/build/src/generated/root.js').opentelemetry.proto;
const hex = (b) => Buffer.from(b).toString('hex');

/** An OTLP/HTTP receiver decoding with OpenTelemetry's own definitions. */
async function startReceiver() {
  const rx = { spans: [] };
  rx.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const msg = otlp.collector.trace.v1.ExportTraceServiceRequest.decode(Buffer.concat(chunks));
      for (const rs of msg.resourceSpans) for (const ss of rs.scopeSpans) for (const sp of ss.spans) {
        rx.spans.push({ traceId: hex(sp.traceId), spanId: hex(sp.spanId), parentSpanId: sp.parentSpanId?.length ? hex(sp.parentSpanId) : '',
          name: sp.name, kind: sp.kind, attrs: Object.fromEntries(sp.attributes.map((a) => [a.key, a.value.stringValue])) });
      }
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise((resolve) => rx.server.listen(0, '127.0.0.1', resolve));
  rx.url = `http://127.0.0.1:${rx.server.address().port}`;
  return rx;
}

test('each upstream request is a CLIENT span named for its upstream; a stdio upstream continues the trace', opts, async () => {
  const rx = await startReceiver();
  try {
    await withRaw(['--otlp', rx.url, GW], async (gw) => {
      await gw.initialize();
      const traceId = crypto.randomBytes(16).toString('hex');
      const r = await gw.call(nextId++, 'tools/call', { name: 'run', arguments: { up: 'up_stdio', op: 'call', name: 'echo', args: { text: 't' } },
        _meta: { traceparent: `00-${traceId}-${crypto.randomBytes(8).toString('hex')}-01` } });
      assert.equal(shape(r.result).json.content[0].text, 't');
      const find = (pred, what) => within((async () => {
        for (;;) {
          const s = rx.spans.find((x) => x.traceId === traceId && pred(x));
          if (s) return s;
          await new Promise((res) => setTimeout(res, 20));
        }
      })(), WAIT, what);
      const server = await find((s) => s.name === 'tools/call run', 'the gateway\'s server span');
      const out = await find((s) => s.name === 'tools/call up_stdio', 'the CLIENT span');
      assert.equal(out.kind, otlp.trace.v1.Span.SpanKind.SPAN_KIND_CLIENT);
      assert.equal(out.parentSpanId, server.spanId);
      assert.equal(out.attrs['luamcp.upstream'], 'up_stdio');
      assert.equal(out.attrs['mcp.method.name'], 'tools/call');
      // the upstream's own server span is the CLIENT span's child (its _meta.traceparent)
      const there = await find((s) => s.name === 'tools/call echo', 'the upstream\'s server span');
      assert.equal(there.parentSpanId, out.spanId);
    }, { env: { ...gwEnv(), OTLP: rx.url } });
  } finally {
    rx.server.closeAllConnections();
    rx.server.close();
  }
});

// }======

// {====== credentials: our client's token stays here

const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const ISSUER = 'https://as.test.example';
const RESOURCE = 'https://gw.test.example/mcp';
const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
function jwt() {
  const now = Math.floor(Date.now() / 1000);
  const signed = `${b64({ alg: 'RS256', typ: 'at+jwt', kid: 'k1' })}.${b64({ iss: ISSUER, aud: RESOURCE, sub: 'user-1', client_id: 'c1', scope: 'tools', iat: now, exp: now + 600 })}`;
  return `${signed}.${crypto.sign('sha256', Buffer.from(signed), rsa.privateKey).toString('base64url')}`;
}

test("the client's bearer token never reaches an upstream; the upstream's own header does; metrics by upstream and outcome", opts, async () => {
  const jwks = path.join(marks, 'jwks.json');
  await writeFile(jwks, JSON.stringify({ keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' }] }));
  const mport = await freePort();
  const token = jwt();
  await withHttp(GW, ['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', jwks, '--metrics', `127.0.0.1:${mport}`], async (srv) => {
    const auth = { Authorization: `Bearer ${token}` };
    const init = await post(srv, rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } }), { version: null, extra: auth });
    assert.equal(init.status, 200, init.body);
    const session = init.headers['mcp-session-id'];
    await post(srv, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session, extra: auth });
    const before = raw.requests.length;
    const ex = await post(srv, rpc('tools/call', { name: 'run', arguments: { up: 'raw', op: 'call', name: 'echo', args: {} } }), { session, extra: auth });
    const r = shape(answerOf(ex).result);
    assert.equal(r.isError, false, r.text);
    assert.equal(r.json.content[0].text, 'raw ok');
    const seen = raw.requests.slice(before).filter((q) => q.path === '/ok');
    assert.ok(seen.length >= 2, 'discover and the call');
    for (const q of seen) {
      assert.equal(q.headers.authorization, `Bearer ${UPSTREAM_TOKEN}`);
      assert.ok(!JSON.stringify(q).includes(token), 'our client\'s token went upstream');
      assert.ok(!JSON.stringify(q).includes(token.split('.')[2]), 'a part of our client\'s token went upstream');
    }
    const metrics = await (await fetch(`http://127.0.0.1:${mport}/metrics`)).text();
    assert.match(metrics, /mcp_client_requests_total\{upstream="raw",mcp_method_name="tools\/call",outcome="ok"\} 1/);
  }, { env: gwEnv() });
});

// }======
