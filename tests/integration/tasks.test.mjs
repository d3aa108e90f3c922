// tasks.test.mjs — the tasks extension of 2026-07-28 (io.modelcontextprotocol/
// tasks, core/mcp/tasks.c) over stdio, raw NDJSON: a task tool's call answered
// with a CreateTaskResult at its first wait, tasks/get until it is done,
// tasks/update answering its questions (in parts), tasks/cancel, the gates
// (no extension, "required", the 2025 era), mcp.rpc_error, shutdown with
// tasks still running.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { TEST_TIMEOUT, WAIT, removeTemp, tempApp, withRaw } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const REV = '2026-07-28';
const EXT = 'io.modelcontextprotocol/tasks';

const meta = (caps = { elicitation: {}, extensions: { [EXT]: {} } }) => ({
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientCapabilities': caps,
  'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '0' },
});
const NO_EXT = meta({ elicitation: {} });

const SCRIPT = `
local mcp = require "mcp"
mcp.tool { name = "plain", input = { x = mcp.string() }, handler = function(a) return "plain " .. a.x end }
mcp.tool { name = "slow", task = "optional", input = { seconds = mcp.number() },
  handler = function(a, ctx)
    ctx:progress(0.5, 1, "half way") -- after the task began: goes nowhere, never on stdout
    if a.seconds > 0 then ctx:sleep(a.seconds) end
    return ("slept %g"):format(a.seconds)
  end }
mcp.tool { name = "must", task = "required", handler = function(_, ctx) ctx:sleep(0.05) return "done" end }
mcp.tool { name = "confirm", task = "optional", input = { file = mcp.string() },
  handler = function(a, ctx)
    assert(ctx:as_task() == true)
    local r = ctx:elicit { key = "ok", message = "Delete " .. a.file .. "?",
      requestedSchema = { type = "object", properties = { ok = { type = "boolean" } } } }
    return (r.action == "accept" and r.content.ok) and ("deleted " .. a.file) or ("kept " .. a.file)
  end }
mcp.tool { name = "two", task = "optional",
  handler = function(_, ctx)
    ctx:as_task()
    local s = { type = "object", properties = { name = { type = "string" } } }
    local r = ctx:ask { a = { method = "elicitation/create", params = { message = "A?", requestedSchema = s } },
                        b = { method = "elicitation/create", params = { message = "B?", requestedSchema = s } } }
    return r.a.content.name .. "+" .. r.b.content.name
  end }
mcp.tool { name = "broken", task = "optional",
  handler = function(_, ctx) ctx:sleep(0.05) error(mcp.rpc_error(-32042, "broken on purpose", { why = "test" })) end }
mcp.tool { name = "sad", task = "optional",
  handler = function(_, ctx) ctx:sleep(0.05) return mcp.fail("sad on purpose") end }
mcp.tool { name = "rpc_now", handler = function() error(mcp.rpc_error(-32099, "at once")) end }
`;

async function withApp(body) {
  const dir = await tempApp({ 'scripts/tasks.lua': SCRIPT, 'app.lua': 'return { name = "tasks-test", version = "1.0.0" }\n' });
  try {
    return await withRaw([dir], body);
  } finally {
    await removeTemp(dir);
  }
}

let next = 1000;
const get = (srv, taskId, m = meta()) => srv.call(next++, 'tasks/get', { taskId, _meta: m });

async function until(srv, taskId, done) {
  const end = Date.now() + WAIT;
  for (;;) {
    const r = await get(srv, taskId);
    assert.ok(r.result, JSON.stringify(r));
    if (done(r.result)) return r.result;
    assert.ok(Date.now() < end, `task ${taskId} stayed ${r.result.status}`);
    await delay(30);
  }
}
const terminal = (t) => ['completed', 'failed', 'cancelled'].includes(t.status);

