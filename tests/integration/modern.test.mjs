// modern.test.mjs — the 2026-07-28 revision over stdio, raw NDJSON, beside
// the 2025 era on the same process: the per-request envelope, discover,
// results, errors, multi round-trip requests and their sealed state,
// subscriptions/listen with hot reload, the per-request log level.
import assert from 'node:assert/strict';
import { cp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { APPS, TEST_TIMEOUT, WAIT, removeTemp, tempApp, withRaw } from './helpers.mjs';

const APP = path.join(APPS, 'modern');
const opts = { timeout: TEST_TIMEOUT };
const REV = '2026-07-28';

const meta = (caps = {}, extra = {}) => ({
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientCapabilities': caps,
  'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '0' },
  ...extra,
});
const SERVER_INFO = { name: 'modern-test', version: '2.0.0' };

test('results: resultType and serverInfo on every result, cache hints on lists and reads; removed methods -32601; not found -32602', opts, () =>
  withRaw([APP], async (srv) => {
    const list = await srv.call(1, 'tools/list', { _meta: meta() });
    assert.equal(list.result.resultType, 'complete');
    assert.deepEqual(list.result._meta['io.modelcontextprotocol/serverInfo'], SERVER_INFO);
    assert.equal(list.result.cacheScope, 'public');
    assert.deepEqual(list.result.tools.map((t) => t.name), ['echo', 'greet', 'fickle', 'log_and_progress', 'roots', 'ask_two', 'keyed', 'caps', 'route', 'optional_null', 'error_shaped']);
    const call = await srv.call(2, 'tools/call', { name: 'echo', arguments: { text: 'hi' }, _meta: meta() });
    assert.deepEqual(call.result.content, [{ type: 'text', text: 'hi' }]);
    assert.equal(call.result.resultType, 'complete');
    assert.deepEqual(call.result._meta['io.modelcontextprotocol/serverInfo'], SERVER_INFO);
    const a = await srv.call(3, 'resources/read', { uri: 'test://modern/a', _meta: meta() });
    assert.equal(a.result.contents[0].text, 'resource a');
    assert.deepEqual([a.result.ttlMs, a.result.cacheScope], [60000, 'public']);
    const b = await srv.call(4, 'resources/read', { uri: 'test://modern/b', _meta: meta() });
    assert.deepEqual([b.result.ttlMs, b.result.cacheScope], [0, 'private']);
    const none = await srv.call(5, 'resources/read', { uri: 'test://modern/none', _meta: meta() });
    assert.equal(none.error.code, -32602);
    assert.equal(none.error.data.uri, 'test://modern/none');
    for (const [i, m] of ['ping', 'initialize', 'logging/setLevel', 'resources/subscribe'].entries()) {
      const r = await srv.call(10 + i, m, { _meta: meta(), level: 'info', uri: 'test://modern/a' });
      assert.equal(r.error?.code, -32601, `${m}: ${JSON.stringify(r)}`);
    }
    // the same process serves a 2025 session too, unchanged
    await srv.initialize();
    const legacy = await srv.call(20, 'tools/call', { name: 'echo', arguments: { text: 'old' } });
    assert.deepEqual(legacy.result, { content: [{ type: 'text', text: 'old' }] });
    const legacyNone = await srv.call(21, 'resources/read', { uri: 'test://modern/none' });
    assert.equal(legacyNone.error.code, -32002);
  }));

async function roundTrip(srv, id, args, answers, caps = { elicitation: {} }) {
  let state, responses;
  for (let round = 0; ; round++) {
    const params = { name: 'greet', arguments: args, _meta: meta(caps) };
    if (state) Object.assign(params, { requestState: state, inputResponses: responses });
    const r = await srv.call(`${id}.${round}`, 'tools/call', params);
    if (r.result?.resultType !== 'input_required') return { r, rounds: round };
    const [key, req] = Object.entries(r.result.inputRequests)[0];
    assert.equal(req.method, 'elicitation/create');
    state = r.result.requestState;
    responses = { [key]: { action: 'accept', content: answers[round] } };
  }
}

test('multi round-trip: ctx:elicit twice is two rounds of input_required, the retry completes it', opts, () =>
  withRaw([APP], async (srv) => {
    const { r, rounds } = await roundTrip(srv, 'g', { greeting: 'Hello' }, [{ name: 'Ada' }, { mood: 'glad' }]);
    assert.equal(rounds, 2);
    assert.equal(r.result.content[0].text, 'Hello, Ada (glad)');
    // and under a 2025 session the same handler sends elicitation/create requests
    await srv.initialize();
  }));

test('requestState: tampered, foreign, for other arguments, expired, or a different question: refused', opts, () =>
  withRaw(['--state-ttl', '1', APP], async (srv) => {
    const first = await srv.call(1, 'tools/call', { name: 'greet', arguments: { greeting: 'Hi' }, _meta: meta({ elicitation: {} }) });
    const state = first.result.requestState;
    const key = Object.keys(first.result.inputRequests)[0];
    const retry = (id, s, args = { greeting: 'Hi' }, name = 'greet') =>
      srv.call(id, 'tools/call', { name, arguments: args, _meta: meta({ elicitation: {} }), requestState: s,
        inputResponses: { [key]: { action: 'accept', content: { name: 'Eve' } } } });
    // a flipped byte in the payload
    const [v, payload, mac] = state.split('.');
    const flipped = Buffer.from(payload, 'base64');
    flipped[10] ^= 1;
    const tampered = await retry(2, [v, flipped.toString('base64'), mac].join('.'));
    assert.equal(tampered.error?.code, -32602);
    assert.match(tampered.error.message, /requestState/);
    assert.equal((await retry(3, 'v1.e30=.AAAA')).error?.code, -32602);
    // the same bytes spelled otherwise (padding dropped, whitespace): one spelling only
    const [, p0, m0] = state.split('.');
    for (const respelled of [[v, p0.replace(/=+$/, ''), m0], [v, p0, m0.replace(/=+$/, '')], [v, ` ${p0}`, m0]]) {
      if (respelled.join('.') === state) continue;
      assert.equal((await retry(30, respelled.join('.'))).error?.code, -32602, respelled.join('.'));
    }
    assert.equal((await retry(4, state, { greeting: 'Bye' })).error?.code, -32602); // other arguments
    assert.equal((await retry(5, state, {}, 'fickle')).error?.code, -32602); // another tool
    const ok = await retry(6, state);
    assert.equal(ok.result?.resultType, 'input_required'); // the next question
    await delay(2100);
    const stale = await retry(7, state);
    assert.equal(stale.error?.code, -32602);
    assert.match(stale.error.message, /expired/);
    // a handler that asks something else on the retry
    const f1 = await srv.call(8, 'tools/call', { name: 'fickle', arguments: {}, _meta: meta({ elicitation: {} }) });
    const fk = Object.keys(f1.result.inputRequests)[0];
    const f2 = await srv.call(9, 'tools/call', { name: 'fickle', arguments: {}, _meta: meta({ elicitation: {} }),
      requestState: f1.result.requestState, inputResponses: { [fk]: { action: 'accept', content: {} } } });
    assert.equal(f2.result?.isError, true);
    assert.match(f2.result.content[0].text, /differs from the one the client answered/);
  }));

test('a key file signs the state, and a rotated file with the old key second still verifies it', opts, async () => {
  const dir = await tempApp({ 'k1': 'a'.repeat(40) + '\n', 'k2': 'b'.repeat(40) + '\n' + 'a'.repeat(40) + '\n', 'k3': 'b'.repeat(40) + '\n' });
  try {
    let state, key;
    await withRaw(['--state-key', path.join(dir, 'k1'), APP], async (srv) => {
      const r = await srv.call(1, 'tools/call', { name: 'greet', arguments: { greeting: 'Hi' }, _meta: meta({ elicitation: {} }) });
      state = r.result.requestState;
      key = Object.keys(r.result.inputRequests)[0];
    });
    const retry = (srv) => srv.call(2, 'tools/call', { name: 'greet', arguments: { greeting: 'Hi' }, _meta: meta({ elicitation: {} }),
      requestState: state, inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } } });
    await withRaw(['--state-key', path.join(dir, 'k2'), APP], async (srv) => {
      assert.equal((await retry(srv)).result?.resultType, 'input_required'); // another process, the old key second
    });
    await withRaw(['--state-key', path.join(dir, 'k3'), APP], async (srv) => {
      assert.equal((await retry(srv)).error?.code, -32602); // the old key dropped
    });
  } finally {
    await removeTemp(dir);
  }
});

