// http-sdk.test.mjs — the official TypeScript SDK client over
// StreamableHTTPClientTransport against `luamcp serve --http`: the example
// app (repo root), tests/apps/features and tests/apps/http. Notifications
// during a call (SSE), two sessions at once, DELETE, the standalone GET
// stream, resumption after ctx:close_stream() (SDK and raw), and requests
// from the server answered in another POST. Each test starts its own server
// on a free 127.0.0.1 port and requires exit code 0 after SIGTERM.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { EXAMPLE_APP, FEATURES_APP, TEST_TIMEOUT, WAIT, collect, ms } from './helpers.mjs';
import {
  HTTP_APP,
  PROTOCOL_VERSION,
  answerOf,
  closeHttpSdk,
  connectHttpSdk,
  exchange,
  mcpHeaders,
  post,
  rawInitialize,
  rpc,
  withHttp,
} from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const req = { timeout: WAIT }; // per-request options for the SDK

const text = (result) => result.content.map((c) => c.text).join('\n');
const call = (name, args = {}) => rpc('tools/call', { name, arguments: args });

/**
 * Run body({srv, client, transport, conn}) with one SDK client connected to
 * a fresh server; the client is closed before the server gets SIGTERM (and
 * must exit 0).
 */
function withHttpSdk(dir, args, body, { capabilities } = {}) {
  return withHttp(dir, args, async (srv) => {
    const conn = await connectHttpSdk(srv, { capabilities });
    try {
      return await body({ srv, conn, client: conn.client, transport: conn.transport });
    } finally {
      await closeHttpSdk(conn);
    }
  });
}

/** The recorded POSTs of an SDK connection that carried this JSON-RPC method. */
const postsOf = (conn, method) => conn.fetches.filter((f) => f.method === 'POST' && f.body?.method === method);

// {=================================================== the example app

test('example app over HTTP: initialize, listTools/callTool, readResource, template, getPrompt, complete', opts, () =>
  withHttpSdk(EXAMPLE_APP, [], async ({ client, transport, conn }) => {
    assert.equal(transport.protocolVersion, PROTOCOL_VERSION);
    assert.match(transport.sessionId, /^[\x21-\x7e]{32,}$/);
    const info = client.getServerVersion();
    assert.equal(info.name, 'gift-server');
    assert.equal(info.version, '0.1.0');
    const caps = client.getServerCapabilities();
    for (const cap of ['tools', 'resources', 'prompts', 'logging', 'completions']) assert.ok(caps[cap], cap);
    assert.match(client.getInstructions(), /suggest_gifts/);
    await client.ping(req);

    const { tools } = await client.listTools(undefined, req);
    assert.ok(tools.find((t) => t.name === 'suggest_gifts'));
    const gifts = await client.callTool({ name: 'suggest_gifts', arguments: { occasion: 'birthday', budget: 50 } }, undefined, req);
    assert.notEqual(gifts.isError, true);
    assert.deepEqual(gifts.structuredContent.gifts.map((g) => g.id).sort(), ['catan', 'dice', 'tea']);
    assert.match(text(gifts), /3 gift ideas/);
    CallToolResultSchema.parse(gifts);

    const catalog = await client.readResource({ uri: 'mcp://gift-server/resources/gift_catalog' }, req);
    assert.equal(catalog.contents[0].mimeType, 'application/json');
    assert.equal(JSON.parse(catalog.contents[0].text).length, 7);

    const tea = await client.readResource({ uri: 'mcp://gift-server/gifts/tea' }, req);
    assert.equal(JSON.parse(tea.contents[0].text).name, 'Loose-leaf tea sampler');

    const prompt = await client.getPrompt({ name: 'gift_congrats_style', arguments: { tone: 'formal' } }, req);
    assert.equal(prompt.messages[0].role, 'user');
    assert.match(prompt.messages[0].content.text, /formal tone/);

    const ids = await client.complete(
      { ref: { type: 'ref/resource', uri: 'mcp://gift-server/gifts/{id}' }, argument: { name: 'id', value: 'c' } },
      req,
    );
    assert.deepEqual(ids.completion.values, ['catan']);
    const tones = await client.complete(
      { ref: { type: 'ref/prompt', name: 'gift_congrats_style' }, argument: { name: 'tone', value: 'f' } },
      req,
    );
    assert.deepEqual([...tones.completion.values].sort(), ['formal', 'friendly', 'funny']);

    // every POST after initialize carried the session id and the protocol version
    const later = conn.fetches.filter((f) => f.method === 'POST' && f.body?.method !== 'initialize');
    assert.ok(later.length >= 7);
    for (const f of later) {
      assert.equal(f.headers['mcp-session-id'], transport.sessionId);
      assert.equal(f.headers['mcp-protocol-version'], PROTOCOL_VERSION);
    }
  }));

