// scale.test.mjs — many instances, one service (issue 16): three `luamcp
// serve --http` behind Debian's nginx running deploy/nginx/luamcp.conf (only
// its ports changed), sharing one redis-server (--bus, --store) and one
// --state-key. The test starts redis-server and nginx itself on free
// loopback ports, in a temporary folder, and stops what it started; exit 77
// (skipped) when either binary is missing.
//
// - the v2 client pinned to 2026-07-28 through nginx: tools, resources,
//   MRTR rounds answered by different instances;
// - subscriptions/listen on one instance receives list_changed when another
//   reloads, and resources/updated when a script on another calls
//   mcp.notify_updated — once each;
// - v1 client 2025 sessions through nginx: each stays on the instance its id
//   names (GET stream, DELETE);
// - mcp.store: 100 parallel increments across instances sum exactly;
// - X-Forwarded-* believed only from the proxy's address;
// - Redis killed and started again: local delivery goes on, events cross
//   again, nobody crashes, one log line per outage per instance.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { APPS, BIN, TEST_TIMEOUT, WAIT, ms, removeTemp, tempApp, within } from './helpers.mjs';
import { HttpServer, exchange, freePort, mcpHeaders, rpc } from './http-helpers.mjs';
import { NGINX, REDIS, needs, startNginx, startRedis, stopChild, until } from './services.mjs';

needs(REDIS, NGINX);

const opts = { timeout: TEST_TIMEOUT };
const NAMES = ['a', 'b', 'c'];
const DOC = 'test://scale/doc';
const PROXY_ADDR = '127.0.0.2'; // deploy/nginx/luamcp.conf's proxy_bind

const cluster = { instances: [], apps: [] };

before(async () => {
  cluster.dir = await mkdtemp(path.join(tmpdir(), 'luamcp-scale-'));
  await chmod(cluster.dir, 0o755); // nginx's workers (nobody, when started as root) use its temp folders
  cluster.redis = await startRedis();
  cluster.bus = `redis://127.0.0.1:${cluster.redis.port}/3`;
  const key = path.join(cluster.dir, 'state.key');
  await writeFile(key, `${'k'.repeat(40)}\n`);
  const files = {
    'app.lua': await readFile(path.join(APPS, 'scale', 'app.lua'), 'utf8'),
    'scripts/scale.lua': await readFile(path.join(APPS, 'scale', 'scripts', 'scale.lua'), 'utf8'),
    'scripts/modern.lua': await readFile(path.join(APPS, 'modern', 'scripts', 'modern.lua'), 'utf8'),
    'scripts/http.lua': await readFile(path.join(APPS, 'http', 'scripts', 'http.lua'), 'utf8'), // resumable
  };
  for (const name of NAMES) {
    const app = await tempApp(files); // each its own folder: one reloads, the others not
    cluster.apps.push(app);
    const srv = new HttpServer(app, ['--instance', name, '--trust-proxy', PROXY_ADDR, '--state-key', key,
      '--bus', cluster.bus, '--store', cluster.bus, '--max-sessions-per-peer', '0', '--init-rate', '0',
      '--sse-keepalive', '1'], { env: { SCALE_INSTANCE: name } });
    cluster.instances.push(await srv.start());
  }
  await mkdir(path.join(cluster.dir, 'nginx'));
  cluster.nginx = await startNginx(path.join(cluster.dir, 'nginx'), cluster.instances.map((s) => s.port));
  // every instance hears the bus before events are counted on
  for (const srv of cluster.instances) await until(() => /bus: subscribed/.test(srv.stderr), `${srv.port} to subscribe`);
  cluster.byPort = Object.fromEntries(cluster.instances.map((s, i) => [s.port, NAMES[i]]));
});

after(async () => {
  await stopChild(cluster.nginx?.child, cluster.nginx?.exited, 'SIGQUIT');
  const exits = [];
  for (const srv of cluster.instances) exits.push(await srv.stop().catch((e) => e));
  await stopChild(cluster.redis?.child, cluster.redis?.exited);
  for (const app of cluster.apps) await removeTemp(app);
  if (cluster.dir) await rm(cluster.dir, { recursive: true, force: true });
  for (const [i, e] of exits.entries()) {
    assert.ok(!(e instanceof Error), `${NAMES[i]}: ${e?.message}`);
    assert.deepEqual(e, { code: 0, signal: null }, `instance ${NAMES[i]} did not exit cleanly:\n${cluster.instances[i].stderr}`);
  }
});