test('create, get, complete: CreateTaskResult at the first wait, the result inlined by tasks/get', opts, () =>
  withApp(async (srv) => {
    const d = await srv.call(1, 'server/discover', { _meta: meta() });
    assert.deepEqual(d.result.capabilities.extensions[EXT], {});
    const c = await srv.call(2, 'tools/call', { name: 'slow', arguments: { seconds: 0.3 }, _meta: meta() });
    const t = c.result;
    assert.equal(t.resultType, 'task');
    assert.match(t.taskId, /^[0-9a-f]{32}$/);
    assert.equal(t.status, 'working');
    assert.match(t.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Number.isInteger(t.ttlMs) && t.ttlMs > 0 && Number.isInteger(t.pollIntervalMs));
    for (const k of ['result', 'error', 'inputRequests', 'requestState', 'content']) assert.ok(!(k in t), k);
    const now = await get(srv, t.taskId);
    assert.equal(now.result.status, 'working');
    assert.equal(now.result.resultType, 'complete');
    const done = await until(srv, t.taskId, terminal);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.result.content, [{ type: 'text', text: 'slept 0.3' }]);
    // the call's own response went into the task, not onto stdout
    assert.equal(srv.lines.filter((l) => /"id":2[,}]/.test(l)).length, 1);
    assert.ok(!srv.lines.some((l) => l.includes('notifications/progress')));
    // a handler that ends before it waits answers the call itself
    const quick = await srv.call(3, 'tools/call', { name: 'slow', arguments: { seconds: 0 }, _meta: meta() });
    assert.deepEqual(quick.result.content, [{ type: 'text', text: 'slept 0' }]);
    // tool errors complete (isError); mcp.rpc_error fails with its error
    const sad = await srv.call(4, 'tools/call', { name: 'sad', _meta: meta() });
    const sadDone = await until(srv, sad.result.taskId, terminal);
    assert.equal(sadDone.status, 'completed');
    assert.equal(sadDone.result.isError, true);
    const broken = await srv.call(5, 'tools/call', { name: 'broken', _meta: meta() });
    const failed = await until(srv, broken.result.taskId, terminal);
    assert.equal(failed.status, 'failed');
    assert.deepEqual(failed.error, { code: -32042, message: 'broken on purpose', data: { why: 'test' } });
    assert.ok(!('result' in failed));
    const rpc = await srv.call(6, 'tools/call', { name: 'rpc_now', _meta: meta() });
    assert.deepEqual(rpc.error, { code: -32099, message: 'at once' });
  }));

test('update: input_required with inputRequests, answered by tasks/update (also in parts)', opts, () =>
  withApp(async (srv) => {
    const c = await srv.call(1, 'tools/call', { name: 'confirm', arguments: { file: 'a.txt' }, _meta: meta() });
    const id = c.result.taskId;
    assert.equal(c.result.resultType, 'task');
    const asking = await until(srv, id, (t) => t.status === 'input_required');
    assert.deepEqual(Object.keys(asking.inputRequests), ['ok']);
    assert.equal(asking.inputRequests.ok.method, 'elicitation/create');
    assert.equal(asking.inputRequests.ok.params.message, 'Delete a.txt?');
    const stray = await srv.call(2, 'tasks/update', { taskId: id, inputResponses: { nope: { action: 'accept' } }, _meta: meta() });
    assert.deepEqual(Object.keys(stray.result).sort(), ['_meta', 'resultType']);
    assert.equal((await get(srv, id)).result.status, 'input_required');
    const ack = await srv.call(3, 'tasks/update', { taskId: id, inputResponses: { ok: { action: 'accept', content: { ok: true } } }, _meta: meta() });
    assert.equal(ack.result.resultType, 'complete');
    const done = await until(srv, id, terminal);
    assert.deepEqual(done.result.content, [{ type: 'text', text: 'deleted a.txt' }]);

    const two = (await srv.call(4, 'tools/call', { name: 'two', _meta: meta() })).result.taskId;
    const both = await until(srv, two, (t) => t.status === 'input_required');
    assert.deepEqual(Object.keys(both.inputRequests).sort(), ['a', 'b']);
    await srv.call(5, 'tasks/update', { taskId: two, inputResponses: { b: { action: 'accept', content: { name: 'Bo' } } }, _meta: meta() });
    const half = (await get(srv, two)).result;
    assert.equal(half.status, 'input_required');
    assert.deepEqual(Object.keys(half.inputRequests), ['a']);
    await srv.call(6, 'tasks/update', { taskId: two, inputResponses: { a: { action: 'accept', content: { name: 'Al' } } }, _meta: meta() });
    assert.deepEqual((await until(srv, two, terminal)).result.content, [{ type: 'text', text: 'Al+Bo' }]);
  }));

