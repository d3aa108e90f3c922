// results.test.mjs — docs/lua-api.md's "Results" table, row by row: what a tool handler
// returns and the result each revision's client gets. Every successful result
// is checked with the official SDKs' own CallToolResult schemas (v1 for a
// 2025-11-25 session, v2 for 2026-07-28), so "valid MCP" is theirs, not ours.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { CallToolResultSchema as V2Result } from '@modelcontextprotocol/core';
import { CallToolResultSchema as V1Result } from '@modelcontextprotocol/sdk/types.js';

import { APPS, TEST_TIMEOUT, RawServer, removeTemp, tempApp, withRaw } from './helpers.mjs';

const APP = path.join(APPS, 'results');
const ROWS = 'tests/apps/results/scripts/rows.lua';
const opts = { timeout: TEST_TIMEOUT };
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

// Both eras on one server: a 2025 session and 2026 requests side by side.
async function callBoth(srv, name, args = {}) {
  const legacy = (await srv.call(`l-${name}`, 'tools/call', { name, arguments: args })).result;
  const modern = (await srv.call(`m-${name}`, 'tools/call', { name, arguments: args, _meta: meta })).result;
  assert.ok(legacy, `${name}: a 2025 result`);
  assert.ok(modern, `${name}: a 2026 result`);
  const v1 = V1Result.safeParse(legacy);
  assert.ok(v1.success, `${name}: the v1 SDK rejects the 2025 result: ${v1.error?.message}`);
  const v2 = V2Result.safeParse(modern);
  assert.ok(v2.success, `${name}: the v2 SDK rejects the 2026 result: ${v2.error?.message}`);
  assert.equal(modern.resultType, 'complete');
  return { legacy, modern };
}

const texts = (r) => r.content.map((b) => b.text);

// An isError result whose text names the handler's line of rows.lua, and matches re.
async function failsAt(srv, name, re) {
  const { legacy, modern } = await callBoth(srv, name);
  for (const r of [legacy, modern]) {
    assert.equal(r.isError, true, `${name}: isError`);
    assert.equal(r.content.length, 1);
    const text = r.content[0].text;
    assert.match(text, new RegExp(`^(.*/)?${ROWS}:\\d+: `), `${name}: names the script line: ${text}`);
    assert.match(text, re, `${name}: ${text}`);
    assert.doesNotMatch(text, /mcp\.lua:/, `${name}: no line inside luamcp`);
  }
}

const both = (fn) => () => withRaw([APP], async (srv) => {
  await srv.initialize();
  await fn(srv);
});

test('nothing: content []; a string, number or boolean: one text block', opts, both(async (srv) => {
  for (const r of Object.values(await callBoth(srv, 'nothing'))) {
    assert.deepEqual(r.content, []);
    assert.equal(r.structuredContent, undefined);
  }
  for (const [name, text] of [['text', 'hello'], ['number', '42'], ['boolean', 'true']])
    for (const r of Object.values(await callBoth(srv, name))) assert.deepEqual(texts(r), [text]);
}));

test('a block, or a list of blocks and strings: content as given (strings as text)', opts, both(async (srv) => {
  for (const r of Object.values(await callBoth(srv, 'block'))) assert.deepEqual(texts(r), ['a block']);
  for (const r of Object.values(await callBoth(srv, 'blocks'))) {
    assert.deepEqual(r.content.map((b) => b.type), ['text', 'text', 'resource_link']);
    assert.deepEqual(texts(r).slice(0, 2), ['one', 'two']);
    assert.equal(r.structuredContent, undefined);
  }
}));

test('a record: structuredContent with its JSON as the text block', opts, both(async (srv) => {
  for (const r of Object.values(await callBoth(srv, 'record'))) {
    assert.deepEqual(r.structuredContent, { id: 1, title: 'a' });
    assert.deepEqual(JSON.parse(r.content[0].text), { id: 1, title: 'a' });
  }
  for (const r of Object.values(await callBoth(srv, 'empty'))) {
    assert.deepEqual(r.structuredContent, {});
    assert.equal(r.content[0].text, '{}');
  }
}));

