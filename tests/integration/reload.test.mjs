// reload.test.mjs — hot reload as a client sees it: the official SDK client
// connected to `luamcp serve` on an app in a temp dir, while the test saves,
// breaks and deletes the app's files (as editors do: a temp file renamed over
// the old one, or a plain in-place write) and sends SIGHUP.
//
// How the waits work (no sleeping to wait for something; the only timed
// pauses are the --no-watch test's window, which proves that something does
// NOT happen, and the burst test's pacing of its saves): the server is run with
// --log-level info, so every reload logs "reloaded DIR in X ms" (or "reload
// failed") on stderr *after* the new version is published and *before* its
// notifications are flushed. A test waits for that line (or for the
// notification it expects), then does a ping round trip: the reload's
// notifications were written before the ping's answer, so after it every
// notification of that reload has been handled and counts can be compared.
import assert from 'node:assert/strict';
import { utimes, rm, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
  LoggingMessageNotificationSchema,
  McpError,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { TEST_TIMEOUT, WAIT, collect, ms, removeTemp, saveFile, tempApp, watchLines, withSdk, within } from './helpers.mjs';
import { HttpServer, closeHttpSdk, connectHttpSdk } from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const req = { timeout: WAIT };

const RELOADED = /^luamcp: info: reloaded .* in [0-9.]+ ms/;
const RELOAD_FAILED = /^luamcp: error: reload failed/;

const text = (result) => result.content.map((c) => c.text).join('\n');

// {=================================================== scripts

const tool = (name, answer, description = `the ${name} tool`) => `local mcp = require "mcp"
mcp.tool {
  name = ${JSON.stringify(name)},
  description = ${JSON.stringify(description)},
  handler = function() return ${JSON.stringify(answer)} end,
}
`;

const resource = (uri, answer) => `local mcp = require "mcp"
mcp.resource {
  uri = ${JSON.stringify(uri)}, name = ${JSON.stringify(uri.replace(/.*\//, ''))}, mime = "text/plain",
  read = function() return ${JSON.stringify(answer)} end,
}
`;

const prompt = (name, answer) => `local mcp = require "mcp"
mcp.prompt {
  name = ${JSON.stringify(name)}, description = "a prompt",
  get = function() return mcp.user(${JSON.stringify(answer)}) end,
}
`;

// }===================================================

// {=================================================== the harness

/**
 * One SDK client on a temp app that the test edits. Collects every
 * list_changed / updated / log notification and follows stderr.
 */
function harness(conn, dir) {
  const { client } = conn;
  const h = {
    client,
    dir,
    pid: conn.transport.child.pid,
    file: (rel) => path.join(dir, rel),
    tools: collect(client, ToolListChangedNotificationSchema),
    resources: collect(client, ResourceListChangedNotificationSchema),
    prompts: collect(client, PromptListChangedNotificationSchema),
    updated: collect(client, ResourceUpdatedNotificationSchema),
    log: collect(client, LoggingMessageNotificationSchema),
    err: watchLines(conn.transport.stderr, conn.stderr()),
  };
  /** Successful and failed reloads so far. */
  h.reloads = () => h.err.count(RELOADED) + h.err.count(RELOAD_FAILED);
  h.good = () => h.err.count(RELOADED);
  h.failed = () => h.err.count(RELOAD_FAILED);
  /** Where every count stands now. */
  h.mark = () => ({
    tools: h.tools.items.length,
    resources: h.resources.items.length,
    prompts: h.prompts.items.length,
    updated: h.updated.items.length,
    log: h.log.items.length,
    reloads: h.reloads(),
    good: h.good(),
    failed: h.failed(),
  });
  /** What arrived since mark m (notifications and reloads). */
  h.since = (m) => {
    const now = h.mark();
    return Object.fromEntries(Object.keys(m).map((k) => [k, now[k] - m[k]]));
  };
  /** Wait for a reload (good or failed) that finishes after mark m. */
  h.reloadAfter = (m, what = 'a reload') => h.err.until(() => h.reloads() > m.reloads, what);
  h.goodReloadAfter = (m, what = 'a successful reload') => h.err.until(() => h.good() > m.good, what);
  h.failedReloadAfter = (m, what = 'a failed reload') => h.err.until(() => h.failed() > m.failed, what);
  /** Every notification written before now has been handled once this returns. */
  h.settle = async () => {
    await client.ping(req);
    await new Promise((resolve) => setImmediate(resolve));
  };
  /**
   * Resolve with check()'s first truthy value; check again after every
   * reload. (One save can be seen as two reloads, e.g. a new file's creation
   * and its close: the state the test wants is the last one.)
   */
  h.eventually = async (what, check) => {
    const deadline = Date.now() + WAIT;
    let last;
    for (;;) {
      const m = h.mark();
      last = await check();
      if (last && last.ok !== false) return last;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)}`);
      await h.err.until(() => h.reloads() > m.reloads, `${what} (last seen: ${JSON.stringify(last)})`, left);
    }
  };
  h.toolNames = async () => (await client.listTools({}, req)).tools.map((t) => t.name).sort();
  h.call = async (name, args = {}) => text(await client.callTool({ name, arguments: args }, undefined, req));
  h.sighup = () => process.kill(h.pid, 'SIGHUP');
  return h;
}

/** A temp app with files, served (watched) with an SDK client; body(h). */
async function withApp(files, body, { args = [] } = {}) {
  const dir = await tempApp(files);
  try {
    await withSdk(['--log-level', 'info', ...args, dir], (conn) => body(harness(conn, dir)));
  } finally {
    await removeTemp(dir);
  }
}

async function rejectsWithCode(promise, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `expected an McpError, got ${err}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

/** The reload error notifications since mark m, as their data strings. */
const reloadErrors = (h, m) =>
  h.log.items.slice(m.log).filter((p) => p.level === 'error' && p.logger === 'luamcp').map((p) => String(p.data));

// }===================================================

// {=================================================== tools

test('a tool: added (list_changed), edited (new behaviour), broken (old one kept, error with file:line), deleted', opts, () =>
  withApp({ 'scripts/base.lua': tool('base', 'base v1') }, async (h) => {
    assert.deepEqual(await h.toolNames(), ['base']);
    const file = h.file('scripts/added.lua');

    // a new file: tools/list_changed, then the tool is listed and callable
    let m = h.mark();
    await saveFile(file, tool('added', 'added v1'), 'rename');
    await h.tools.until((items) => items.length > m.tools, 'notifications/tools/list_changed after a new tool file');
    await h.eventually('the new tool in tools/list', async () => (await h.toolNames()).includes('added'));
    assert.deepEqual(await h.toolNames(), ['added', 'base']);
    assert.equal(await h.call('added'), 'added v1');
    await h.settle();
    assert.equal(h.since(m).resources, 0, 'resources/list_changed for a tools-only change');
    assert.equal(h.since(m).prompts, 0, 'prompts/list_changed for a tools-only change');

    // the handler edited in place, listing unchanged: new behaviour, no list_changed
    m = h.mark();
    await saveFile(file, tool('added', 'added v2'), 'inplace');
    await h.eventually('the edited handler to answer', async () => { const got = await h.call('added'); return { ok: got === 'added v2', got }; });
    await h.settle();
    assert.equal(h.since(m).tools, 0, 'tools/list_changed although the listing did not change');

    // a syntax error (on line 5): the previous version keeps serving; the
    // client is told, naming the file and the line
    m = h.mark();
    const broken = tool('added', 'added v3').replace('handler = function() return', 'handler = function() return = =');
    assert.match(broken.split('\n')[5 - 1], /= =/); // line 5 holds the error
    await saveFile(file, broken, 'rename');
    await h.failedReloadAfter(m, 'the failed reload of a syntax error');
    await h.settle();
    const errors = reloadErrors(h, m);
    assert.ok(errors.length >= 1, `no notifications/message error for the broken script; log: ${JSON.stringify(h.log.items)}`);
    assert.match(errors[0], /scripts\/added\.lua:5:/);
    assert.ok(h.err.lines.some((l) => l.includes('scripts/added.lua:5:')), 'the error (file:line) is not on stderr');
    assert.equal(h.since(m).tools, 0, 'list_changed after a failed reload');
    assert.equal(await h.call('added'), 'added v2', 'the previous version is no longer served');
    assert.deepEqual(await h.toolNames(), ['added', 'base']);

    // an error while the script runs (not a syntax error): also file:line
    m = h.mark();
    await saveFile(file, 'local mcp = require "mcp"\n\nerror("refusing to load")\n', 'inplace');
    await h.failedReloadAfter(m, 'the failed reload of a script that raises');
    await h.settle();
    assert.match(reloadErrors(h, m)[0] ?? '', /scripts\/added\.lua:3: refusing to load/);
    assert.equal(await h.call('added'), 'added v2');

    // a good version again
    m = h.mark();
    await saveFile(file, tool('added', 'added v4', 'now documented'), 'rename');
    await h.tools.until((items) => items.length > m.tools, 'list_changed after the fix (the description changed)');
    await h.eventually('the fixed version to answer', async () => ({ ok: (await h.call('added')) === 'added v4' }));

    // deleted: list_changed, gone from the list, calling it is an error
    m = h.mark();
    await rm(file);
    await h.tools.until((items) => items.length > m.tools, 'notifications/tools/list_changed after deleting the file');
    await h.eventually('the deleted tool to leave tools/list', async () => !(await h.toolNames()).includes('added'));
    assert.deepEqual(await h.toolNames(), ['base']);
    await rejectsWithCode(h.client.callTool({ name: 'added', arguments: {} }, undefined, req), -32602);
    assert.equal(await h.call('base'), 'base v1');
  }));

// }===================================================

// {=================================================== resources and prompts

test('a resource: list_changed; a subscriber gets resources/updated when its script changes, not for unrelated changes', opts, () =>
  withApp(
    { 'scripts/base.lua': tool('base', 'base v1'), 'scripts/two.lua': resource('test://r/two', 'two v1') },
    async (h) => {
      const one = h.file('scripts/one.lua');
      let m = h.mark();
      await saveFile(one, resource('test://r/one', 'one v1'), 'rename');
      await h.resources.until((items) => items.length > m.resources, 'notifications/resources/list_changed after a new resource');
      const listed = async () => (await h.client.listResources({}, req)).resources.map((r) => r.uri).sort();
      await h.eventually('the new resource in resources/list', async () => (await listed()).includes('test://r/one'));
      assert.deepEqual(await listed(), ['test://r/one', 'test://r/two']);
      const read = async (uri) => (await h.client.readResource({ uri }, req)).contents[0].text;
      assert.equal(await read('test://r/one'), 'one v1');
      await h.settle();
      assert.equal(h.since(m).tools, 0, 'tools/list_changed for a resources-only change');
      assert.equal(h.since(m).prompts, 0, 'prompts/list_changed for a resources-only change');

      await h.client.subscribeResource({ uri: 'test://r/one' }, req);
      await h.client.subscribeResource({ uri: 'test://r/two' }, req);

      // the resource's script changes (not its listing): updated for it alone
      m = h.mark();
      await saveFile(one, resource('test://r/one', 'one v2'), 'inplace');
      await h.updated.until((items) => items.length > m.updated, 'notifications/resources/updated for the edited resource');
      await h.settle();
      const uris = h.updated.items.slice(m.updated).map((p) => p.uri);
      assert.ok(uris.includes('test://r/one'), JSON.stringify(uris));
      assert.ok(!uris.includes('test://r/two'), `updated for test://r/two, whose script did not change: ${JSON.stringify(uris)}`);
      assert.equal(h.since(m).resources, 0, 'resources/list_changed although the listing did not change');
      assert.equal(await read('test://r/one'), 'one v2');

      // an unrelated change (a tool's script): no resources/updated
      m = h.mark();
      await saveFile(h.file('scripts/base.lua'), tool('base', 'base v2'), 'rename');
      await h.goodReloadAfter(m, 'the reload after editing base.lua');
      await h.settle();
      assert.equal(h.since(m).updated, 0, `resources/updated for an unrelated change: ${JSON.stringify(h.updated.items.slice(m.updated))}`);
      assert.equal(await h.call('base'), 'base v2');

      // unsubscribed: no more resources/updated for it
      await h.client.unsubscribeResource({ uri: 'test://r/one' }, req);
      m = h.mark();
      await saveFile(one, resource('test://r/one', 'one v3'), 'rename');
      await h.goodReloadAfter(m, 'the reload after editing one.lua again');
      await h.settle();
      assert.equal(h.since(m).updated, 0, 'resources/updated after unsubscribing');
      assert.equal(await read('test://r/one'), 'one v3');

      // a template joins the same list_changed notification
      m = h.mark();
      await saveFile(
        h.file('scripts/tpl.lua'),
        'local mcp = require "mcp"\nmcp.template { uri = "test://items/{id}", name = "item", read = function(p) return "item " .. p.id end }\n',
        'rename',
      );
      await h.resources.until((items) => items.length > m.resources, 'resources/list_changed after a new template');
      await h.eventually('the template in resources/templates/list', async () =>
        (await h.client.listResourceTemplates({}, req)).resourceTemplates.some((t) => t.uriTemplate === 'test://items/{id}'));
      assert.equal(await read('test://items/7'), 'item 7');

      // deleted: list_changed, gone
      m = h.mark();
      await rm(one);
      await h.resources.until((items) => items.length > m.resources, 'resources/list_changed after deleting the resource');
      await h.eventually('the resource to leave resources/list', async () => !(await listed()).includes('test://r/one'));
      await assert.rejects(h.client.readResource({ uri: 'test://r/one' }, req), (err) => err instanceof McpError && err.code === -32002);
    },
  ));

test('a prompt: added and deleted with prompts/list_changed, edited with new behaviour', opts, () =>
  withApp({ 'scripts/base.lua': tool('base', 'base v1') }, async (h) => {
    const file = h.file('scripts/p.lua');
    const names = async () => (await h.client.listPrompts({}, req)).prompts.map((p) => p.name);
    const get = async () => (await h.client.getPrompt({ name: 'note', arguments: {} }, req)).messages[0].content.text;
    let m = h.mark();
    await saveFile(file, prompt('note', 'note v1'), 'inplace');
    await h.prompts.until((items) => items.length > m.prompts, 'notifications/prompts/list_changed after a new prompt');
    await h.eventually('the prompt in prompts/list', async () => (await names()).includes('note'));
    assert.equal(await get(), 'note v1');
    await h.settle();
    assert.equal(h.since(m).tools, 0, 'tools/list_changed for a prompts-only change');
    assert.equal(h.since(m).resources, 0, 'resources/list_changed for a prompts-only change');

    m = h.mark();
    await saveFile(file, prompt('note', 'note v2'), 'rename');
    await h.eventually('the edited prompt', async () => ({ ok: (await get()) === 'note v2' }));
    await h.settle();
    assert.equal(h.since(m).prompts, 0, 'prompts/list_changed although the listing did not change');

    m = h.mark();
    await rm(file);
    await h.prompts.until((items) => items.length > m.prompts, 'prompts/list_changed after deleting the prompt');
    await h.eventually('the prompt to leave prompts/list', async () => !(await names()).includes('note'));
    await rejectsWithCode(h.client.getPrompt({ name: 'note', arguments: {} }, req), -32602);
  }));

// }===================================================

// {=================================================== nothing changed

test('no list_changed (and no resources/updated) when nothing changed: touch, identical saves, SIGHUP', opts, () =>
  withApp(
    {
      'scripts/t.lua': tool('t', 't v1'),
      'scripts/r.lua': resource('test://r', 'r v1'),
      'scripts/p.lua': prompt('p', 'p v1'),
    },
    async (h) => {
      await h.client.subscribeResource({ uri: 'test://r' }, req);
      const quiet = async (what, act) => {
        const m = h.mark();
        await act();
        await h.goodReloadAfter(m, `the reload after ${what}`);
        await h.settle();
        const d = h.since(m);
        assert.deepEqual(
          { tools: d.tools, resources: d.resources, prompts: d.prompts, updated: d.updated },
          { tools: 0, resources: 0, prompts: 0, updated: 0 },
          `notifications after ${what}, which changed nothing`,
        );
      };
      const later = new Date(Date.now() + 5000);
      await quiet('touching a tool script', () => utimes(h.file('scripts/t.lua'), later, later));
      await quiet('touching the resource script', () => utimes(h.file('scripts/r.lua'), later, later));
      await quiet('saving a script unchanged (rename)', () => saveFile(h.file('scripts/p.lua'), prompt('p', 'p v1'), 'rename'));
      await quiet('saving the resource script unchanged (in place)', () => saveFile(h.file('scripts/r.lua'), resource('test://r', 'r v1'), 'inplace'));
      await quiet('SIGHUP', () => h.sighup());
      assert.ok(h.err.lines.some((l) => /SIGHUP/.test(l)), 'SIGHUP was not logged');

      // and a real change is still reported (the test can see one)
      const m = h.mark();
      await saveFile(h.file('scripts/t.lua'), tool('t', 't v1', 'changed description'), 'rename');
      await h.tools.until((items) => items.length > m.tools, 'tools/list_changed after a description change');
      await h.settle();
      assert.equal(h.since(m).resources + h.since(m).prompts + h.since(m).updated, 0);
    },
  ));

// }===================================================

// {=================================================== state

const stateScript = (description) => `local mcp = require "mcp"
mcp.state.loads = (mcp.state.loads or 0) + 1
if mcp.state.loads == 1 then
  mcp.state.kept = { s = "text", i = 42, f = 1.5, yes = true, no = false, list = { 1, 2, 3 },
                     nested = { deeper = { x = "y" } } }
  mcp.state.fn = function() end -- not carried over: only data is
end
local calls = 0 -- module-level: starts again at every load
mcp.on_reload(function(old)
  mcp.state.on_reload_calls = (mcp.state.on_reload_calls or 0) + 1
  mcp.state.on_reload_arg = type(old) == "table" and type(old.kept) or type(old)
end)
mcp.tool {
  name = "counter", description = ${JSON.stringify(description)},
  handler = function()
    calls = calls + 1
    return { loads = mcp.state.loads, calls = calls, on_reload_calls = mcp.state.on_reload_calls or 0,
             on_reload_arg = mcp.state.on_reload_arg or "none", kept = mcp.state.kept, fn = type(mcp.state.fn) }
  end,
}
`;

test('mcp.state survives reloads, module-level locals start again, mcp.on_reload runs once per reload', opts, () =>
  withApp({ 'scripts/state.lua': stateScript('v1') }, async (h) => {
    const counter = async () => (await h.client.callTool({ name: 'counter', arguments: {} }, undefined, req)).structuredContent;
    const kept = { s: 'text', i: 42, f: 1.5, yes: true, no: false, list: [1, 2, 3], nested: { deeper: { x: 'y' } } };
    let c = await counter();
    assert.deepEqual(c, { loads: 1, calls: 1, on_reload_calls: 0, on_reload_arg: 'none', kept, fn: 'function' });
    c = await counter();
    assert.equal(c.calls, 2);

    // a reload with nothing changed (touch)
    let m = h.mark();
    const later = new Date(Date.now() + 5000);
    await utimes(h.file('scripts/state.lua'), later, later);
    await h.goodReloadAfter(m, 'the reload after touching state.lua');
    c = await counter();
    assert.deepEqual(c, { loads: 2, calls: 1, on_reload_calls: 1, on_reload_arg: 'table', kept, fn: 'nil' });

    // a failed reload changes nothing: its state is thrown away
    m = h.mark();
    await saveFile(h.file('scripts/state.lua'), stateScript('v2').replace('local calls = 0', 'local calls = = 0'), 'rename');
    await h.failedReloadAfter(m, 'the failed reload');
    c = await counter();
    assert.deepEqual(c, { loads: 2, calls: 2, on_reload_calls: 1, on_reload_arg: 'table', kept, fn: 'nil' });

    // a good version (new description: list_changed)
    m = h.mark();
    await saveFile(h.file('scripts/state.lua'), stateScript('v2'), 'inplace');
    await h.tools.until((items) => items.length > m.tools, 'tools/list_changed after the fix');
    await h.settle();
    c = await counter();
    assert.equal(c.calls, 1, 'module-level locals were not re-created');
    assert.ok(c.loads >= 3, `mcp.state.loads did not grow: ${JSON.stringify(c)}`);
    assert.equal(c.on_reload_calls, c.loads - 1, `on_reload did not run exactly once per reload: ${JSON.stringify(c)}`);
    assert.deepEqual(c.kept, kept);

    // SIGHUP reloads too
    const before = c.loads;
    m = h.mark();
    h.sighup();
    await h.goodReloadAfter(m, 'the reload after SIGHUP');
    c = await counter();
    assert.deepEqual(c, { loads: before + 1, calls: 1, on_reload_calls: before, on_reload_arg: 'table', kept, fn: 'nil' });
  }));

test('lib/ modules: editing one reloads the tools that require it, also in folders created after the start', opts, () =>
  withApp({ 'scripts/base.lua': tool('base', 'base v1') }, async (h) => {
    const lib = (answer) => `return { say = function() return ${JSON.stringify(answer)} end }\n`;
    const user = (mods) => `local mcp = require "mcp"
local mods = {}
for _, name in ipairs { ${mods.map((x) => JSON.stringify(x)).join(', ')} } do mods[#mods + 1] = require(name) end
mcp.tool { name = "uses_lib", handler = function()
  local out = {}
  for i, m in ipairs(mods) do out[i] = m.say() end
  return table.concat(out, " + ")
end }
`;
    // lib/ does not exist yet when the server starts
    await saveFile(h.file('lib/helper.lua'), lib('helper v1'), 'rename');
    await saveFile(h.file('scripts/uses.lua'), user(['helper']), 'rename');
    await h.eventually('uses_lib to answer', async () => (await h.toolNames()).includes('uses_lib') && { ok: (await h.call('uses_lib')) === 'helper v1' });

    await saveFile(h.file('lib/helper.lua'), lib('helper v2'), 'inplace');
    await h.eventually('the edited module', async () => ({ ok: (await h.call('uses_lib')) === 'helper v2' }));

    // a folder made under lib/ while serving is watched too
    await mkdir(h.file('lib/sub'));
    await saveFile(h.file('lib/sub/deep.lua'), lib('deep v1'), 'rename');
    await saveFile(h.file('scripts/uses.lua'), user(['helper', 'sub.deep']), 'rename');
    await h.eventually('the module in lib/sub', async () => ({ ok: (await h.call('uses_lib')) === 'helper v2 + deep v1' }));
    const m = h.mark();
    await saveFile(h.file('lib/sub/deep.lua'), lib('deep v2'), 'inplace');
    await h.goodReloadAfter(m, 'a reload after editing lib/sub/deep.lua');
    await h.eventually('the edited module in lib/sub', async () => ({ ok: (await h.call('uses_lib')) === 'helper v2 + deep v2' }));
  }));

test('app.lua: a broken one is reported (file:line) and the app keeps serving; a fixed one reloads', opts, () =>
  withApp(
    { 'app.lua': 'return { name = "reload-app", version = "1.0.0" }\n', 'scripts/base.lua': tool('base', 'base v1') },
    async (h) => {
      assert.equal(h.client.getServerVersion().name, 'reload-app');
      let m = h.mark();
      await saveFile(h.file('app.lua'), '-- app\nreturn { name = "reload-app" version = "2.0.0" }\n', 'rename');
      await h.failedReloadAfter(m, 'the failed reload of app.lua');
      await h.settle();
      assert.match(reloadErrors(h, m)[0] ?? '', /app\.lua:2:/);
      assert.equal(await h.call('base'), 'base v1');

      m = h.mark();
      await saveFile(h.file('app.lua'), 'return { name = "reload-app", version = "2.0.0" }\n', 'inplace');
      await h.goodReloadAfter(m, 'the reload of the fixed app.lua');
      await h.settle();
      assert.equal(h.since(m).tools + h.since(m).resources + h.since(m).prompts, 0, 'list_changed for an app.lua change');
      // serverInfo is what this session's initialize said
      assert.deepEqual(h.client.getServerVersion(), { name: 'reload-app', version: '1.0.0' });
      assert.equal(await h.call('base'), 'base v1');
    },
  ));

// }===================================================

// {=================================================== bursts

test('a burst of saves is merged (debounce), and a burst that goes on still reloads (capped wait)', opts, () =>
  withApp({ 'scripts/base.lua': tool('base', 'base v1') }, async (h) => {
    // about 8 ms between saves, well under the 30 ms of quiet the server
    // waits for: only the cap (250 ms after the first change) reloads
    // while the burst goes on
    const m = h.mark();
    const length = Math.min(ms(1500), 5000); // the cap is 250 ms: a slow wrapper needs a little more, not 30 times
    const start = Date.now();
    let saves = 0;
    let firstDuring = 0;
    while (Date.now() - start < length) {
      await saveFile(h.file('scripts/burst.lua'), tool('burst', `burst ${saves}`), saves % 2 ? 'inplace' : 'rename');
      saves++;
      if (!firstDuring && h.good() > m.good) firstDuring = Date.now() - start;
      await new Promise((resolve) => setTimeout(resolve, 8));
    }
    const during = h.good() - m.good;
    assert.ok(firstDuring > 0, `no reload during a ${length} ms burst of ${saves} saves (the wait is not capped)`);
    assert.ok(during <= saves / 2, `${during} reloads for ${saves} saves in a burst: they were not merged`);
    await h.eventually('the last save of the burst to be served', async () => {
      const got = await h.call('burst').catch((e) => e.message);
      return { ok: got === `burst ${saves - 1}`, got };
    });
  }));

// }===================================================

// {=================================================== --no-watch, SIGHUP

test('--no-watch: edits are not picked up, SIGHUP reloads', opts, () =>
  withApp(
    { 'scripts/base.lua': tool('base', 'base v1') },
    async (h) => {
      const m = h.mark();
      await saveFile(h.file('scripts/added.lua'), tool('added', 'added v1'), 'rename');
      await saveFile(h.file('scripts/base.lua'), tool('base', 'base v2'), 'inplace');
      // proving that nothing happens takes a window: 4 times the longest a
      // watching server waits before it reloads (250 ms), more under ASan or
      // valgrind (where a reload itself takes longer)
      await new Promise((resolve) => setTimeout(resolve, Math.min(ms(1000), 4000)));
      await h.settle();
      assert.deepEqual(h.since(m), { tools: 0, resources: 0, prompts: 0, updated: 0, log: 0, reloads: 0, good: 0, failed: 0 });
      assert.deepEqual(await h.toolNames(), ['base']);
      assert.equal(await h.call('base'), 'base v1');

      h.sighup();
      await h.tools.until((items) => items.length > m.tools, 'tools/list_changed after SIGHUP');
      assert.deepEqual(await h.toolNames(), ['added', 'base']);
      assert.equal(await h.call('base'), 'base v2');
      assert.equal(await h.call('added'), 'added v1');
    },
    { args: ['--no-watch'] },
  ));

// }===================================================

// {=================================================== a call in flight

test('a call in flight when a reload lands finishes with the old handler; new calls get the new one', opts, () =>
  withApp({ 'scripts/base.lua': tool('base', 'base v1') }, async (h) => {
    const release = h.file('release'); // not a file of the app: the watch ignores it
    // The old handler sleeps (ctx:sleep, 20 ms at a time) until the test
    // creates `release`, so the reloads surely land while it runs, however
    // slow the machine.
    const slowOld = `local mcp = require "mcp"
local version = "old" -- a module-level local of the old state
mcp.tool { name = "slow", input = { id = mcp.string() }, handler = function(args, ctx)
  ctx:info("started " .. args.id)
  for _ = 1, 1500 do
    local f = io.open(${JSON.stringify(release)}, "r")
    if f then f:close() return version .. " " .. args.id end
    ctx:sleep(0.02)
  end
  return "never released"
end }
`;
    const slowNew = `local mcp = require "mcp"
mcp.tool { name = "slow", input = { id = mcp.string() }, handler = function(args, ctx)
  ctx:sleep(0.3)
  return "new " .. args.id
end }
`;
    let m = h.mark();
    await saveFile(h.file('scripts/slow.lua'), slowOld, 'rename');
    await h.tools.until((items) => items.length > m.tools, 'list_changed for the slow tool');
    await h.eventually('the slow tool listed', async () => (await h.toolNames()).includes('slow'));

    const longWait = { timeout: ms(40_000) };
    let settled = false;
    const inFlight = h.client.callTool({ name: 'slow', arguments: { id: 'a' } }, undefined, longWait).finally(() => (settled = true));
    await h.log.until((items) => items.some((p) => p.data === 'started a'), 'the slow call to start');

    // two reloads land while it runs: a new handler, then a broken file
    m = h.mark();
    await saveFile(h.file('scripts/slow.lua'), slowNew, 'inplace');
    await h.goodReloadAfter(m, 'the reload with the new handler');
    assert.equal(await h.call('slow', { id: 'b' }), 'new b');
    m = h.mark();
    await saveFile(h.file('scripts/slow.lua'), 'local mcp = require "mcp"\nthis is not lua\n', 'rename');
    await h.failedReloadAfter(m, 'the failed reload');
    assert.equal(await h.call('slow', { id: 'c' }), 'new c');
    assert.equal(settled, false, 'the old call ended before it was released');

    await saveFile(release, 'go', 'inplace');
    const r = await within(inFlight, WAIT, 'the call in flight to finish once released');
    assert.equal(text(r), 'old a');
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(await h.call('slow', { id: 'd' }), 'new d');
  }));

// }===================================================

// {=================================================== HTTP

test('over HTTP: a new tool → tools/list_changed on the GET stream → callable; a later session sees the new app.lua', opts, async () => {
  const dir = await tempApp({
    'app.lua': 'return { name = "reload-http", version = "1.0.0" }\n',
    'scripts/base.lua': tool('base', 'base v1'),
  });
  let srv;
  const conns = [];
  let failed = false;
  try {
    srv = await new HttpServer(dir, ['--log-level', 'info']).start();
    const err = watchLines(srv.child.stderr, srv.stderr);
    const reloads = () => err.count(RELOADED);

    const a = await connectHttpSdk(srv, { name: 'reload-a' });
    conns.push(a);
    const changed = collect(a.client, ToolListChangedNotificationSchema);
    await a.getOpened();

    await saveFile(path.join(dir, 'scripts/added.lua'), tool('added', 'added over http'), 'rename');
    await changed.until((items) => items.length >= 1, 'notifications/tools/list_changed on the GET stream');
    const names = async () => (await a.client.listTools({}, req)).tools.map((t) => t.name).sort();
    let deadline = Date.now() + WAIT;
    while (!(await names()).includes('added')) {
      // a second reload of the same save may still be on its way
      const n = changed.items.length;
      await changed.until((items) => items.length > n, 'another list_changed with the tool', deadline - Date.now());
    }
    assert.equal(text(await a.client.callTool({ name: 'added', arguments: {} }, undefined, req)), 'added over http');

    // app.lua: serverInfo is fixed per session; a later session sees the new one
    const before = reloads();
    await saveFile(path.join(dir, 'app.lua'), 'return { name = "reload-http", version = "2.0.0" }\n', 'inplace');
    await err.until(() => reloads() > before, 'the reload of app.lua');
    const b = await connectHttpSdk(srv, { name: 'reload-b' });
    conns.push(b);
    assert.deepEqual(b.client.getServerVersion(), { name: 'reload-http', version: '2.0.0' });
    assert.deepEqual(a.client.getServerVersion(), { name: 'reload-http', version: '1.0.0' });
    assert.deepEqual(await names(), ['added', 'base']);
    assert.equal(text(await b.client.callTool({ name: 'added', arguments: {} }, undefined, req)), 'added over http');
    assert.deepEqual(a.errors, []);
  } catch (e) {
    failed = true;
    if (srv) e.message += `\n--- server stderr ---\n${srv.stderr}`;
    throw e;
  } finally {
    for (const c of conns) await closeHttpSdk(c);
    if (srv) {
      if (failed) await srv.kill();
      else await srv.stopClean();
    }
    await removeTemp(dir);
  }
});

// }===================================================