test('cancel: a sleeping task settles to cancelled; cancel is idempotent; shutdown ends running tasks', opts, () =>
  withApp(async (srv) => {
    const id = (await srv.call(1, 'tools/call', { name: 'slow', arguments: { seconds: 30 }, _meta: meta() })).result.taskId;
    const ack = await srv.call(2, 'tasks/cancel', { taskId: id, _meta: meta() });
    assert.deepEqual(Object.keys(ack.result).sort(), ['_meta', 'resultType']);
    assert.equal(ack.result.resultType, 'complete');
    const t = await until(srv, id, terminal);
    assert.equal(t.status, 'cancelled');
    assert.ok(!('result' in t) && !('error' in t));
    const again = await srv.call(3, 'tasks/cancel', { taskId: id, _meta: meta() });
    assert.equal(again.result.resultType, 'complete');
    // a cancelled question-waiting task too
    const q = (await srv.call(4, 'tools/call', { name: 'confirm', arguments: { file: 'b' }, _meta: meta() })).result.taskId;
    await until(srv, q, (x) => x.status === 'input_required');
    await srv.call(5, 'tasks/cancel', { taskId: q, _meta: meta() });
    assert.equal((await until(srv, q, terminal)).status, 'cancelled');
    // left running at the end: closing stdin must not wait for it (withRaw checks exit 0)
    await srv.call(6, 'tools/call', { name: 'slow', arguments: { seconds: 60 }, _meta: meta() });
    const started = Date.now();
    const exit = await srv.close();
    assert.equal(exit.code, 0);
    assert.ok(Date.now() - started < 5000, 'shutdown waited for the task');
  }));

test('gates: no extension runs a plain call, "required" and tasks/* answer -32021, unknown ids -32602, removed methods -32601, 2025 plain', opts, () =>
  withApp(async (srv) => {
    const plain = await srv.call(1, 'tools/call', { name: 'slow', arguments: { seconds: 0.05 }, _meta: NO_EXT });
    assert.equal(plain.result.resultType, 'complete');
    assert.deepEqual(plain.result.content, [{ type: 'text', text: 'slept 0.05' }]);
    const must = await srv.call(2, 'tools/call', { name: 'must', _meta: NO_EXT });
    assert.equal(must.error.code, -32021);
    assert.deepEqual(must.error.data, { requiredCapabilities: { extensions: { [EXT]: {} } } });
    for (const [i, m] of ['tasks/get', 'tasks/update', 'tasks/cancel'].entries()) {
      const r = await srv.call(10 + i, m, { taskId: 'x', inputResponses: {}, _meta: NO_EXT });
      assert.equal(r.error?.code, -32021, m);
    }
    const unknown = await srv.call(20, 'tasks/get', { taskId: 'no-such-task', _meta: meta() });
    assert.equal(unknown.error.code, -32602);
    const noid = await srv.call(21, 'tasks/get', { _meta: meta() });
    assert.equal(noid.error.code, -32602);
    for (const [i, m] of ['tasks/result', 'tasks/list'].entries()) {
      const r = await srv.call(30 + i, m, { taskId: 'x', _meta: meta() });
      assert.equal(r.error?.code, -32601, m);
    }
    const sync = await srv.call(40, 'tools/call', { name: 'plain', arguments: { x: 'y' }, task: { ttl: 1000 }, _meta: meta() });
    assert.deepEqual(sync.result.content, [{ type: 'text', text: 'plain y' }]);
    // a 2025 session: task tools are plain calls, the tasks methods do not exist
    await srv.initialize();
    const old = await srv.call(50, 'tools/call', { name: 'must' });
    assert.deepEqual(old.result, { content: [{ type: 'text', text: 'done' }] });
    const oldGet = await srv.call(51, 'tasks/get', { taskId: 'x' });
    assert.equal(oldGet.error.code, -32601);
  }));

test('--max-tasks-per-peer: past it a client\'s task tools run as plain calls (answered with their result), and the log says why', opts, async () => {
  const dir = await tempApp({ 'scripts/tasks.lua': SCRIPT, 'app.lua': 'return { name = "tasks-test", version = "1.0.0" }\n' });
  try {
    await withRaw(['--max-tasks-per-peer', '2', dir], async (srv) => {
      const first = await srv.call(1, 'tools/call', { name: 'slow', arguments: { seconds: 0.4 }, _meta: meta() });
      const second = await srv.call(2, 'tools/call', { name: 'slow', arguments: { seconds: 0.4 }, _meta: meta() });
      assert.equal(first.result.resultType, 'task');
      assert.equal(second.result.resultType, 'task');
      const third = await srv.call(3, 'tools/call', { name: 'slow', arguments: { seconds: 0.2 }, _meta: meta() });
      assert.deepEqual(third.result.content, [{ type: 'text', text: 'slept 0.2' }], JSON.stringify(third));
      assert.match(srv.stderr, /too many tasks of this client \(--max-tasks-per-peer\): 'slow' runs as a plain call/);
    });
  } finally {
    await removeTemp(dir);
  }
});