test('subscriptions/listen: ack first, hot reload delivers list_changed and resources/updated stamped with the id, cancel ends it', opts, async () => {
  const dir = await tempApp({
    'scripts/a.lua': 'local mcp = require "mcp"\nmcp.tool { name = "a", description = "a", handler = function() return "a" end }\nmcp.resource { uri = "test://r", name = "r", text = "one" }\n',
  });
  try {
    await withRaw([dir], async (srv) => {
      srv.send({ jsonrpc: '2.0', id: 'sub', method: 'subscriptions/listen', params: { _meta: meta(), notifications: { toolsListChanged: true, resourceSubscriptions: ['test://r'] } } });
      srv.send({ jsonrpc: '2.0', id: 42, method: 'subscriptions/listen', params: { _meta: meta(), notifications: { promptsListChanged: true } } });
      const ack = JSON.parse(await srv.take((l) => l.includes('acknowledged') && l.includes('"sub"')));
      assert.deepEqual(ack.params.notifications, { toolsListChanged: true, resourceSubscriptions: ['test://r'] });
      assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub');
      const ack42 = JSON.parse(await srv.take((l) => l.includes('acknowledged') && l.includes(':42')));
      assert.strictEqual(ack42.params._meta['io.modelcontextprotocol/subscriptionId'], 42); // a number stays a number
      await writeFile(path.join(dir, 'scripts', 'a.lua'),
        'local mcp = require "mcp"\nmcp.tool { name = "b", description = "b", handler = function() return "b" end }\nmcp.resource { uri = "test://r", name = "r", text = "two" }\n');
      const changed = JSON.parse(await srv.take((l) => l.includes('tools/list_changed'), 'list_changed', WAIT));
      assert.equal(changed.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub');
      const updated = JSON.parse(await srv.take((l) => l.includes('resources/updated'), 'updated', WAIT));
      assert.equal(updated.params.uri, 'test://r');
      assert.equal(updated.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub');
      assert.ok(!srv.lines.some((l) => l.includes('list_changed') && l.includes(':42')), 'prompts were not asked by 42 for tools');
      srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'sub' } });
      await delay(100);
      const after = srv.lines.length;
      await writeFile(path.join(dir, 'scripts', 'a.lua'),
        'local mcp = require "mcp"\nmcp.tool { name = "c", description = "c", handler = function() return "c" end }\n');
      await delay(800);
      assert.ok(!srv.lines.slice(after).some((l) => l.includes('"sub"')), 'nothing after the cancel');
      const tools = await srv.call(5, 'tools/list', { _meta: meta() });
      assert.deepEqual(tools.result.tools.map((t) => t.name), ['c']);
    });
  } finally {
    await removeTemp(dir);
  }
});