test('a list of records: structured output; wrapped as {result} for a 2025 client', opts, both(async (srv) => {
  const rows = [{ id: 1, title: 'a' }, { id: 2, title: 'b' }];
  const { legacy, modern } = await callBoth(srv, 'records');
  assert.deepEqual(modern.structuredContent, rows);
  assert.deepEqual(legacy.structuredContent, { result: rows });
  for (const r of [legacy, modern]) assert.deepEqual(JSON.parse(r.content[0].text), rows);
  const marked = await callBoth(srv, 'as_array');
  assert.deepEqual(marked.modern.structuredContent, [{ id: 1 }]);
  assert.deepEqual(marked.legacy.structuredContent, { result: [{ id: 1 }] });
}));

test('mcp.result and mcp.fail: exactly what they say', opts, both(async (srv) => {
  for (const r of Object.values(await callBoth(srv, 'result'))) {
    assert.deepEqual(texts(r), ['said']);
    assert.deepEqual(r.structuredContent, { n: 1 });
  }
  for (const r of Object.values(await callBoth(srv, 'result_structured'))) {
    assert.deepEqual(r.structuredContent, { n: 2 });
    assert.deepEqual(JSON.parse(r.content[0].text), { n: 2 });
  }
  for (const r of Object.values(await callBoth(srv, 'fail'))) {
    assert.equal(r.isError, true);
    assert.deepEqual(texts(r), ['no gifts today']);
  }
}));

test('values that are not MCP: isError naming the handler line, never invalid content', opts, both(async (srv) => {
  await failsAt(srv, 'mixed', /mixes list items \(1\.\.2\) and named fields \('x'\)/);
  await failsAt(srv, 'records_and_blocks', /mixes records with content blocks \(item 2\)/);
  await failsAt(srv, 'fn', /returned a function/);
  await failsAt(srv, 'thread', /returned a thread/);
  await failsAt(srv, 'bad_block', /image block needs 'data' \(a string\)|image block needs 'mimeType'/);
  await failsAt(srv, 'nan', /NaN or infinity.*\(at score\)/);
  await failsAt(srv, 'deep_nan', /NaN or infinity.*\(at items\[2\]\.score\)/);
  await failsAt(srv, 'nested_fn', /type function \(at f\)/);
  await failsAt(srv, 'nested_mixed', /mixes list items and named fields.*\(at items\)/);
  await failsAt(srv, 'cycle', /nesting too deep/);
}));

test('an output schema still checks what the record holds', opts, both(async (srv) => {
  for (const r of Object.values(await callBoth(srv, 'checked'))) assert.deepEqual(r.structuredContent, { items: [{ id: 1 }] });
  for (const r of Object.values(await callBoth(srv, 'checked', { bad: true }))) {
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /returned invalid output: items\[0\]\.id/);
  }
}));

test('a list or a single value with a declared output: {result} on both revisions, valid by the SDKs', opts, both(async (srv) => {
  const tools = (await srv.call('list', 'tools/list', {})).result.tools;
  const schema = (n) => tools.find((t) => t.name === n).outputSchema;
  assert.deepEqual(schema('list_out'), {
    type: 'object', required: ['result'],
    properties: { result: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] } } },
  });
  assert.equal(schema('count_out').properties.result.type, 'integer');
  for (const r of Object.values(await callBoth(srv, 'list_out'))) {
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.structuredContent, { result: [{ id: 1 }, { id: 2 }] });
  }
  for (const r of Object.values(await callBoth(srv, 'list_result'))) assert.deepEqual(r.structuredContent, { result: [1, 2, 3] });
  for (const r of Object.values(await callBoth(srv, 'count_out'))) assert.deepEqual(r.structuredContent, { result: 7 });
  for (const r of Object.values(await callBoth(srv, 'list_out', { bad: true }))) {
    assert.equal(r.isError, true);
    // the handler's FILE:LINE first (rough edge 6), then what is wrong, where
    assert.match(r.content[0].text, new RegExp(`^(.*/)?${ROWS}:\\d+: tool 'list_out' returned invalid output: result\\[0\\]\\.id`));
  }
}));