/** The instance name an nginx response came from (its X-Luamcp-Upstream). */
const upstreamOf = (headers) => cluster.byPort[Number(String(headers.get ? headers.get('x-luamcp-upstream') : headers['x-luamcp-upstream']).split(':').pop())];

/** A fetch that records {method, upstream, status} of every request. */
function recording(log) {
  return async (url, init = {}) => {
    const res = await fetch(url, init);
    let method;
    try { method = JSON.parse(init.body).method; } catch { method = init.method || 'GET'; }
    log.push({ method, http: init.method || 'GET', upstream: upstreamOf(res.headers), status: res.status });
    return res;
  };
}

async function v2Client(log = []) {
  const client = new V2Client({ name: 'luamcp-scale', version: '0.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: {} },
  });
  client.setRequestHandler('elicitation/create', async (req) => ({
    action: 'accept', content: req.params.message === 'Your mood?' ? { mood: 'calm' } : { name: 'Ada' },
  }));
  await within(client.connect(new V2Transport(new URL(cluster.nginx.url), { fetch: recording(log) })), WAIT, 'connect (v2)');
  return client;
}

const textOf = (r) => {
  assert.ok(!r.isError, JSON.stringify(r));
  return r.content[0].text;
};

test('v2 client pinned 2026-07-28 through nginx: round robin, tools, resources, MRTR retries on other instances', opts, async () => {
  const log = [];
  const client = await v2Client(log);
  try {
    const seen = new Set();
    for (let i = 0; i < 6; i++) seen.add(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
    assert.deepEqual([...seen].sort(), NAMES, 'round robin reaches every instance');
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'greet'));
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })), 'hi');
    assert.equal((await client.readResource({ uri: DOC })).contents[0].text, 'the document');
    log.length = 0;
    const greet = textOf(await client.callTool({ name: 'greet', arguments: { greeting: 'Hello' } }));
    assert.equal(greet, 'Hello, Ada (calm)');
    const rounds = log.filter((f) => f.method === 'tools/call');
    assert.equal(rounds.length, 3, `two input_required rounds and the answer: ${JSON.stringify(log)}`);
    assert.ok(rounds.every((r) => r.status === 200), JSON.stringify(rounds));
    assert.ok(new Set(rounds.map((r) => r.upstream)).size >= 2, `the rounds ran on more than one instance: ${JSON.stringify(rounds)}`);
  } finally {
    await client.close();
  }
});

/** Call tool `name` through nginx until an instance other than `not` answers it. */
async function callElsewhere(client, name, not) {
  for (let i = 0; i < 10; i++) {
    const who = textOf(await client.callTool({ name, arguments: {} }));
    if (who !== not) return who;
  }
  throw new Error(`${name} never ran outside ${not}`);
}

async function listener() {
  const log = [];
  const client = await v2Client(log);
  const got = { tools: 0, updated: [] };
  client.setNotificationHandler('notifications/tools/list_changed', () => { got.tools++; });
  client.setNotificationHandler('notifications/resources/updated', (n) => { got.updated.push(n.params.uri); });
  const sub = await within(client.listen({ toolsListChanged: true, resourceSubscriptions: [DOC] }), WAIT, 'listen');
  const on = log.find((f) => f.method === 'subscriptions/listen')?.upstream;
  assert.ok(NAMES.includes(on), `the listen stream's instance: ${JSON.stringify(log)}`);
  return { client, sub, got, on, log };
}