test('subscriptions/listen honours only what the server declares: under --no-watch a tools-only app acknowledges toolsListChanged alone', opts, async () => {
  const dir = await tempApp({
    'scripts/only.lua': 'local mcp = require "mcp"\nmcp.tool { name = "only", handler = function() return "x" end }\n',
  });
  try {
    await withRaw(['--no-watch', dir], async (srv) => {
      const d = await srv.call(1, 'server/discover', { _meta: meta() });
      assert.equal(d.result.capabilities.prompts, undefined);
      assert.equal(d.result.capabilities.resources, undefined);
      srv.send({ jsonrpc: '2.0', id: 'all', method: 'subscriptions/listen', params: { _meta: meta(), notifications: { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['test://r'] } } });
      const ack = JSON.parse(await srv.take((l) => l.includes('acknowledged')));
      assert.deepEqual(ack.params.notifications, { toolsListChanged: true });
      srv.child.stdin.end();
      await srv.reply('"all"');
    });
    // watching, the same app declares prompts and resources (a reload may add them) and honours them
    await withRaw([dir], async (srv) => {
      srv.send({ jsonrpc: '2.0', id: 'all', method: 'subscriptions/listen', params: { _meta: meta(), notifications: { promptsListChanged: true, resourcesListChanged: true } } });
      const ack = JSON.parse(await srv.take((l) => l.includes('acknowledged')));
      assert.deepEqual(ack.params.notifications, { promptsListChanged: true, resourcesListChanged: true });
      srv.child.stdin.end();
      await srv.reply('"all"');
    });
  } finally {
    await removeTemp(dir);
  }
});

test('at shutdown an open subscription gets its graceful result', opts, () =>
  withRaw([APP], async (srv) => {
    srv.send({ jsonrpc: '2.0', id: 7, method: 'subscriptions/listen', params: { _meta: meta(), notifications: { toolsListChanged: true } } });
    await srv.take((l) => l.includes('acknowledged'));
    srv.child.stdin.end();
    const done = JSON.parse(await srv.reply('7'));
    assert.equal(done.result.resultType, 'complete');
    assert.equal(done.result._meta['io.modelcontextprotocol/subscriptionId'], 7);
  }));