// }===================================================

// {=================================================== notifications during a call

test('logging and progress notifications arrive during a call, on its SSE response', opts, () =>
  withHttpSdk(FEATURES_APP, [], async ({ client, conn }) => {
    const logs = collect(client, LoggingMessageNotificationSchema);
    const logged = await client.callTool({ name: 'log_levels', arguments: {} }, undefined, req);
    assert.equal(text(logged), 'logged');
    // the SDK hands over notifications before the response that follows them
    assert.deepEqual(
      logs.items.map((l) => [l.level, l.data]),
      [
        ['debug', 'debug message'],
        ['info', 'info message 2'],
        ['notice', 'notice message'],
        ['warning', 'warning message'],
        ['error', 'error message'],
      ],
    );
    assert.match(postsOf(conn, 'tools/call')[0].contentType, /^text\/event-stream/);

    const progress = [];
    const result = await client.callTool({ name: 'progress', arguments: { steps: 3, pause: 0.05 } }, undefined, {
      ...req,
      onprogress: (p) => progress.push(p),
    });
    assert.equal(text(result), 'progress sent: true');
    assert.deepEqual(
      progress.map((p) => [p.progress, p.total, p.message]),
      [
        [1, 3, 'step 1 of 3'],
        [2, 3, 'step 2 of 3'],
        [3, 3, 'step 3 of 3'],
      ],
    );
    // a call that says nothing else answers with plain JSON
    assert.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'plain' } }, undefined, req)), 'plain');
    assert.match(postsOf(conn, 'tools/call').at(-1).contentType, /^application\/json/);
  }));

// }===================================================

// {=================================================== sessions

test('two clients on two sessions at once: concurrent calls, each gets its own answers and logs', opts, () =>
  withHttp(HTTP_APP, [], async (srv) => {
    const a = await connectHttpSdk(srv, { name: 'client-a' });
    const b = await connectHttpSdk(srv, { name: 'client-b' });
    try {
      assert.ok(a.transport.sessionId && b.transport.sessionId);
      assert.notEqual(a.transport.sessionId, b.transport.sessionId);
      const logsA = collect(a.client, LoggingMessageNotificationSchema);
      const logsB = collect(b.client, LoggingMessageNotificationSchema);
      const seconds = ms(200) / 1000;
      const tagged = (conn, tag) => conn.client.callTool({ name: 'tagged', arguments: { tag, seconds } }, undefined, req);
      const results = await Promise.all([tagged(a, 'A1'), tagged(b, 'B1'), tagged(a, 'A2'), tagged(b, 'B2'), tagged(a, 'A3')]);
      assert.deepEqual(results.map(text), ['tag A1', 'tag B1', 'tag A2', 'tag B2', 'tag A3']);
      assert.deepEqual(logsA.items.map((l) => l.data).sort(), ['tag A1', 'tag A2', 'tag A3']);
      assert.deepEqual(logsB.items.map((l) => l.data).sort(), ['tag B1', 'tag B2']);
    } finally {
      await closeHttpSdk(a);
      await closeHttpSdk(b);
    }
  }));

test('terminateSession() sends DELETE; then a request with the old session id gets 404', opts, () =>
  withHttp(FEATURES_APP, [], async (srv) => {
    const conn = await connectHttpSdk(srv);
    try {
      const old = conn.transport.sessionId;
      assert.ok(old);
      assert.equal(text(await conn.client.callTool({ name: 'echo', arguments: { text: 'before' } }, undefined, req)), 'before');
      await conn.transport.terminateSession();
      const del = await conn.waitFetch((f) => f.method === 'DELETE', 'the DELETE');
      assert.equal(del.headers['mcp-session-id'], old);
      assert.ok(del.status >= 200 && del.status < 300, `DELETE answered ${del.status}`);
      assert.equal(conn.transport.sessionId, undefined);

      const res = await fetch(srv.url, {
        method: 'POST',
        headers: mcpHeaders({ session: old }),
        body: JSON.stringify(call('echo', { text: 'after' })),
      });
      const body = await res.text();
      assert.equal(res.status, 404, `a request on the deleted session: ${res.status} ${body}`);
      assert.equal(JSON.parse(body).jsonrpc, '2.0');
    } finally {
      await closeHttpSdk(conn);
    }
  }));