test('subscriptions/listen through nginx: list_changed from another instance\'s reload, resources/updated from another instance\'s script, once each', opts, async () => {
  const l = await listener();
  try {
    // a reload on an instance that does not hold the stream
    const other = NAMES.find((n) => n !== l.on);
    const app = cluster.apps[NAMES.indexOf(other)];
    const script = path.join(app, 'scripts', 'scale.lua');
    const text = await readFile(script, 'utf8');
    await writeFile(path.join(app, 'scripts', 'extra.lua'), 'local mcp = require "mcp"\nmcp.tool { name = "extra", description = "x", handler = function() return "x" end }\n');
    await until(() => l.got.tools > 0, `list_changed from ${other}'s reload on the stream held by ${l.on}`);
    // mcp.notify_updated in a handler that runs elsewhere
    const caller = await v2Client();
    try {
      const where = await callElsewhere(caller, 'touch', l.on);
      await until(() => l.got.updated.length > 0, `resources/updated from ${where}`);
    } finally {
      await caller.close();
    }
    await delay(300); // nothing doubled comes later
    assert.equal(l.got.tools, 1, 'list_changed once');
    assert.deepEqual(l.got.updated, [DOC], 'resources/updated once');
    await rm(path.join(app, 'scripts', 'extra.lua'));
    await until(() => l.got.tools > 1, 'list_changed of the second reload');
    assert.equal(await readFile(script, 'utf8'), text);
  } finally {
    await l.sub.close().catch(() => {});
    await l.client.close();
  }
});