test('ctx:ask asks several questions in one round; key= names a question; ctx.client_capabilities is the request\'s', opts, () =>
  withRaw([APP], async (srv) => {
    const caps = { elicitation: {}, sampling: {} };
    const r1 = await srv.call(1, 'tools/call', { name: 'ask_two', arguments: {}, _meta: meta(caps) });
    assert.equal(r1.result.resultType, 'input_required');
    assert.deepEqual(Object.keys(r1.result.inputRequests).sort(), ['pick', 'who']);
    assert.equal(r1.result.inputRequests.pick.method, 'sampling/createMessage');
    const r2 = await srv.call(2, 'tools/call', { name: 'ask_two', arguments: {}, _meta: meta(caps), requestState: r1.result.requestState,
      inputResponses: { who: { action: 'accept', content: { name: 'Ada' } }, pick: { role: 'assistant', content: { type: 'text', text: 'blue' }, model: 'm' } } });
    assert.equal(r2.result.content[0].text, 'Ada / blue');
    // one answer missing: asked again, not an error
    const partial = await srv.call(3, 'tools/call', { name: 'ask_two', arguments: {}, _meta: meta(caps), requestState: r1.result.requestState,
      inputResponses: { who: { action: 'accept', content: { name: 'Ada' } } } });
    assert.equal(partial.result.resultType, 'input_required');
    // without the sampling capability: -32021 naming it
    const nosample = await srv.call(4, 'tools/call', { name: 'ask_two', arguments: {}, _meta: meta({ elicitation: {} }) });
    assert.equal(nosample.error.code, -32021);
    assert.deepEqual(nosample.error.data.requiredCapabilities, { sampling: {} });
    const k1 = await srv.call(5, 'tools/call', { name: 'keyed', arguments: {}, _meta: meta({ elicitation: {} }) });
    assert.deepEqual(Object.keys(k1.result.inputRequests), ['user_name']);
    assert.equal(k1.result.inputRequests.user_name.params.key, undefined, 'the key is not a param');
    // an answer under the key with no state (the first round) completes it
    const k2 = await srv.call(6, 'tools/call', { name: 'keyed', arguments: {}, _meta: meta({ elicitation: {} }),
      inputResponses: { user_name: { action: 'accept', content: { name: 'Bo' } }, extra: { x: 1 } } });
    assert.equal(k2.result.content[0].text, 'Hello, Bo!');
    const c1 = await srv.call(7, 'tools/call', { name: 'caps', arguments: {}, _meta: meta({ sampling: {}, roots: {} }) });
    assert.equal(c1.result.content[0].text, 'roots,sampling');
    const c2 = await srv.call(8, 'tools/call', { name: 'caps', arguments: {}, _meta: meta() });
    assert.equal(c2.result.content[0].text, '');
  }));

test('under a 2025 session ctx:ask sends the requests one after the other, key= is not sent', opts, () =>
  withRaw([APP], async (srv) => {
    await srv.call('init', 'initialize', { protocolVersion: '2025-11-25', capabilities: { elicitation: {}, sampling: {} }, clientInfo: { name: 't', version: '0' } });
    srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const pending = srv.call(2, 'tools/call', { name: 'ask_two', arguments: {} });
    for (let i = 0; i < 2; i++) {
      const q = JSON.parse(await srv.take((l) => /"method":"(elicitation\/create|sampling\/createMessage)"/.test(l) && l.includes('"id":')));
      const answer = q.method === 'elicitation/create' ? { action: 'accept', content: { name: 'Ada' } } : { role: 'assistant', content: { type: 'text', text: 'red' }, model: 'm' };
      srv.send({ jsonrpc: '2.0', id: q.id, result: answer });
    }
    assert.equal((await pending).result.content[0].text, 'Ada / red');
    const keyed = srv.call(3, 'tools/call', { name: 'keyed', arguments: {} });
    const q = JSON.parse(await srv.take((l) => l.includes('"method":"elicitation/create"') && l.includes('Name?')));
    assert.equal(q.params.key, undefined);
    srv.send({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { name: 'Cy' } } });
    assert.equal((await keyed).result.content[0].text, 'Hello, Cy!');
  }));

test('an explicit null for an optional argument counts as absent, unless its schema accepts null; a required one is still checked', opts, () =>
  withRaw([APP], async (srv) => {
    const call = (id, args) => srv.call(id, 'tools/call', { name: 'optional_null', arguments: args, _meta: meta() });
    assert.equal((await call(1, { text: 't', note: null })).result.content[0].text, 't|nil|nil');
    assert.equal((await call(2, { text: 't', maybe: null })).result.content[0].text, 't|nil|null');
    const req = await call(3, { text: null });
    assert.equal(req.result.isError, true);
    assert.match(req.result.content[0].text, /text/);
  }));