test('return nil, "msg": an isError with msg for a tool, a JSON-RPC error with msg for a read', opts, both(async (srv) => {
  for (const r of Object.values(await callBoth(srv, 'nil_msg'))) {
    assert.equal(r.isError, true);
    assert.deepEqual(texts(r), ['could not find it']);
  }
  const r = await srv.call('nm', 'resources/read', { uri: 'test://nil-msg' });
  assert.equal(r.error?.code, -32603, JSON.stringify(r));
  assert.equal(r.error.message, 'the disk is gone');
}));

test('any Lua error value: FILE:LINE: message', opts, both(async (srv) => {
  await failsAt(srv, 'err_string', /: went wrong$/);
  await failsAt(srv, 'err_level0', /: no position$/);
  await failsAt(srv, 'err_table', /error raised with a table: \{"code":42\}$/);
  await failsAt(srv, 'err_message', /: table message$/);
  await failsAt(srv, 'err_tostring', /: from tostring$/);
  await failsAt(srv, 'err_tostring_loops', /error raised with a table/); // __tostring cut off, the server goes on
  await failsAt(srv, 'err_nil', /error raised with a nil value$/);
  await failsAt(srv, 'err_runtime', /attempt to index a nil value/);
  const line = (await srv.call('r1', 'tools/call', { name: 'rpc', arguments: {} }));
  assert.equal(line.error.code, -32001);
  assert.equal(line.error.message, 'custom rpc');
  assert.deepEqual(line.error.data, { why: 'test' });
}));

test('registration from a handler raises "can only be called while scripts load", the tool list is unchanged', opts, both(async (srv) => {
  await failsAt(srv, 'register', /mcp\.tool can only be called while scripts load/);
  const list = await srv.call('tl', 'tools/list', {});
  assert.ok(!list.result.tools.some((t) => t.name === 'late'));
}));

// {=== the callbacks' shape: ctx last everywhere, the resource's URI, optional as a copy
const API_APP = {
  'scripts/api.lua': `local mcp = require "mcp"
local id = mcp.string()
mcp.tool { name = "shared", input = { must = id, maybe = mcp.optional(id) }, handler = function(a) return a.must end }
mcp.tool { name = "private", handler = function() return tostring(mcp._tool_result) .. " " .. tostring(mcp._check) end }
mcp.resource { uri = "test://r", name = "r", read = function(uri, ctx) return uri .. " " .. tostring(ctx.uri) end }
mcp.template { uri = "test://t/{id}", name = "t", read = function(p, ctx) return p.id .. " " .. ctx.uri end,
  complete = { id = function(prefix, args, ctx) return { prefix .. "-" .. ctx.protocol_version } end } }
local cities = mcp.string { description = "A city", complete = function(value, args)
  return { value .. "ville", (args.country or "?") } end }
mcp.prompt { name = "trip", args = { city = cities, country = mcp.optional(mcp.string()),
  back = mcp.optional(cities) }, get = function(a) return a.city end }
`,
};