test('v1 client, 2025 sessions through nginx: 20 sessions, each on the instance its id names, GET stream, a resumed response, DELETE', opts, async () => {
  const conns = [];
  try {
    for (let i = 0; i < 20; i++) {
      const fetches = [];
      const transport = new StreamableHTTPClientTransport(new URL(cluster.nginx.url), {
        fetch: async (url, init = {}) => {
          const res = await fetch(url, init);
          const h = new Headers(init.headers);
          fetches.push({ method: init.method || 'GET', upstream: upstreamOf(res.headers), status: res.status, session: h.get('mcp-session-id'), lastEventId: h.get('last-event-id') });
          return res;
        },
      });
      const client = new Client({ name: `scale-v1-${i}`, version: '0.0.0' }, { capabilities: {} });
      await within(client.connect(transport), WAIT, `session ${i}`);
      conns.push({ client, transport, fetches });
    }
    const owners = new Set();
    for (const c of conns) {
      const id = c.transport.sessionId;
      const name = id.split('.')[0];
      assert.match(id, /^[abc]\.[0-9a-f]{32}$/);
      owners.add(name);
      for (let k = 0; k < 3; k++) assert.equal(textOf(await c.client.callTool({ name: 'whoami', arguments: {} })), name);
      await until(() => c.fetches.some((f) => f.method === 'GET' && f.status === 200), 'the standalone GET stream');
      assert.ok(c.fetches.filter((f) => f.session).every((f) => f.upstream === name), JSON.stringify(c.fetches));
    }
    assert.deepEqual([...owners].sort(), NAMES, 'initialize spread the sessions over every instance');
    // a session's subscription is fed by an event from another instance too
    const c0 = conns[0];
    const name0 = c0.transport.sessionId.split('.')[0];
    const updated = [];
    const { ResourceUpdatedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
    c0.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
    await c0.client.subscribeResource({ uri: DOC });
    const v2 = await v2Client();
    try {
      await callElsewhere(v2, 'touch', name0);
    } finally {
      await v2.close();
    }
    await until(() => updated.length > 0, 'resources/updated on the 2025 session\'s GET stream');
    // a response the tool ends early (ctx:close_stream) resumes through nginx: the
    // SDK's GET with Last-Event-ID reaches the session's instance, which replays
    const c1 = conns[1];
    const name1 = c1.transport.sessionId.split('.')[0];
    const marks = c1.fetches.length;
    const resumed = await c1.client.callTool({ name: 'resumable', arguments: { seconds: 0.5 } });
    assert.deepEqual(resumed.structuredContent, { closed: true, text: 'resumed result' });
    const gets = c1.fetches.slice(marks).filter((f) => f.method === 'GET' && f.lastEventId);
    assert.ok(gets.length >= 1 && gets.every((f) => f.status === 200 && f.upstream === name1),
      `resumed on the session's instance: ${JSON.stringify(c1.fetches.slice(marks))}`);
    for (const c of conns) {
      await c.transport.terminateSession();
      const del = c.fetches.find((f) => f.method === 'DELETE');
      assert.equal(del.status, 200);
      assert.equal(del.upstream, del.session.split('.')[0], 'DELETE reached the session\'s instance');
    }
    // an ended session is 404 on its own instance
    const gone = await exchange({ port: cluster.nginx.port }, { headers: mcpHeaders({ session: `${name0}.${'0'.repeat(32)}` }), body: rpc('tools/list', {}) });
    await gone.finished();
    assert.equal(gone.status, 404);
  } finally {
    for (const c of conns) await c.client.close().catch(() => {});
  }
});

test('mcp.store: 100 parallel increments through nginx, across the instances, sum exactly; set/get/incr/delete/TTL in Redis', opts, async () => {
  const client = await v2Client();
  try {
    const key = `hits-${Date.now()}`;
    const results = await Promise.all(Array.from({ length: 100 }, () => client.callTool({ name: 'count', arguments: { key } })));
    const values = results.map((r) => Number(textOf(r).split('@')[0])).sort((x, y) => x - y);
    assert.deepEqual(values, Array.from({ length: 100 }, (_, i) => i + 1), 'each increment got its own value');
    assert.ok(new Set(results.map((r) => textOf(r).split('@')[1])).size >= 2, 'more than one instance counted');
    assert.equal(textOf(await client.callTool({ name: 'store_get', arguments: { key } })), '100');
    const k = `ops-${Date.now()}`;
    assert.equal(textOf(await client.callTool({ name: 'store_ops', arguments: { key: k } })), 'true 42 42 5 true false false true false');
    assert.equal(textOf(await client.callTool({ name: 'store_expired', arguments: { key: k } })), 'nil', 'the TTL expired the key');
  } finally {
    await client.close();
  }
});

test('luamcp call --store: the command line counts in the same store as the instances; no Redis, no call', opts, async () => {
  const client = await v2Client();
  const key = `cli-${Date.now()}`;
  const cli = (url) => new Promise((resolve) => {
    execFile(BIN, ['call', '--store', url, path.join(APPS, 'scale'), 'count', JSON.stringify({ key })],
      { env: { ...process.env, SCALE_INSTANCE: 'cli' } }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
  try {
    assert.match(textOf(await client.callTool({ name: 'count', arguments: { key } })), /^1@[abc]$/);
    const r = await cli(cluster.bus);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).content[0].text, '2@cli');
    assert.match(textOf(await client.callTool({ name: 'count', arguments: { key } })), /^3@[abc]$/);
    const closed = await freePort();
    const down = await cli(`redis://127.0.0.1:${closed}/0`);
    assert.equal(down.code, 1);
    assert.match(down.stderr, new RegExp(`--store redis://127.0.0.1:${closed}/0: no connection to Redis`));
    assert.equal(down.stdout, '', 'no result without the store');
  } finally {
    await client.close();
  }
});

test('X-Forwarded-* only from the proxy: Host/Origin checks hold behind nginx and cannot be forged around it', opts, async () => {
  const nginx = { port: cluster.nginx.port };
  const list = rpc('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } });
  const headers = (extra) => mcpHeaders({ version: '2026-07-28', extra: { 'Mcp-Method': 'tools/list', ...extra } });
  const status = async (srv, h, localAddress) => {
    const ex = await exchange(srv, { headers: h, body: list, localAddress });
    await ex.finished();
    return ex.status;
  };
  assert.equal(await status(nginx, headers({})), 200);
  // a rebound page: its Host (and Origin) reach the instance through X-Forwarded-Host
  assert.equal(await status(nginx, headers({ Host: 'evil.example' })), 403);
  assert.equal(await status(nginx, headers({ Origin: 'http://evil.example' })), 403);
  // straight to an instance from 127.0.0.1 (not the proxy): forged headers are ignored
  const a = cluster.instances[0];
  assert.equal(await status(a, headers({ Host: 'mcp.example.com', 'X-Forwarded-For': '203.0.113.5', 'X-Forwarded-Host': '127.0.0.1' }), '127.0.0.1'), 403);
  // from the proxy's address, a remote client: the remote policy (Origin only by --allow-origin)
  assert.equal(await status(a, headers({ Host: 'mcp.example.com', 'X-Forwarded-For': '203.0.113.5', 'X-Forwarded-Host': 'mcp.example.com' }), PROXY_ADDR), 200);
  assert.equal(await status(a, headers({ 'X-Forwarded-For': '203.0.113.5', 'X-Forwarded-Host': 'mcp.example.com', Origin: 'https://evil.example' }), PROXY_ADDR), 403);
  // and a loopback client behind it: the loopback policy
  assert.equal(await status(a, headers({ 'X-Forwarded-For': '127.0.0.1', 'X-Forwarded-Host': 'mcp.example.com' }), PROXY_ADDR), 403);
});

// {====== tasks: created on one instance, asked about on the others

const TASK_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

/** One 2026-07-28 request straight to srv; its JSON-RPC answer. */
async function modernCall(srv, method, params, name) {
  const ex = await exchange(srv, {
    headers: mcpHeaders({ version: '2026-07-28', extra: { 'Mcp-Method': method, 'Mcp-Name': name } }),
    body: rpc(method, { ...params, _meta: TASK_META }),
  });
  await ex.finished();
  if (ex.messages.length) return ex.messages.at(-1);
  return JSON.parse(ex.body);
}

const taskOf = async (srv, tool) => {
  const r = await modernCall(srv, 'tools/call', { name: tool, arguments: {} }, tool);
  assert.equal(r.result?.resultType, 'task', JSON.stringify(r));
  return r.result.taskId;
};
const taskGet = (srv, id) => modernCall(srv, 'tasks/get', { taskId: id }, id);

// issue 31, item 1: deploy/nginx/luamcp.conf answers /readyz for the service
// (an instance that is not ready answers 503 and nginx asks the next)
test('GET /readyz through nginx: 200 while an instance serves', opts, async () => {
  const r = await fetch(new URL('/readyz', cluster.nginx.url));
  assert.equal(r.status, 200, await r.text());
});

test('tasks across instances: created on a, polled, answered and cancelled through b and c', opts, async () => {
  const [a, b, c] = cluster.instances;
  const id = await taskOf(a, 'ask_later');
  assert.match(id, /^[0-9a-f]{48}$/, 'a bus origin, then the random part');
  // b does not run it: it asks a, and answers with a's view
  let got = await taskGet(b, id);
  assert.equal(got.result?.status, 'input_required', JSON.stringify(got));
  assert.equal(got.result.inputRequests[Object.keys(got.result.inputRequests)[0]].params.message, 'A word?');
  // c gives the answer; the handler parked on a goes on with it
  const ack = await modernCall(c, 'tasks/update', { taskId: id, inputResponses: { [Object.keys(got.result.inputRequests)[0]]: { action: 'accept', content: { word: 'otter' } } } }, id);
  assert.equal(ack.result?.resultType, 'complete', JSON.stringify(ack));
  await until(async () => (got = await taskGet(b, id)).result?.status === 'completed', 'the task to complete');
  assert.equal(got.result.result.content[0].text, 'otter@a', 'run on a, with the answer given to c');
  // cancelled through c: a's handler stops, every instance sees "cancelled"
  const slow = await taskOf(b, 'sleep_task');
  assert.equal((await modernCall(c, 'tasks/cancel', { taskId: slow }, slow)).result?.resultType, 'complete');
  for (const srv of [a, b, c]) assert.equal((await taskGet(srv, slow)).result?.status, 'cancelled');
  // an origin no instance has: unknown at once, as an unknown id of one's own is
  const forged = `${'0'.repeat(16)}${id.slice(16)}`;
  const unknown = await taskGet(b, forged);
  assert.equal(unknown.error?.code, -32602, JSON.stringify(unknown));
  assert.match(unknown.error.message, /Unknown task: .*no instance runs it/);
  const local = await taskGet(b, id.slice(16));
  assert.match(local.error?.message ?? '', /^Unknown task/, 'an id without an origin is looked up here only');
});

/** PUBLISH payload on channel, straight to our redis-server (RESP by hand): its receiver count. */
function publish(channel, payload) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(cluster.redis.port, '127.0.0.1');
    const bulk = (x) => `$${Buffer.byteLength(x)}\r\n${x}\r\n`;
    sock.on('error', reject);
    sock.once('data', (d) => { sock.end(); resolve(Number(String(d).slice(1).trim())); });
    sock.write(`*3\r\n${bulk('PUBLISH')}${bulk(channel)}${bulk(payload)}`);
  });
}

