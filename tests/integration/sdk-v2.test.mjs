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

import { APPS, BIN, TEST_TIMEOUT, WAIT, WRAP, removeTemp, tempApp, within } from './helpers.mjs';
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