test('callbacks: read(uri, ctx) and ctx.uri, complete(value, args, ctx), mcp.optional copies, shapers private', opts, async () => {
  const dir = await tempApp(API_APP);
  try {
    await withRaw([dir], async (srv) => {
      await srv.initialize();
      const list = (await srv.call(1, 'tools/list', {})).result.tools;
      assert.deepEqual(list.find((t) => t.name === 'shared').inputSchema.required, ['must']);
      const r = (await srv.call(2, 'resources/read', { uri: 'test://r' })).result;
      assert.equal(r.contents[0].text, 'test://r test://r');
      const t = (await srv.call(3, 'resources/read', { uri: 'test://t/7' })).result;
      assert.equal(t.contents[0].text, '7 test://t/7');
      const c = (await srv.call(4, 'completion/complete', { ref: { type: 'ref/resource', uri: 'test://t/{id}' }, argument: { name: 'id', value: 'a' } })).result;
      assert.deepEqual(c.completion.values, ['a-2025-11-25']);
      const p = (await srv.call(5, 'tools/call', { name: 'private', arguments: {} })).result;
      assert.equal(p.content[0].text, 'nil nil');
      // a schema builder's complete = fn on a prompt argument (issue 24 rough edge 5), kept by mcp.optional
      for (const name of ['city', 'back']) {
        const pc = (await srv.call(`pc-${name}`, 'completion/complete', { ref: { type: 'ref/prompt', name: 'trip' },
          argument: { name, value: 'Spring' }, context: { arguments: { country: 'US' } } })).result;
        assert.deepEqual(pc?.completion.values, ['Springville', 'US'], name);
      }
      const pl = (await srv.call(6, 'prompts/list', {})).result.prompts.find((x) => x.name === 'trip');
      assert.deepEqual(pl.arguments.find((a) => a.name === 'city'), { name: 'city', description: 'A city', required: true });
    });
  } finally {
    await removeTemp(dir);
  }
});

test('complete on a tool argument, or not a function, is a load error at its line', opts, async () => {
  for (const [code, re] of [
    ['mcp.tool { name = "t", input = { city = mcp.string { complete = function() end } }, handler = print }',
      /c\.lua:2: mcp\.tool: field 'input': 'city' has complete, which MCP offers for prompt arguments/],
    ['mcp.prompt { name = "p", args = { city = mcp.string { complete = "Berlin" } }, get = print }',
      /c\.lua:2: mcp\.string: option 'complete' must be a function/],
  ]) {
    const dir = await tempApp({ 'scripts/c.lua': `local mcp = require "mcp"\n${code}\n` });
    try {
      const srv = new RawServer(['--no-watch', dir]);
      assert.notEqual(await srv.exited, 0);
      assert.match(srv.stderr, re);
    } finally {
      await removeTemp(dir);
    }
  }
});

test('a prompt name is checked as a tool name is', opts, async () => {
  const dir = await tempApp({ 'scripts/p.lua': 'local mcp = require "mcp"\nmcp.prompt { name = "has space", get = function() return "x" end }\n' });
  try {
    const srv = new RawServer(['--no-watch', dir]);
    const code = await srv.exited;
    assert.notEqual(code, 0);
    assert.match(srv.stderr, /p\.lua:2: mcp\.prompt: name 'has space' must be 1-128 characters/);
  } finally {
    await removeTemp(dir);
  }
});

// {=== strictness: unknown arguments, app.lua's fields, scripts/ subfolders
test('a field-table input refuses an argument it does not name; app.lua schema.unknown_args = "allow" passes it on', opts, async () => {
  const tool = 'local mcp = require "mcp"\nmcp.tool { name = "t", input = { a = mcp.string() }, handler = function(args) return tostring(args.b) end }\n';
  const strict = await tempApp({ 'scripts/t.lua': tool });
  const lenient = await tempApp({ 'scripts/t.lua': tool, 'app.lua': 'return { schema = { unknown_args = "allow" } }\n' });
  try {
    await withRaw([strict], async (srv) => {
      await srv.initialize();
      const r = (await srv.call(1, 'tools/call', { name: 't', arguments: { a: 'x', b: 1 } })).result;
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /unexpected property 'b'/);
      const list = (await srv.call(2, 'tools/list', {})).result.tools;
      assert.equal(list[0].inputSchema.additionalProperties, false);
    });
    await withRaw([lenient], async (srv) => {
      await srv.initialize();
      const r = (await srv.call(1, 'tools/call', { name: 't', arguments: { a: 'x', b: 1 } })).result;
      assert.deepEqual(r.content, [{ type: 'text', text: '1' }]);
    });
  } finally {
    await removeTemp(strict);
    await removeTemp(lenient);
  }
});