test('tasks across instances: what arrives on an instance\'s own channel that is not a well-formed request for one of its tasks is dropped', opts, async () => {
  const [a, b] = cluster.instances;
  const id = await taskOf(a, 'sleep_task');
  const origin = id.slice(0, 16);
  const channel = `luamcp:to:3:${origin}`;
  const other = `${'1'.repeat(16)}`;
  const foreign = JSON.stringify(rpc('tasks/get', { taskId: `${other}${id.slice(16)}`, _meta: TASK_META }));
  const key = `junk-${Date.now()}`;
  const call = JSON.stringify(rpc('tools/call', { name: 'count', arguments: { key }, _meta: TASK_META }));
  for (const junk of ['', 'x', `${other} Q`, `${other} Q 1`, `${other} Q x {}`, `${other} Q 1 {not json`,
    `${other} Q 2 ${foreign}`, `${other} Q 3 ${call}`, `${other} R 99 {"jsonrpc":"2.0","id":1,"result":{}}`,
    `${other} Z 1 {}`, `${other} Q 99999999999999999999999 ${foreign}`]) {
    assert.equal(await publish(channel, junk), 1, 'a hears its channel');
  }
  // a still serves, its task is as it was, and it ran nothing it was sent
  assert.equal((await taskGet(b, id)).result?.status, 'working');
  const client = await v2Client();
  try {
    assert.equal(textOf(await client.callTool({ name: 'store_get', arguments: { key } })), 'nil', 'the tools/call sent on the bus did not run');
  } finally {
    await client.close();
  }
  assert.equal(a.child.exitCode, null);
  assert.equal((await modernCall(b, 'tasks/cancel', { taskId: id }, id)).result?.resultType, 'complete');
});