// }===================================================

// {=================================================== the standalone GET stream

test('the GET stream carries notifications/resources/updated for a subscribed resource (SDK)', opts, () =>
  withHttpSdk(HTTP_APP, [], async ({ client, conn }) => {
    await conn.getOpened();
    const updates = collect(client, ResourceUpdatedNotificationSchema);
    await client.subscribeResource({ uri: 'mcp://test-http/counter' }, req);
    // an update of a resource nobody subscribed to, then of the subscribed one:
    // the first notification to arrive must be the second
    assert.equal(text(await client.callTool({ name: 'bump', arguments: { uri: 'mcp://test-http/unwatched' } }, undefined, req)), 'counter is 1');
    assert.equal(text(await client.callTool({ name: 'bump', arguments: {} }, undefined, req)), 'counter is 2');
    await updates.until((items) => items.length >= 1, 'notifications/resources/updated');
    assert.deepEqual(updates.items[0], { uri: 'mcp://test-http/counter' });
    // not on the POSTs: those answered with plain JSON
    for (const f of postsOf(conn, 'tools/call')) assert.match(f.contentType, /^application\/json/);
    const read = await client.readResource({ uri: 'mcp://test-http/counter' }, req);
    assert.equal(read.contents[0].text, '2');
  }));

test('the GET stream carries notifications/resources/updated (raw SSE); unsubscribe stops them', opts, () =>
  withHttp(HTTP_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const stream = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session }) });
    try {
      assert.equal(stream.status, 200);
      assert.match(stream.headers['content-type'], /^text\/event-stream/);
      const priming = await stream.waitEvent(() => true, 'the priming event of the GET stream');
      assert.ok(priming.id);
      const sub = await post(srv, rpc('resources/subscribe', { uri: 'mcp://test-http/counter' }), { session });
      assert.deepEqual(answerOf(sub).result, {});

      const bump = await post(srv, call('bump'), { session });
      assert.match(bump.headers['content-type'], /^application\/json/, 'the notification is not on the POST');
      assert.equal(answerOf(bump).result.content[0].text, 'counter is 1');
      const updated = await stream.waitMessage((m) => m.method === 'notifications/resources/updated', 'the update on the GET stream');
      assert.deepEqual(updated.params, { uri: 'mcp://test-http/counter' });
      assert.equal('id' in updated, false);

      await post(srv, rpc('resources/unsubscribe', { uri: 'mcp://test-http/counter' }), { session });
      await post(srv, rpc('resources/subscribe', { uri: 'mcp://test-http/other' }), { session });
      await post(srv, call('bump'), { session }); // counter: unsubscribed, no notification
      await post(srv, call('bump', { uri: 'mcp://test-http/other' }), { session });
      await stream.until((s) => s.messages.length >= 2, 'a second notification');
      assert.deepEqual(stream.messages[1].params, { uri: 'mcp://test-http/other' }, `after unsubscribe: ${stream.body}`);
      // the GET stream never carries responses
      assert.ok(stream.messages.every((m) => !('result' in m) && !('error' in m)), stream.body);
    } finally {
      stream.abort();
    }
  }));

// }===================================================

// {=================================================== resumption

test('resumption: a tool ends its SSE response (ctx:close_stream); the SDK resumes with Last-Event-ID and gets the result', opts, () =>
  withHttpSdk(HTTP_APP, [], async ({ client, conn }) => {
    const logs = collect(client, LoggingMessageNotificationSchema);
    const seconds = ms(800) / 1000; // long enough for the worker to end the response first
    const result = await client.callTool({ name: 'resumable', arguments: { seconds, before: 'before the close' } }, undefined, req);
    assert.deepEqual(result.structuredContent, { closed: true, text: 'resumed result' });
    assert.deepEqual(logs.items.map((l) => l.data), ['before the close', 'after the stream closed']);
    const resumed = conn.fetches.filter((f) => f.method === 'GET' && f.headers['last-event-id']);
    assert.equal(resumed.length, 1, `one resumption: ${JSON.stringify(conn.fetches.map((f) => [f.method, f.headers['last-event-id'], f.status]))}`);
    assert.equal(resumed[0].status, 200);
    assert.equal(resumed[0].headers['mcp-session-id'], conn.transport.sessionId);
    // the call still works normally afterwards
    assert.equal(text(await client.callTool({ name: 'tagged', arguments: { tag: 'next', seconds: 0 } }, undefined, req)), 'tag next');
  }));

