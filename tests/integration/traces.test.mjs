// traces.test.mjs — `serve --otlp URL`: OpenTelemetry traces checked whole.
// A receiver on loopback decodes what luamcp exports (OTLP/HTTP protobuf)
// with the official OpenTelemetry definitions (@opentelemetry/otlp-
// transformer's generated protobuf root), never a reading of our own. A
// client call carrying a traceparent (in _meta, and in the HTTP header)
// gives one trace: the server span its child, the script's ctx:span the
// server span's child, the mcp.http CLIENT span that one's child, and the
// upstream received a traceparent naming that span; attributes follow the
// MCP semantic conventions. A collector that is down or never answers costs
// the calls nothing; the spans it misses are counted.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { APPS, RawServer, TEST_TIMEOUT, WAIT } from './helpers.mjs';
import { freePort, post, rpc, withHttp } from './http-helpers.mjs';
import { REDIS, startRedis, stopChild, until } from './services.mjs';
import { existsSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import os from 'node:os';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const SpanKind = root.opentelemetry.proto.trace.v1.Span.SpanKind;

const opts = { timeout: TEST_TIMEOUT };
const APP = path.join(APPS, 'traces');
const hex = (b) => Buffer.from(b).toString('hex');

/** An OTLP/HTTP receiver: every span it was sent, decoded. */
async function startReceiver() {
  const rx = { spans: [], requests: [] };
  rx.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      rx.requests.push({ path: req.url, type: req.headers['content-type'] });
      const msg = Request.decode(Buffer.concat(chunks)); // throws on bytes that are not the message
      for (const rs of msg.resourceSpans) {
        const resource = Object.fromEntries(rs.resource.attributes.map((a) => [a.key, a.value.stringValue]));
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            rx.spans.push({
              traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: s.parentSpanId?.length ? hex(s.parentSpanId) : '',
              name: s.name, kind: s.kind, resource, scope: ss.scope.name,
              start: BigInt(s.startTimeUnixNano.toString()), end: BigInt(s.endTimeUnixNano.toString()),
              attrs: Object.fromEntries(s.attributes.map((a) => [a.key, a.value.stringValue ?? a.value.intValue?.toNumber?.() ?? a.value.intValue ?? a.value.boolValue ?? a.value.doubleValue])),
              status: s.status, traceState: s.traceState, events: s.events.map((e) => ({ name: e.name, attrs: Object.fromEntries(e.attributes.map((a) => [a.key, a.value.stringValue])) })),
            });
          }
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise((resolve) => rx.server.listen(0, '127.0.0.1', resolve));
  rx.url = `http://127.0.0.1:${rx.server.address().port}`;
  rx.close = () => new Promise((resolve) => { rx.server.closeAllConnections(); rx.server.close(resolve); });
  return rx;
}

/** An upstream that records the traceparent of each request. */
async function startUpstream() {
  const up = { seen: [] };
  up.server = http.createServer((req, res) => {
    up.seen.push(req.headers.traceparent);
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
  });
  await new Promise((resolve) => up.server.listen(0, '127.0.0.1', resolve));
  up.url = `http://127.0.0.1:${up.server.address().port}/data`;
  up.close = () => new Promise((resolve) => { up.server.closeAllConnections(); up.server.close(resolve); });
  return up;
}

test('a client call with a traceparent is one trace: server span, the script\'s span, the mcp.http CLIENT span, and the upstream saw its traceparent', opts, async () => {
  const rx = await startReceiver();
  const up = await startUpstream();
  try {
    const log = path.join(os.tmpdir(), `luamcp-traces-${process.pid}-${Date.now()}.log`);
    const closed = await freePort();
    await withHttp(APP, ['--otlp', rx.url, '--access-log', log], async (srv) => {
      const client = new Client({ name: 'traces-test', version: '0.0.0' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { n: 'Ada' } }));
      await client.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
      const traceId = crypto.randomBytes(16).toString('hex'), clientSpan = crypto.randomBytes(8).toString('hex');
      try {
        const r = await client.callTool({ name: 'fetch_traced', arguments: { url: `${up.url}?key=s3cret&page=2` }, _meta: { traceparent: `00-${traceId}-${clientSpan}-01` } });
        assert.equal(r.content[0].text, 'status 200');
        const bad = await client.callTool({ name: 'fails_in_span', arguments: {}, _meta: { traceparent: `00-${traceId}-${clientSpan}-01` } });
        assert.equal(bad.isError, true);
        const both = await client.callTool({ name: 'child_and_question', arguments: {}, _meta: { traceparent: `00-${traceId}-${clientSpan}-01` } });
        assert.equal(both.content[0].text, 'child 3, accept');
        const socks = await client.callTool({ name: 'sockets', arguments: { port: Number(new URL(up.url).port), closed }, _meta: { traceparent: `00-${traceId}-${clientSpan}-01` } });
        assert.equal(socks.content[0].text, 'refused, connection refused');
      } finally {
        await client.close();
      }
      await until(() => rx.spans.filter((s) => s.traceId === traceId).length >= 11, 'the spans exported', WAIT);
      // the access log names each request's trace
      const lines = (await readFile(log, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
      const calls = lines.filter((l) => l.method === 'tools/call');
      assert.equal(calls.length, 4, JSON.stringify(lines));
      for (const l of calls) assert.equal(l.trace, traceId, JSON.stringify(l));
      await unlink(log);
      assert.ok(rx.requests.every((q) => q.path === '/v1/traces' && q.type === 'application/x-protobuf'), JSON.stringify(rx.requests));
      const mine = rx.spans.filter((s) => s.traceId === traceId);
      const server = mine.find((s) => s.name === 'tools/call fetch_traced');
      assert.ok(server, JSON.stringify(mine.map((s) => s.name)));
      assert.equal(server.kind, SpanKind.SPAN_KIND_SERVER);
      assert.equal(server.parentSpanId, clientSpan, 'the server span is the client span\'s child');
      assert.equal(server.attrs['mcp.method.name'], 'tools/call');
      assert.equal(server.attrs['gen_ai.tool.name'], 'fetch_traced');
      assert.equal(server.attrs['gen_ai.operation.name'], 'execute_tool');
      assert.equal(server.attrs['mcp.protocol.version'], '2025-11-25');
      assert.match(server.attrs['mcp.session.id'], /\./);
      assert.ok(server.attrs['jsonrpc.request.id'] !== undefined);
      assert.equal(server.attrs['app.customer'], 'acme', 'ctx:set_attribute');
      assert.equal(server.resource['service.name'], 'luamcp');
      assert.equal(server.scope, 'luamcp');
      const mid = mine.find((s) => s.name === 'fetch upstream');
      assert.equal(mid.parentSpanId, server.spanId);
      assert.equal(mid.kind, SpanKind.SPAN_KIND_INTERNAL);
      assert.equal(mid.attrs['app.try'], 1);
      assert.equal(mid.attrs['app.cached'], false);
      const out = mine.find((s) => s.kind === SpanKind.SPAN_KIND_CLIENT);
      assert.equal(out.parentSpanId, mid.spanId);
      assert.equal(out.name, 'GET');
      assert.equal(out.attrs['http.request.method'], 'GET');
      assert.equal(out.attrs['url.full'], `${up.url}?key=REDACTED&page=REDACTED`, 'query values are not shown');
      assert.equal(out.attrs['http.response.status_code'], 200);
      assert.equal(out.attrs['server.address'], '127.0.0.1', 'the HTTP client conventions require it');
      assert.equal(out.attrs['server.port'], Number(new URL(up.url).port));
      assert.equal(up.seen.at(-1), `00-${traceId}-${out.spanId}-01`, 'the upstream got the CLIENT span\'s traceparent');
      for (const s of [server, mid, out]) assert.ok(s.end >= s.start && s.start > 0n);
      assert.ok(out.start >= mid.start && out.end <= mid.end && mid.end <= server.end);
      // the error in ctx:span: on its span, the server span failed too (isError)
      const doomed = mine.find((s) => s.name === 'doomed');
      assert.equal(doomed.status.code, 2);
      assert.match(doomed.events[0].attrs['exception.message'], /traced\.lua:\d+: no luck here/);
      const failed = mine.find((s) => s.name === 'tools/call fails_in_span');
      assert.equal(failed.attrs['error.type'], 'tool_error');
      // the handler's own error, with its FILE:LINE, on the SERVER span too
      assert.equal(failed.status.code, 2);
      assert.match(failed.status.message, /traced\.lua:\d+: no luck here/);
      assert.match(failed.events[0]?.attrs['exception.message'] ?? '', /traced\.lua:\d+: no luck here/);
      assert.equal(doomed.parentSpanId, failed.spanId);
      // a child process and a question to the client: spans of the call's
      const third = mine.find((s) => s.name === 'tools/call child_and_question');
      const child = mine.find((s) => s.name === 'exec sh');
      assert.equal(child.parentSpanId, third.spanId);
      assert.equal(child.attrs['process.exit.code'], 3);
      assert.equal(child.status.code, 2);
      assert.ok(child.attrs['process.pid'] > 0);
      // mcp.socket: a CLIENT span per connect, the refused one failed
      const fourth = mine.find((s) => s.name === 'tools/call sockets');
      const connects = mine.filter((s) => s.name === 'connect');
      assert.equal(connects.length, 2);
      for (const s of connects) {
        assert.equal(s.parentSpanId, fourth.spanId);
        assert.equal(s.kind, SpanKind.SPAN_KIND_CLIENT);
        assert.equal(s.attrs['network.transport'], 'tcp');
        assert.equal(s.attrs['server.address'], '127.0.0.1');
      }
      assert.deepEqual(connects.map((s) => [s.attrs['server.port'], s.status?.code ?? 0]).sort(),
        [[Number(new URL(up.url).port), 0], [closed, 2]].sort());
      const question = mine.find((s) => s.name === 'elicitation/create');
      assert.equal(question.parentSpanId, third.spanId);
      assert.equal(question.kind, SpanKind.SPAN_KIND_CLIENT);
      assert.ok(question.start >= child.end, 'the question after the child');
      // the HTTP traceparent header, when _meta has none; an invalid one starts a trace
      const headerTrace = crypto.randomBytes(16).toString('hex');
      const REV = '2026-07-28';
      const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
      await post(srv, rpc('tools/call', { name: 'plain', arguments: {}, _meta: meta }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'plain', traceparent: `00-${headerTrace}-00f067aa0ba902b7-01` } });
      await post(srv, rpc('tools/call', { name: 'plain', arguments: {}, _meta: meta }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'plain', traceparent: '00-zz-bad-01' } });
      // a JSON-RPC error: its code is the span's error.type and rpc.response.status_code,
      // its message the status description
      const errTrace = crypto.randomBytes(16).toString('hex');
      await post(srv, rpc('tools/call', { name: 'nope', arguments: {}, _meta: { ...meta, traceparent: `00-${errTrace}-00f067aa0ba902b7-01` } }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'nope' } });
      await until(() => rx.spans.some((s) => s.traceId === errTrace), 'the error\'s span', WAIT);
      const errSpan = rx.spans.find((s) => s.traceId === errTrace);
      assert.equal(errSpan.attrs['error.type'], '-32602');
      assert.equal(errSpan.attrs['rpc.response.status_code'], '-32602');
      assert.equal(errSpan.status.code, 2);
      assert.equal(errSpan.status.message, 'Unknown tool: nope');
      // what a client sends into a span is bounded and UTF-8 (issue 33, item 8): a tracestate
      // that is not printable ASCII is dropped; a 100 KB request id is cut to 1 KiB, the span kept
      const oddTrace = crypto.randomBytes(16).toString('hex');
      await post(srv, rpc('tools/call', { name: 'plain', arguments: {}, _meta: meta }, 'i'.repeat(100000)),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'plain', traceparent: `00-${oddTrace}-00f067aa0ba902b7-01`, tracestate: 'k=v\u00ff' } });
      await until(() => rx.spans.some((s) => s.traceId === oddTrace), 'the odd request\'s span', WAIT);
      const oddSpan = rx.spans.find((s) => s.traceId === oddTrace);
      assert.ok(!oddSpan.traceState, 'a tracestate that is not printable ASCII is dropped');
      assert.equal(oddSpan.attrs['jsonrpc.request.id'].length, 1024);
      await until(() => rx.spans.filter((s) => s.name === 'tools/call plain').length >= 3, 'the header-traced spans', WAIT);
      const viaHeader = rx.spans.find((s) => s.traceId === headerTrace);
      assert.equal(viaHeader.parentSpanId, '00f067aa0ba902b7');
      assert.equal(viaHeader.attrs['mcp.protocol.version'], REV);
      const fresh = rx.spans.filter((s) => s.name === 'tools/call plain' && s.traceId !== headerTrace && s.traceId !== oddTrace);
      assert.equal(fresh.length, 1);
      assert.equal(fresh[0].parentSpanId, '');
      // a task: the request's span ends with its CreateTaskResult; the work goes on in a
      // 'task' span under it, with the task's id, and the script's spans under that
      const taskTrace = crypto.randomBytes(16).toString('hex');
      const tmeta = { ...meta, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        traceparent: `00-${taskTrace}-00f067aa0ba902b7-01` };
      const created = await post(srv, rpc('tools/call', { name: 'tasked', arguments: {}, task: {}, _meta: tmeta }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'tasked' } });
      const text = created.body.startsWith('{') ? created.body : created.body.split('\n').find((l) => l.startsWith('data: ')).slice(6);
      const taskId = JSON.parse(text).result?.taskId;
      assert.ok(taskId, created.body);
      await until(() => rx.spans.some((s) => s.traceId === taskTrace && s.name === 'task tasked'), 'the task span', WAIT);
      const tspans = rx.spans.filter((s) => s.traceId === taskTrace);
      const req = tspans.find((s) => s.name === 'tools/call tasked');
      const work = tspans.find((s) => s.name === 'task tasked');
      const inner = tspans.find((s) => s.name === 'work');
      assert.equal(work.parentSpanId, req.spanId);
      assert.equal(work.attrs['mcp.task.id'], taskId);
      assert.equal(inner.parentSpanId, work.spanId);
      assert.ok(req.end <= work.end, 'the request was answered before the task ended');
    }, { env: { OTEL_SERVICE_NAME: '' } });
  } finally {
    await rx.close();
    await up.close();
  }
});