/** A Redis subscriber on channel that never answers (a silent instance): {close}. */
async function silentSubscriber(channel) {
  const sock = net.connect(cluster.redis.port, '127.0.0.1');
  const bulk = (x) => `$${Buffer.byteLength(x)}\r\n${x}\r\n`;
  await new Promise((resolve, reject) => {
    sock.on('error', reject);
    sock.once('data', resolve); // the subscribe confirmation
    sock.write(`*2\r\n${bulk('SUBSCRIBE')}${bulk(channel)}`);
  });
  return { close: () => sock.destroy() };
}

test('tasks across instances: an owner that is there but silent gives -32603 at the deadline, or at shutdown', opts, async () => {
  const silent = 'abcdefabcdefabcd';
  const sub = await silentSubscriber(`luamcp:to:3:${silent}`);
  const app = await tempApp({ 'app.lua': await readFile(path.join(APPS, 'scale', 'app.lua'), 'utf8'),
    'scripts/scale.lua': await readFile(path.join(APPS, 'scale', 'scripts', 'scale.lua'), 'utf8') });
  const e = await new HttpServer(app, ['--instance', 'e', '--bus', cluster.bus, '--no-watch'], { env: { SCALE_INSTANCE: 'e' } }).start();
  try {
    await until(() => /bus: subscribed to luamcp:to:/.test(e.stderr), 'e to hear its own channel');
    const id = `${silent}${'0'.repeat(32)}`;
    const late = await taskGet(e, id);
    assert.equal(late.error?.code, -32603, JSON.stringify(late));
    assert.match(late.error.message, /\(abcdefabcdefabcd\) did not answer within 5 s/);
    // asked again, and the server stops before an answer: the request is answered, the exit clean
    const ex = exchange(e, {
      headers: mcpHeaders({ version: '2026-07-28', extra: { 'Mcp-Method': 'tasks/get', 'Mcp-Name': id } }),
      body: rpc('tasks/get', { taskId: id, _meta: TASK_META }),
    });
    await delay(ms(500)); // it reaches e and waits for the silent owner
    const stopped = e.stop();
    const res = await ex;
    await res.finished();
    const answer = res.messages.length ? res.messages.at(-1) : JSON.parse(res.body);
    assert.equal(answer.error?.code, -32603, JSON.stringify(answer));
    assert.match(answer.error.message, /was not heard from before this server shut down/);
    assert.deepEqual(await stopped, { code: 0, signal: null });
  } finally {
    sub.close();
    await e.stop().catch(() => {});
    await removeTemp(app);
  }
});

