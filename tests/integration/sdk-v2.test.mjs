// sdk-v2.test.mjs — the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0, pinned) over stdio, in its three
// versionNegotiation modes: 'legacy' (2025 initialize), 'auto' (probe
// server/discover, stay modern) and {pin: '2026-07-28'}. Every method, MRTR
// through the client's input-required auto-fulfilment, listen() seeing a
// hot reload, cancellation.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { APPS, BIN, EXAMPLE_APP, TEST_TIMEOUT, WAIT, WRAP, removeTemp, tempApp, within } from './helpers.mjs';
import { withHttp } from './http-helpers.mjs';

const APP = path.join(APPS, 'modern');
const opts = { timeout: TEST_TIMEOUT };
const MODES = { legacy: 'legacy', auto: 'auto', pin: { pin: '2026-07-28' } };

async function connect(mode, dir = APP, url) {
  const command = WRAP[0] || BIN;
  const args = [...WRAP.slice(1), ...(WRAP.length ? [BIN] : []), 'serve', dir];
  const client = new Client({ name: 'luamcp-v2-test', version: '0.0.0' }, {
    versionNegotiation: { mode: MODES[mode] },
    capabilities: { elicitation: {}, sampling: {}, roots: {} },
  });
  client.setRequestHandler('elicitation/create', async (req) => ({
    action: 'accept', content: req.params.message === 'Your mood?' ? { mood: 'calm' } : { name: 'Ada' },
  }));
  client.setRequestHandler('sampling/createMessage', async () => ({
    role: 'assistant', content: { type: 'text', text: 'teal' }, model: 'test',
  }));
  client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///tmp', name: 'tmp' }] }));
  const transport = url ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command, args, stderr: 'pipe' });
  await within(client.connect(transport), WAIT, `connect (${mode})`);
  return client;
}

async function everyMethod(client) {
  const tools = await client.listTools();
  assert.ok(tools.tools.some((t) => t.name === 'greet'));
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  assert.deepEqual(echo.content, [{ type: 'text', text: 'hi' }]);
  const res = await client.readResource({ uri: 'test://modern/a' });
  assert.equal(res.contents[0].text, 'resource a');
  const greet = await client.callTool({ name: 'greet', arguments: { greeting: 'Hello' } });
  assert.equal(greet.content[0].text, 'Hello, Ada (calm)');
  const two = await client.callTool({ name: 'ask_two', arguments: {} });
  assert.equal(two.content[0].text, 'Ada / teal');
  const roots = await client.callTool({ name: 'roots', arguments: {} });
  assert.equal(roots.content[0].text, 'roots: 1');
}

for (const mode of Object.keys(MODES)) {
  test(`v2 client over Streamable HTTP, ${mode}: every method, questions answered in either era`, opts, () =>
    withHttp(APP, [], async (srv) => {
      const client = await connect(mode, APP, srv.url);
      try {
        await everyMethod(client);
      } finally {
        await client.close();
      }
    }));
}

for (const mode of Object.keys(MODES)) {
  test(`v2 client, ${mode}: lists, calls, reads, and both questions of a handler answered`, opts, async () => {
    const client = await connect(mode);
    try {
      // two ctx:elicit: server->client requests (legacy) or two MRTR rounds (modern), the same answer
      await everyMethod(client);
    } finally {
      await client.close();
    }
  });
}

test('v2 client, pinned 2026-07-28: listen() sees a hot reload', opts, async () => {
  const dir = await tempApp({
    'scripts/a.lua': 'local mcp = require "mcp"\nmcp.tool { name = "a", description = "a", handler = function() return "a" end }\n',
  });
  try {
    const client = await connect('pin', dir);
    try {
      let changed = 0;
      client.setNotificationHandler('notifications/tools/list_changed', () => { changed++; });
      const sub = await within(client.listen({ toolsListChanged: true }), WAIT, 'listen');
      await writeFile(path.join(dir, 'scripts', 'a.lua'),
        'local mcp = require "mcp"\nmcp.tool { name = "b", description = "b", handler = function() return "b" end }\n');
      for (let i = 0; i < 100 && !changed; i++) await delay(50);
      assert.equal(changed, 1);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['b']);
      await sub.close();
    } finally {
      await client.close();
    }
  } finally {
    await removeTemp(dir);
  }
});

test('v2 client, pinned: a cancelled call ends without an answer and the next one works', opts, async () => {
  const dir = await tempApp({
    'scripts/slow.lua': 'local mcp = require "mcp"\nmcp.tool { name = "nap", description = "sleeps", handler = function(_, ctx) ctx:sleep(30) return "woke" end }\nmcp.tool { name = "quick", description = "q", handler = function() return "quick" end }\n',
  });
  try {
    const client = await connect('pin', dir);
    try {
      const ac = new AbortController();
      const pending = client.callTool({ name: 'nap', arguments: {} }, { signal: ac.signal });
      await delay(200);
      ac.abort();
      await assert.rejects(pending);
      const q = await client.callTool({ name: 'quick', arguments: {} });
      assert.equal(q.content[0].text, 'quick');
    } finally {
      await client.close();
    }
  } finally {
    await removeTemp(dir);
  }
});

// --stateless: a 2025-11-25 request carries no capabilities and no initialize is
// remembered, so whether the client is an MCP Apps host is unknown. The host then
// gets app-only tools listed (visibility in _meta, for it to honour, as MCP Apps'
// default has it) and may call them, instead of being shut out (issue 24 rough edge
// 10). A 2026-07-28 request says what it is, and without the extension is filtered.
test('--stateless, legacy: an MCP Apps host (v2 client) lists and calls the app-only shortlist_gift', opts, () =>
  withHttp(EXAMPLE_APP, ['--stateless'], async (srv) => {
    const client = new Client({ name: 'luamcp-v2-host', version: '0.0.0' }, {
      versionNegotiation: { mode: 'legacy' },
      capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } },
    });
    await within(client.connect(new StreamableHTTPClientTransport(new URL(srv.url))), WAIT, 'connect');
    try {
      const { tools } = await client.listTools();
      const shortlist = tools.find((t) => t.name === 'shortlist_gift');
      assert.ok(shortlist, `listed: ${tools.map((t) => t.name)}`);
      assert.deepEqual(shortlist._meta.ui.visibility, ['app']);
      const r = await client.callTool({ name: 'shortlist_gift', arguments: { id: 'tea', on: true } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
    } finally {
      await client.close();
    }
    // the same server to a 2026-07-28 request that does not declare the extension: filtered
    const res = await fetch(srv.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
    const text = await res.text();
    const body = JSON.parse(text.startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data: ')).slice(6));
    assert.deepEqual(body.result?.tools.map((t) => t.name), ['suggest_gifts'], text);
  }));