test('the waits of threads (mcp.all) are CLIENT spans under the call\'s span, as the handler\'s are', opts, async () => {
  const rx = await startReceiver();
  const up = await startUpstream();
  try {
    await withHttp(APP, ['--otlp', rx.url], async (srv) => {
      const client = new Client({ name: 'traces-test', version: '0.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
      const traceId = crypto.randomBytes(16).toString('hex'), clientSpan = crypto.randomBytes(8).toString('hex');
      try {
        const r = await client.callTool({ name: 'fetch_two', arguments: { url: up.url }, _meta: { traceparent: `00-${traceId}-${clientSpan}-01` } });
        assert.equal(r.content[0].text, '200 200');
      } finally {
        await client.close();
      }
      await until(() => rx.spans.filter((s) => s.traceId === traceId).length >= 3, 'the spans exported', WAIT);
      const mine = rx.spans.filter((s) => s.traceId === traceId);
      const server = mine.find((s) => s.name === 'tools/call fetch_two');
      assert.ok(server, JSON.stringify(mine.map((s) => s.name)));
      const outs = mine.filter((s) => s.kind === SpanKind.SPAN_KIND_CLIENT);
      assert.equal(outs.length, 2, JSON.stringify(mine.map((s) => s.name)));
      for (const out of outs) {
        assert.equal(out.parentSpanId, server.spanId, 'a thread\'s wait hangs under the call\'s span');
        assert.ok(out.start >= server.start && out.end <= server.end);
      }
    });
  } finally {
    await rx.close();
    await up.close();
  }
});

test('OTEL_* variables: the endpoint, the service name, sampling off; a collector down or silent costs the calls nothing, the misses are counted', opts, async () => {
  const rx = await startReceiver();
  const silent = http.createServer(() => {}); // accepts, never answers
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const mport = await freePort();
  const REV = '2026-07-28';
  const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
  const call = (srv) => post(srv, rpc('tools/call', { name: 'plain', arguments: {}, _meta: meta }),
    { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'plain' } });
  try {
    await withHttp(APP, [], async (srv) => {
      for (let i = 0; i < 3; i++) assert.equal((await call(srv)).status, 200);
      await until(() => rx.spans.length >= 3, 'the spans', WAIT);
      assert.equal(rx.spans[0].resource['service.name'], 'billing-mcp');
    }, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${rx.url}/`, OTEL_SERVICE_NAME: 'billing-mcp' } });
    const before = rx.spans.length;
    await withHttp(APP, [], async (srv) => {
      for (let i = 0; i < 3; i++) assert.equal((await call(srv)).status, 200);
      await new Promise((r) => setTimeout(r, 1500));
    }, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_TRACES_SAMPLER: 'always_off' } });
    assert.equal(rx.spans.length, before, 'always_off exported spans');
    // a collector that never answers: the calls go on; and one that is not there
    for (const url of [`http://127.0.0.1:${silent.address().port}`, `http://127.0.0.1:${await freePort()}`]) {
      await withHttp(APP, ['--otlp', url, '--metrics', `127.0.0.1:${mport}`, '--shutdown-grace', '1'], async (srv) => {
        for (let i = 0; i < 40; i++) assert.equal((await call(srv)).status, 200);
        if (url.endsWith(`${silent.address().port}`)) return; // its batch waits on the collector: no count yet
        await until(async () => {
          const body = await new Promise((resolve) => http.get(`http://127.0.0.1:${mport}/metrics`, (res) => {
            let t = '';
            res.on('data', (d) => (t += d)).on('end', () => resolve(t));
          }));
          const m = body.match(/^mcp_otlp_spans_total\{result="dropped"\} (\d+)$/m);
          return m && Number(m[1]) >= 40;
        }, 'the dropped spans counted', WAIT);
      });
    }
  } finally {
    await rx.close();
    silent.closeAllConnections();
    silent.close();
  }
});

test('mcp.store commands on Redis are CLIENT spans of the call (the command, never the key)', { ...opts, skip: !existsSync(REDIS) && 'redis-server is not installed' }, async () => {
  const rx = await startReceiver();
  const redis = await startRedis();
  try {
    await withHttp(APP, ['--otlp', rx.url, '--store', `redis://127.0.0.1:${redis.port}/6`], async (srv) => {
      const REV = '2026-07-28';
      const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
      // the first calls may come before the store has connected (it says so: unreachable)
      await until(async () => {
        const ex = await post(srv, rpc('tools/call', { name: 'count', arguments: {}, _meta: meta }),
          { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'count' } });
        assert.equal(ex.status, 200, ex.body);
        return !/unreachable/.test(ex.body);
      }, 'a call that reached the store', WAIT);
      await until(() => rx.spans.some((s) => s.name.startsWith('redis ')), 'the redis span', WAIT);
      const cmd = rx.spans.find((s) => s.name.startsWith('redis '));
      // (a call that found the store unreachable has a server span too, and no command)
      const server = rx.spans.find((s) => s.name === 'tools/call count' && s.spanId === cmd.parentSpanId);
      assert.ok(server, 'the command is a child of its call\'s server span');
      assert.equal(cmd.parentSpanId, server.spanId);
      assert.equal(cmd.kind, SpanKind.SPAN_KIND_CLIENT);
      assert.equal(cmd.attrs['db.system.name'], 'redis');
      assert.ok(['EVAL', 'INCRBY'].includes(cmd.attrs['db.operation.name']), JSON.stringify(cmd.attrs));
      assert.ok(!JSON.stringify(cmd.attrs).includes('traces:count') && !cmd.name.includes('traces:count'), 'the key is in the span');
    });
  } finally {
    await stopChild(redis.child, redis.exited);
    await rx.close();
  }
});