test('tasks across instances: an instance that stops takes its tasks with it; the others say so', opts, async () => {
  const app = await tempApp({ 'app.lua': await readFile(path.join(APPS, 'scale', 'app.lua'), 'utf8'),
    'scripts/scale.lua': await readFile(path.join(APPS, 'scale', 'scripts', 'scale.lua'), 'utf8') });
  const d = await new HttpServer(app, ['--instance', 'd', '--bus', cluster.bus, '--no-watch', '--shutdown-grace', '0.2'],
    { env: { SCALE_INSTANCE: 'd' } }).start();
  try {
    await until(() => /bus: subscribed to luamcp:to:/.test(d.stderr), 'd to hear its own channel');
    const id = await taskOf(d, 'sleep_task');
    const [a] = cluster.instances;
    assert.equal((await taskGet(a, id)).result?.status, 'working', 'asked of d while it runs');
    await d.stop();
    const gone = await taskGet(a, id);
    assert.equal(gone.error?.code, -32602, JSON.stringify(gone));
    assert.match(gone.error.message, /no instance runs it/);
  } finally {
    await d.stop().catch(() => {});
    await removeTemp(app);
  }
});

// }======

const outageLines = (srv) => srv.stderr.split('\n').filter((l) => /bus: redis .* unreachable/.test(l)).length;
const backLines = (srv, what) => srv.stderr.split('\n').filter((l) => l.includes(`${what ?? "bus"}: redis `) && / is back after /.test(l)).length;

test('Redis killed and started again: local delivery goes on, events cross again, one log line per outage', opts, async () => {
  const l = await listener();
  const caller = await v2Client();
  try {
    assert.deepEqual(cluster.instances.map(outageLines), [0, 0, 0]);
    for (let outage = 1; outage <= 2; outage++) {
      cluster.redis.child.kill('SIGKILL');
      await cluster.redis.exited;
      await until(() => cluster.instances.every((s) => outageLines(s) === outage), `every instance to log outage ${outage}`);
      // meanwhile: calls answer, the listener's own instance still tells it
      const before = l.got.updated.length;
      for (let i = 0; i < 10 && l.got.updated.length === before; i++) {
        const who = textOf(await caller.callTool({ name: 'touch', arguments: {} }));
        if (who === l.on) await until(() => l.got.updated.length > before, 'local delivery during the outage');
      }
      assert.equal(l.got.updated.length, before + 1, 'delivered locally, once');
      await delay(700); // several reconnection attempts: still one line each
      assert.deepEqual(cluster.instances.map(outageLines), [outage, outage, outage]);
      cluster.redis = await startRedis(cluster.redis.port);
      await until(() => cluster.instances.every((s) => backLines(s, 'bus') === outage && backLines(s, 'store') === outage),
        `every instance to reconnect after outage ${outage}`, WAIT * 2).catch((e) => {
        e.message += JSON.stringify(cluster.instances.map((i) => [backLines(i, 'bus'), backLines(i, 'store'), outage])) + cluster.instances.map((i) => `\n--- ${i.port}:\n${i.stderr.split('\n').filter((x) => /redis|bus/.test(x)).join('\n')}`).join('');
        throw e;
      });
      // events cross instances again
      const n = l.got.updated.length;
      await until(async () => {
        await callElsewhere(caller, 'touch', l.on);
        await delay(100);
        return l.got.updated.length > n;
      }, 'an event from another instance after the reconnection');
      const counted = textOf(await caller.callTool({ name: 'count', arguments: { key: `after-${outage}` } }));
      assert.match(counted, /^1@/, 'mcp.store works again');
    }
    assert.ok(cluster.instances.every((s) => s.child.exitCode === null), 'no instance exited');
  } finally {
    await caller.close();
    await l.sub.close().catch(() => {});
    await l.client.close();
  }
});