test('app.lua: an unknown field or a wrong type is a load error at its line; a scripts/ subfolder is reported', opts, async () => {
  const dir = await tempApp({
    'app.lua': 'return {\n  name = 5,\n  verison = "1.0",\n  cache = { ttl = "long" },\n}\n',
    'scripts/t.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", handler = function() return "x" end }\n',
    'scripts/more/u.lua': 'error("never loaded")\n',
  });
  try {
    const bad = new RawServer(['--no-watch', dir]);
    assert.notEqual(await bad.exited, 0);
    assert.match(bad.stderr, /app\.lua:2: app\.lua's 'name' must be a string, got number/);
    assert.match(bad.stderr, /app\.lua:3: unknown field 'verison' in app\.lua \(known: .*version/);
    assert.match(bad.stderr, /app\.lua:4: app\.lua's cache\.ttl must be a number, got string/);
    await writeFile(path.join(dir, 'app.lua'), 'return { name = "fixed" }\n');
    await withRaw(['--no-watch', dir], async (srv) => {
      await srv.initialize();
      assert.match(srv.stderr, /scripts\/more\/: 1 \.lua file not loaded/);
    });
  } finally {
    await removeTemp(dir);
  }
});

test('luamcp check refuses a widget that includes an unknown luamcp: file', opts, async () => {
  const dir = await tempApp({
    'widgets/v.html': '<html><script src="luamcp:vieww.js"></script></html>\n',
    'scripts/w.lua': 'local mcp = require "mcp"\nmcp.widget { uri = "ui://v", file = "v.html" }\n',
  });
  try {
    const check = new RawServer(['--no-watch', dir]);
    assert.notEqual(await check.exited, 0);
    assert.match(check.stderr, /w\.lua:2: mcp\.widget: unknown include 'luamcp:vieww\.js'/);
  } finally {
    await removeTemp(dir);
  }
});

test('prompts and resources: a value that is not MCP is an error naming the get/read line, never invalid content', opts, async () => {
  const dir = await tempApp({
    'scripts/pr.lua': `local mcp = require "mcp"
mcp.prompt { name = "fn", get = function() return print end }
mcp.prompt { name = "badrole", get = function() return { role = "system", content = "x" } end }
mcp.prompt { name = "nothing", get = function() end }
mcp.prompt { name = "ok", get = function() return { "one", mcp.assistant("two") } end }
mcp.resource { uri = "test://fn", name = "fn", read = function() return { f = print } end }
mcp.resource { uri = "test://nan", name = "nan", read = function() return { x = 0/0 } end }
`,
  });
  try {
    await withRaw([dir], async (srv) => {
      await srv.initialize();
      const cases = [
        ['prompts/get', { name: 'fn' }, /pr\.lua:2: message 1 is a function/],
        ['prompts/get', { name: 'badrole' }, /pr\.lua:3: message 1: role must be "user" or "assistant", got system/],
        ['prompts/get', { name: 'nothing' }, /pr\.lua:4: the prompt's get returned nothing/],
        ['resources/read', { uri: 'test://fn' }, /pr\.lua:6: the result cannot be sent as JSON: .*type function \(at f\)/],
        ['resources/read', { uri: 'test://nan' }, /pr\.lua:7: the result cannot be sent as JSON: .*NaN.*\(at x\)/],
      ];
      let id = 1;
      for (const [method, params, re] of cases) {
        const r = await srv.call(id++, method, params);
        assert.equal(r.error?.code, -32603, `${method} ${JSON.stringify(params)}: ${JSON.stringify(r)}`);
        assert.match(r.error.message, re);
      }
      const ok = (await srv.call(id++, 'prompts/get', { name: 'ok' })).result;
      assert.deepEqual(ok.messages, [
        { role: 'user', content: { type: 'text', text: 'one' } },
        { role: 'assistant', content: { type: 'text', text: 'two' } },
      ]);
    });
  } finally {
    await removeTemp(dir);
  }
});