test('mcp.redis: a CLIENT span per command and one per pipeline (the command names, never a key)', { ...opts, skip: !existsSync(REDIS) && 'redis-server is not installed' }, async () => {
  const rx = await startReceiver();
  const redis = await startRedis();
  try {
    await withHttp(path.join(APPS, 'redis'), ['--otlp', rx.url, '--store', `redis://127.0.0.1:${redis.port}/6`], async (srv) => {
      const REV = '2026-07-28';
      const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
      const call = (name, args) => post(srv, rpc('tools/call', { name, arguments: args, _meta: meta }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });
      await until(async () => !/unreachable/.test((await call('cart', { k: 'traces:cart', item: 'secret-item' })).body),
        'a call that reached redis', WAIT);
      assert.match((await call('peek', { k: 'traces:peek' })).body, /traces:peek/);
      assert.match((await call('uncaught', {})).body, /wrong number of arguments/);
      await until(() => ['redis PIPELINE', 'redis GET', 'redis INCR'].every((n) => rx.spans.some((s) => s.name === n)),
        'the redis spans', WAIT);
      const pipe = rx.spans.find((s) => s.name === 'redis PIPELINE');
      const server = rx.spans.find((s) => s.name === 'tools/call cart' && s.spanId === pipe.parentSpanId);
      assert.ok(server, 'the pipeline is a child of its call\'s server span');
      assert.equal(pipe.kind, SpanKind.SPAN_KIND_CLIENT);
      assert.equal(pipe.attrs['db.system.name'], 'redis');
      assert.equal(pipe.attrs['db.operation.name'], 'HINCRBY ZINCRBY HLEN');
      assert.equal(Number(pipe.attrs['db.operation.batch.size']), 3);
      const get = rx.spans.find((s) => s.name === 'redis GET');
      assert.equal(get.attrs['db.operation.name'], 'GET');
      assert.equal(get.kind, SpanKind.SPAN_KIND_CLIENT);
      const incr = rx.spans.find((s) => s.name === 'redis INCR');
      assert.equal(incr.status?.code, 2, 'an error reply fails its span'); // STATUS_CODE_ERROR
      const all = JSON.stringify(rx.spans.filter((s) => s.name.startsWith('redis ')).map((s) => [s.name, s.attrs, s.events]));
      assert.ok(!/traces:|secret-item/.test(all), 'a key or a value is in a span');
      assert.equal(rx.spans.filter((s) => s.name === 'redis PIPELINE' && s.parentSpanId === server.spanId).length, 1,
        'one span for the whole pipeline');
    });
  } finally {
    await stopChild(redis.child, redis.exited);
    await rx.close();
  }
});