// A rolling deploy: the app folder of each instance gets the new version in
// turn (each reloads live), while 8 clients call through nginx all along.
test('rolling reload under load through nginx: every request answered once, by the old or the new version, none lost', opts, async () => {
  const rev = (v) => `local mcp = require "mcp"\nmcp.tool { name = "rev", handler = function() return "${v}" end }\n`;
  const reloads = (srv) => (srv.stderr.match(/reloaded /g) || []).length;
  const before0 = cluster.instances.map(reloads);
  for (const app of cluster.apps) await writeFile(path.join(app, 'scripts', 'rev.lua'), rev('v1'));
  for (const [i, srv] of cluster.instances.entries()) await until(() => reloads(srv) > before0[i], `${NAMES[i]} to load v1`);
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  const body = (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rev', arguments: {}, _meta: meta } });
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'rev' };
  const answers = new Map(); // id -> text
  const problems = [];
  let stop = false, next = 1;
  const client = async () => {
    while (!stop) {
      const id = next++;
      try {
        const res = await fetch(cluster.nginx.url, { method: 'POST', headers, body: body(id) });
        const text = await res.text();
        const msg = JSON.parse(text);
        if (res.status !== 200 || msg.id !== id || !msg.result) problems.push(`${id}: ${res.status} ${text.slice(0, 200)}`);
        else if (answers.has(id)) problems.push(`${id}: answered twice`);
        else answers.set(id, msg.result.content[0].text);
      } catch (err) {
        problems.push(`${id}: ${err.message}`);
      }
    }
  };
  const load = Array.from({ length: 8 }, client);
  await delay(300);
  for (const [i, app] of cluster.apps.entries()) { // one instance at a time
    const n = reloads(cluster.instances[i]);
    await writeFile(path.join(app, 'scripts', 'rev.lua'), rev('v2'));
    await until(() => reloads(cluster.instances[i]) > n, `${NAMES[i]} to load v2`);
    await delay(300);
  }
  stop = true;
  await Promise.all(load);
  assert.deepEqual(problems, []);
  const sent = next - 1;
  assert.equal(answers.size, sent, `${sent} sent, ${answers.size} answered`);
  const texts = new Set(answers.values());
  assert.ok([...texts].every((t) => t === 'v1' || t === 'v2'), [...texts].join(','));
  assert.ok(texts.has('v1') && texts.has('v2'), 'both versions answered during the deploy');
  for (let i = 0; i < 6; i++) { // after it, only the new one
    const res = await fetch(cluster.nginx.url, { method: 'POST', headers, body: body(`after-${i}`) });
    assert.equal(JSON.parse(await res.text()).result.content[0].text, 'v2');
  }
  assert.ok(sent > 100, `enough load to mean something: ${sent} requests`);
});

test('--stateless 2025 traffic behind nginx: the v1 client with no session, its requests round robin over three instances', opts, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-scale-sl-'));
  await chmod(dir, 0o755);
  const apps = [], servers = [];
  let proxy;
  try {
    for (const name of NAMES) {
      const app = await tempApp({ 'scripts/scale.lua': await readFile(path.join(APPS, 'scale', 'scripts', 'scale.lua'), 'utf8') });
      apps.push(app);
      servers.push(await new HttpServer(app, ['--stateless', '--instance', name, '--trust-proxy', PROXY_ADDR],
        { env: { SCALE_INSTANCE: name } }).start());
    }
    proxy = await startNginx(dir, servers.map((s) => s.port));
    const client = new Client({ name: 'scale-stateless', version: '0.0.0' }, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url));
    await within(client.connect(transport), WAIT, 'connect (stateless)');
    try {
      assert.equal(transport.sessionId, undefined, 'no session');
      const seen = new Set();
      for (let i = 0; i < 9; i++) seen.add(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
      assert.deepEqual([...seen].sort(), NAMES, 'round robin reaches every instance');
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'whoami'));
    } finally {
      await client.close();
    }
  } finally {
    await stopChild(proxy?.child, proxy?.exited, 'SIGQUIT');
    for (const s of servers) await s.stop().catch(() => {});
    for (const a of apps) await removeTemp(a);
    await rm(dir, { recursive: true, force: true });
  }
});