test('resumption (raw): the POST stream ends after the priming event, without the result; GET with Last-Event-ID brings it', opts, () =>
  withHttp(HTTP_APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const seconds = ms(800) / 1000; // long enough for the worker to end the response first
    const msg = call('resumable', { seconds });
    const first = await post(srv, msg, { session });
    assert.equal(first.status, 200);
    assert.match(first.headers['content-type'], /^text\/event-stream/);
    assert.equal(first.events.length, 1, `only the priming event before the close: ${first.body}`);
    const [priming] = first.events;
    assert.ok(priming.id, `the priming event has an id: ${first.body}`);
    assert.match(priming.retry ?? '', /^\d+$/, `the priming event has retry: ${first.body}`);
    assert.equal(first.messages.length, 0, `no message, no result: ${first.body}`);

    const resumed = await exchange(srv, {
      method: 'GET',
      headers: mcpHeaders({ method: 'GET', session, extra: { 'Last-Event-ID': priming.id } }),
    });
    try {
      assert.equal(resumed.status, 200);
      assert.match(resumed.headers['content-type'], /^text\/event-stream/);
      const answer = await resumed.waitMessage((m) => m.id === msg.id && ('result' in m || 'error' in m), 'the result on the resumed stream');
      assert.deepEqual(answer.result.structuredContent, { closed: true, text: 'resumed result' });
      const idx = resumed.messages.indexOf(answer);
      assert.deepEqual(
        resumed.messages.slice(0, idx).map((m) => [m.method, m.params?.data]),
        [['notifications/message', 'after the stream closed']],
        `what came before the result: ${resumed.body}`,
      );
      const ids = resumed.events.filter((e) => e.message).map((e) => e.id);
      assert.ok(ids.every(Boolean), `the replayed events have ids: ${resumed.body}`);
      assert.ok(!ids.includes(priming.id), 'event ids are not reused');
    } finally {
      resumed.abort();
    }
  }));

// }===================================================

// {=================================================== server -> client requests

test('ctx:sample and ctx:elicit over HTTP: the SDK client answers in another POST', opts, () =>
  withHttpSdk(
    HTTP_APP,
    [],
    async ({ client, conn }) => {
      const asked = [];
      client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
        asked.push(request.params);
        return { role: 'assistant', content: { type: 'text', text: `answer to ${request.params.messages[0].content.text}` }, model: 'test-model' };
      });
      let decision = { action: 'accept', content: { name: 'Ada' } };
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return decision;
      });

      const sampled = await client.callTool({ name: 'ask_sample', arguments: { question: 'six times seven?' } }, undefined, req);
      assert.equal(text(sampled), 'model test-model said: answer to six times seven?');
      assert.equal(asked[0].maxTokens, 50);

      const elicited = await client.callTool({ name: 'ask_elicit', arguments: { question: 'Your name?' } }, undefined, req);
      assert.deepEqual(elicited.structuredContent, { action: 'accept', name: 'Ada' });
      assert.equal(asked[1].message, 'Your name?');
      assert.deepEqual(asked[1].requestedSchema.required, ['name']);

      decision = { action: 'decline' };
      const declined = await client.callTool({ name: 'ask_elicit', arguments: { question: 'Again?' } }, undefined, req);
      assert.deepEqual(declined.structuredContent, { action: 'decline', name: null });

      // the requests came on the calls' SSE responses; each answer was its own POST, accepted with 202
      for (const f of postsOf(conn, 'tools/call')) assert.match(f.contentType, /^text\/event-stream/);
      const isAnswer = (f) => f.method === 'POST' && f.body && 'result' in f.body && !('method' in f.body);
      // the call may end before the 202 of the answer that resumed it reaches the client
      await conn.waitFetch((f) => isAnswer(f) && f.body.result.action === 'decline', 'the 202 of the last answer');
      const answers = conn.fetches.filter(isAnswer);
      assert.equal(answers.length, 3, JSON.stringify(conn.fetches.map((f) => [f.method, f.body, f.status])));
      for (const f of answers) {
        assert.equal(f.status, 202);
        assert.equal(f.headers['mcp-session-id'], conn.transport.sessionId);
      }
    },
    { capabilities: { sampling: {}, elicitation: {} } },
  ));

// }===================================================