// issue 33, item 8: spans the full queue refused were counted only when the
// export that held it up gave up (5 s later); now when they are refused. The
// collector holds the first batch and notes when luamcp gives up on it: the
// count must be there before that.
test('spans dropped on a full queue are counted at once, not when the stuck export gives up', opts, async () => {
  let gaveUp = false;
  const held = [];
  const stuck = http.createServer((req, res) => {
    held.push(res);
    req.on('close', () => { gaveUp = true; });
  });
  await new Promise((resolve) => stuck.listen(0, '127.0.0.1', resolve));
  const mport = await freePort();
  const srv = new RawServer([APP, '--no-watch', '--otlp', `http://127.0.0.1:${stuck.address().port}`,
    '--metrics', `127.0.0.1:${mport}`, '--shutdown-grace', '0']);
  const dropped = async () => {
    const body = await new Promise((resolve, reject) => http.get(`http://127.0.0.1:${mport}/metrics`, (res) => {
      let t = '';
      res.on('data', (d) => (t += d)).on('end', () => resolve(t));
    }).on('error', reject));
    const m = body.match(/^mcp_otlp_spans_total\{result="dropped"\} (\d+)$/m);
    return m ? Number(m[1]) : 0;
  };
  try {
    await srv.initialize();
    // one span first, so that the first batch takes it and waits on the collector
    srv.send({ jsonrpc: '2.0', id: 'first', method: 'tools/call', params: { name: 'plain', arguments: {} } });
    await srv.reply('"first"');
    await until(() => held.length === 1, 'the export held by the collector', WAIT);
    const N = 5000; // more than the queue's 4,096 spans
    for (let i = 0; i < N; i++) srv.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'plain', arguments: {} } });
    await srv.reply(String(N - 1));
    let n = 0;
    await until(async () => gaveUp || (n = await dropped()) > 0, 'the dropped spans counted', WAIT);
    assert.ok(n >= N - 4096, `${n} dropped spans counted while the export was held (it had given up: ${gaveUp})`);
    assert.equal(gaveUp, false, 'counted only once the stuck export gave up');
  } finally {
    for (const res of held) res.destroy();
    stuck.closeAllConnections();
    stuck.close();
    await srv.close?.();
  }
});
