// sdk.test.mjs — the official TypeScript SDK client (Client +
// StdioClientTransport) against `luamcp serve`: the example app (repo root)
// and the test apps under tests/apps/. Each test starts its own server and
// requires it to exit with code 0 when stdin closes.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  CallToolResultSchema,
  CompleteResultSchema,
  ErrorCode,
  GetPromptResultSchema,
  InitializeResultSchema,
  LATEST_PROTOCOL_VERSION,
  ListToolsResultSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ReadResourceResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  EXAMPLE_APP,
  FEATURES_APP,
  PAGED_APP,
  SCALE,
  TEST_TIMEOUT,
  WAIT,
  collect,
  withRaw,
  withSdk,
} from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const req = { timeout: WAIT }; // per-request options for the SDK

const text = (result) => result.content.map((c) => c.text).join('\n');

/** Assert that promise rejects with an McpError of this code. */
async function rejectsWithCode(promise, code, pattern) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `expected an McpError, got ${err}`);
    assert.equal(err.code, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

// {=================================================== initialize

test('initialize: serverInfo, capabilities, instructions, protocol version', opts, () =>
  withSdk([EXAMPLE_APP], async ({ client, transport }) => {
    assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);
    assert.equal(transport.protocolVersion, '2025-11-25');
    const info = client.getServerVersion();
    assert.equal(info.name, 'gift-server');
    assert.equal(info.version, '0.1.0');
    assert.equal(info.title, 'Gift ideas');
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools, 'tools');
    assert.ok(caps.resources, 'resources');
    assert.ok(caps.prompts, 'prompts');
    assert.ok(caps.logging, 'logging');
    assert.ok(caps.completions, 'completions');
    assert.match(client.getInstructions(), /suggest_gifts/);
    await client.ping(req);
  }));

test('initialize: the optional serverInfo fields of app.lua pass through', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    assert.deepEqual(client.getServerVersion(), {
      name: 'luamcp-test-features',
      version: '1.2.3',
      title: 'luamcp test features',
      description: 'Tools, prompts and resources the integration suite exercises',
      websiteUrl: 'https://example.org/luamcp',
    });
    assert.match(client.getInstructions(), /Test fixture/);
  }));

test('initialize: an older protocol version is echoed (raw client)', opts, async () => {
  for (const version of ['2024-11-05', '2025-06-18']) {
    await withRaw([EXAMPLE_APP], async (srv) => {
      const result = InitializeResultSchema.parse(await srv.initialize(version));
      assert.equal(result.protocolVersion, version);
      assert.equal(result.serverInfo.name, 'gift-server');
      const r = await srv.call(1, 'tools/call', { name: 'suggest_gifts', arguments: { occasion: 'wedding', budget: 40 } });
      assert.ok(CallToolResultSchema.parse(r.result).content.length > 0);
    });
  }
});

// }===================================================

// {=================================================== tools

test('listTools / callTool: structuredContent checked against outputSchema by the SDK', opts, () =>
  withSdk([EXAMPLE_APP], async ({ client }) => {
    const { tools } = await client.listTools(undefined, req); // caches the output validators
    const tool = tools.find((t) => t.name === 'suggest_gifts');
    assert.ok(tool);
    assert.equal(tool.title, 'Gift ideas');
    assert.equal(tool.inputSchema.type, 'object');
    assert.deepEqual([...tool.inputSchema.required].sort(), ['budget', 'occasion']);
    assert.deepEqual(tool.inputSchema.properties.occasion.enum, ['birthday', 'wedding', 'anniversary']);
    assert.equal(tool.outputSchema.type, 'object');
    assert.equal(tool.annotations.readOnlyHint, true);
    // listTools armed the SDK's client-side check of structuredContent
    assert.equal(typeof client.getToolOutputValidator('suggest_gifts'), 'function');

    const result = await client.callTool({ name: 'suggest_gifts', arguments: { occasion: 'birthday', budget: 50 } }, undefined, req);
    assert.notEqual(result.isError, true);
    const ids = result.structuredContent.gifts.map((g) => g.id).sort();
    assert.deepEqual(ids, ['catan', 'dice', 'tea']);
    for (const g of result.structuredContent.gifts) assert.ok(g.price <= 50);
    assert.match(text(result), /3 gift ideas/);
    CallToolResultSchema.parse(result);

    const withRecipient = await client.callTool(
      { name: 'suggest_gifts', arguments: { occasion: 'wedding', budget: 1000, recipient: 'my sister' } },
      undefined,
      req,
    );
    assert.match(text(withRecipient), /for my sister/);
    assert.equal(withRecipient.structuredContent.gifts.length, 5);
  }));

test('callTool: nothing fits the budget -> an isError result (a business failure, not a protocol error)', opts, () =>
  withSdk([EXAMPLE_APP], async ({ client }) => {
    await client.listTools(undefined, req);
    const result = await client.callTool({ name: 'suggest_gifts', arguments: { occasion: 'birthday', budget: 1 } }, undefined, req);
    assert.equal(result.isError, true);
    assert.match(text(result), /No birthday gifts fit a budget of \$1/);
    assert.equal(result.structuredContent, undefined);
  }));

test('callTool: output that breaks the declared outputSchema is refused by the server (isError)', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const { tools } = await client.listTools(undefined, req);
    assert.deepEqual(tools.find((t) => t.name === 'bad_output').outputSchema, {
      type: 'object',
      properties: { n: { type: 'integer' } },
      required: ['n'],
    });
    const result = await client.callTool({ name: 'bad_output', arguments: {} }, undefined, req);
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent, undefined);
    assert.match(text(result), /bad_output/);
    assert.match(text(result), /\bn\b/);
  }));

test('callTool: a Lua error in a handler -> isError naming the script file and line', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const result = await client.callTool({ name: 'broken', arguments: {} }, undefined, req);
    assert.equal(result.isError, true);
    assert.match(text(result), /scripts\/broken\.lua:7:/);
    assert.match(text(result), /attempt to index a nil value/);
    const after = await client.callTool({ name: 'echo', arguments: { text: 'still fine' } }, undefined, req);
    assert.equal(text(after), 'still fine');
  }));

test('callTool: defaults are filled in; mcp.state is readable and persists between calls', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const { tools } = await client.listTools(undefined, req);
    const greet = tools.find((t) => t.name === 'greet');
    assert.equal(greet.inputSchema.properties.name.default, 'world');
    assert.equal(greet.inputSchema.required, undefined, 'fields with defaults are optional');

    assert.equal(text(await client.callTool({ name: 'greet', arguments: {} }, undefined, req)), 'hello world');
    assert.equal(text(await client.callTool({ name: 'greet' }, undefined, req)), 'hello world');
    assert.equal(
      text(await client.callTool({ name: 'greet', arguments: { name: 'Ada', times: 2 } }, undefined, req)),
      'hello Ada, hello Ada',
    );

    const first = await client.callTool({ name: 'visit', arguments: {} }, undefined, req);
    assert.deepEqual(first.structuredContent, { greeting: 'set while loading', visits: 1 });
    const second = await client.callTool({ name: 'visit', arguments: {} }, undefined, req);
    assert.deepEqual(second.structuredContent, { greeting: 'set while loading', visits: 2 });
    assert.deepEqual(JSON.parse(text(second)), second.structuredContent, 'the text block carries the same JSON');
  }));

test('callTool: every content type, with annotations, _meta, title and icons', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const { tools } = await client.listTools(undefined, req);
    const tool = tools.find((t) => t.name === 'content_types');
    assert.equal(tool.title, 'Every content type');
    assert.deepEqual(tool.icons, [{ src: 'https://example.org/icon.png', mimeType: 'image/png', sizes: ['48x48'] }]);
    assert.deepEqual(tool.annotations, { title: 'All content', readOnlyHint: true, openWorldHint: false });
    assert.deepEqual(tool._meta, { 'org.example.luamcp/kind': 'demo' });
    assert.deepEqual(tool.inputSchema, { type: 'object', additionalProperties: false });

    const result = await client.callTool({ name: 'content_types', arguments: {} }, undefined, req);
    CallToolResultSchema.parse(result);
    assert.deepEqual(result._meta, { 'org.example.luamcp/trace': 'abc123' });
    const [txt, image, audio, link, embedded, blob] = result.content;
    assert.equal(result.content.length, 6);
    assert.deepEqual(txt, { type: 'text', text: 'plain text', annotations: { audience: ['user'], priority: 0.5 } });

    assert.equal(image.type, 'image');
    assert.equal(image.mimeType, 'image/png');
    assert.deepEqual(Buffer.from(image.data, 'base64'), Buffer.from([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82]));
    assert.deepEqual(image._meta, { 'org.example.luamcp/alt': 'a tiny header' });

    assert.equal(audio.type, 'audio');
    assert.equal(audio.mimeType, 'audio/wav');
    assert.equal(Buffer.from(audio.data, 'base64').toString('latin1'), 'RIFF\x24\0\0\0WAVEfmt ');

    assert.deepEqual(link, {
      type: 'resource_link',
      uri: 'mcp://test/files/readme.md',
      name: 'readme',
      title: 'Read me',
      description: 'A linked file',
      mimeType: 'text/markdown',
      size: 42,
    });
    assert.deepEqual(embedded, {
      type: 'resource',
      resource: { uri: 'mcp://test/files/notes.txt', mimeType: 'text/plain', text: 'embedded text' },
      annotations: { priority: 1 },
    });
    assert.equal(blob.type, 'resource');
    assert.equal(blob.resource.uri, 'mcp://test/files/blob.bin');
    assert.equal(blob.resource.mimeType, 'application/octet-stream');
    assert.deepEqual(Buffer.from(blob.resource.blob, 'base64'), Buffer.from([0, 1, 2, 255]));
  }));

test('listTools: pagination walks nextCursor (250 tools, --page-size 100 -> 3 pages)', opts, () =>
  withSdk([PAGED_APP, '--page-size', '100'], async ({ client }) => {
    const pages = [];
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor }, req);
      ListToolsResultSchema.parse(page);
      pages.push(page.tools.length);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
      assert.ok(pages.length <= 3, 'no more than 3 pages');
    } while (cursor !== undefined);
    assert.deepEqual(pages, [100, 100, 50]);
    const expected = Array.from({ length: 250 }, (_, i) => `tool_${String(i + 1).padStart(3, '0')}`);
    assert.deepEqual(names, expected);
    assert.equal(new Set(names).size, 250);
    const last = await client.callTool({ name: 'tool_250', arguments: {} }, undefined, req);
    assert.equal(text(last), '250');
  }));

// }===================================================

// {=================================================== resources, templates, prompts, completion

test('listResources / readResource', opts, () =>
  withSdk([EXAMPLE_APP], async ({ client }) => {
    const { resources } = await client.listResources(undefined, req);
    assert.deepEqual(
      resources.map((r) => [r.uri, r.name, r.mimeType]),
      [
        ['ui://gifts/board.html', 'gift_board.html', 'text/html;profile=mcp-app'],
        ['mcp://gift-server/resources/gift_catalog', 'gift_catalog', 'application/json'],
      ],
    );
    const read = await client.readResource({ uri: 'mcp://gift-server/resources/gift_catalog' }, req);
    ReadResourceResultSchema.parse(read);
    assert.equal(read.contents.length, 1);
    assert.equal(read.contents[0].uri, 'mcp://gift-server/resources/gift_catalog');
    assert.equal(read.contents[0].mimeType, 'application/json');
    const catalog = JSON.parse(read.contents[0].text);
    assert.equal(catalog.length, 7);
    assert.deepEqual(catalog[0], { id: 'catan', name: 'Board game: Catan', price: 45, occasions: ['birthday', 'anniversary'] });
  }));

test('readResource: text, binary (blob) and a two-variable template of a test app', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const hello = await client.readResource({ uri: 'mcp://test/hello.txt' }, req);
    assert.deepEqual(hello.contents, [{ uri: 'mcp://test/hello.txt', mimeType: 'text/plain', text: 'hello, resource' }]);
    const bytes = await client.readResource({ uri: 'mcp://test/bytes.bin' }, req);
    assert.equal(bytes.contents[0].mimeType, 'application/octet-stream');
    assert.deepEqual(Buffer.from(bytes.contents[0].blob, 'base64'), Buffer.from([0, 1, 2, 255]));
    const note = await client.readResource({ uri: 'mcp://test/notes/work/todo' }, req);
    assert.equal(note.contents[0].text, 'note todo in work');
    assert.equal(note.contents[0].uri, 'mcp://test/notes/work/todo');
    const spaced = await client.readResource({ uri: 'mcp://test/notes/my%20folder/x' }, req);
    assert.equal(spaced.contents[0].text, 'note x in my folder');
    await rejectsWithCode(client.readResource({ uri: 'mcp://test/notes/only-one-segment' }, req), -32002);
  }));

test('listResourceTemplates, reading a template URI, and -32002 for what does not exist', opts, () =>
  withSdk([EXAMPLE_APP], async ({ client }) => {
    const { resourceTemplates } = await client.listResourceTemplates(undefined, req);
    assert.equal(resourceTemplates.length, 1);
    assert.equal(resourceTemplates[0].uriTemplate, 'mcp://gift-server/gifts/{id}');
    assert.equal(resourceTemplates[0].name, 'gift');
    assert.equal(resourceTemplates[0].mimeType, 'application/json');

    const tea = await client.readResource({ uri: 'mcp://gift-server/gifts/tea' }, req);
    assert.equal(tea.contents[0].uri, 'mcp://gift-server/gifts/tea');
    assert.deepEqual(JSON.parse(tea.contents[0].text), {
      id: 'tea',
      name: 'Loose-leaf tea sampler',
      price: 28,
      occasions: ['birthday', 'wedding', 'anniversary'],
    });

    // the template matches, but its read returns nil
    const missing = client.readResource({ uri: 'mcp://gift-server/gifts/unicorn' }, req);
    await assert.rejects(missing, (err) => {
      assert.equal(err.code, -32002, err.message);
      assert.deepEqual(err.data, { uri: 'mcp://gift-server/gifts/unicorn' });
      return true;
    });
    // nothing matches at all
    await rejectsWithCode(client.readResource({ uri: 'mcp://elsewhere/x' }, req), -32002);
  }));

test('listPrompts / getPrompt, and -32602 for a missing required argument', opts, async () => {
  await withSdk([EXAMPLE_APP], async ({ client }) => {
    const { prompts } = await client.listPrompts(undefined, req);
    assert.equal(prompts.length, 1);
    assert.equal(prompts[0].name, 'gift_congrats_style');
    assert.equal(prompts[0].title, 'Congratulations note');
    assert.deepEqual(prompts[0].arguments, [{ name: 'tone', description: 'Tone of the note', required: false }]);

    const formal = await client.getPrompt({ name: 'gift_congrats_style', arguments: { tone: 'formal' } }, req);
    GetPromptResultSchema.parse(formal);
    assert.equal(formal.messages.length, 1);
    assert.equal(formal.messages[0].role, 'user');
    assert.match(formal.messages[0].content.text, /in a formal tone/);
    const dflt = await client.getPrompt({ name: 'gift_congrats_style' }, req);
    assert.match(dflt.messages[0].content.text, /in a friendly tone/);
  });
  await withSdk([FEATURES_APP], async ({ client }) => {
    const { prompts } = await client.listPrompts(undefined, req);
    const review = prompts.find((p) => p.name === 'code_review');
    const args = Object.fromEntries(review.arguments.map((a) => [a.name, a]));
    assert.equal(args.code.required, true);
    assert.equal(args.language.required, false);
    const ok = await client.getPrompt({ name: 'code_review', arguments: { code: 'x = 1', language: 'lua' } }, req);
    assert.equal(ok.messages[0].content.text, 'Review this lua code:\nx = 1');
    await rejectsWithCode(
      client.getPrompt({ name: 'code_review', arguments: { language: 'lua' } }, req),
      ErrorCode.InvalidParams,
      /code/,
    );
  });
});

test('complete(): a template variable and a prompt argument', opts, async () => {
  await withSdk([EXAMPLE_APP], async ({ client }) => {
    const ids = await client.complete(
      { ref: { type: 'ref/resource', uri: 'mcp://gift-server/gifts/{id}' }, argument: { name: 'id', value: 'd' } },
      req,
    );
    CompleteResultSchema.parse(ids);
    assert.deepEqual(ids.completion.values, ['dice', 'dinner']);
    const all = await client.complete(
      { ref: { type: 'ref/resource', uri: 'mcp://gift-server/gifts/{id}' }, argument: { name: 'id', value: '' } },
      req,
    );
    assert.equal(all.completion.values.length, 7);

    const tones = await client.complete(
      { ref: { type: 'ref/prompt', name: 'gift_congrats_style' }, argument: { name: 'tone', value: 'f' } },
      req,
    );
    assert.deepEqual([...tones.completion.values].sort(), ['formal', 'friendly', 'funny']);
    const none = await client.complete(
      { ref: { type: 'ref/prompt', name: 'gift_congrats_style' }, argument: { name: 'tone', value: 'zzz' } },
      req,
    );
    assert.deepEqual(none.completion.values, []);
  });
  await withSdk([FEATURES_APP], async ({ client }) => {
    const langs = await client.complete(
      { ref: { type: 'ref/prompt', name: 'code_review' }, argument: { name: 'language', value: 'j' } },
      req,
    );
    assert.deepEqual(langs.completion.values, ['javascript']);
  });
});

// }===================================================

// {=================================================== logging, progress

test('progress notifications reach onprogress when a progressToken is sent', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const seen = [];
    // The pause after each step keeps each notification out of the read that
    // carries the response: SDK 1.32.2 drops progress that arrives in the same
    // chunk as its response (typescript-sdk#2580). raw.test.mjs checks the
    // wire order without a pause.
    const pause = 0.05 * SCALE;
    const result = await client.callTool({ name: 'progress', arguments: { steps: 3, pause } }, undefined, {
      ...req,
      onprogress: (p) => seen.push(p),
    });
    assert.equal(text(result), 'progress sent: true');
    assert.deepEqual(seen, [
      { progress: 1, total: 3, message: 'step 1 of 3' },
      { progress: 2, total: 3, message: 'step 2 of 3' },
      { progress: 3, total: 3, message: 'step 3 of 3' },
    ]);
    // without a token ctx:progress sends nothing and says so
    const quiet = await client.callTool({ name: 'progress', arguments: { steps: 2 } }, undefined, req);
    assert.equal(text(quiet), 'progress sent: false');
  }));

// }===================================================

// {=================================================== cancellation, limits, concurrency

/** Start a call that logs `marker` once it runs; abort it then. */
async function cancelWhileRunning(conn, name, args, marker) {
  const { client } = conn;
  const logs = collect(client, LoggingMessageNotificationSchema);
  const ac = new AbortController();
  const call = client.callTool({ name, arguments: args }, undefined, { signal: ac.signal, timeout: WAIT * 10 });
  await logs.until((items) => items.some((m) => String(m.data).startsWith(marker)), `"${marker}" from the handler`);
  ac.abort('the test cancels');
  await assert.rejects(call, /the test cancels/);
  // the server keeps serving; the engine is free again (a spinning call would block it)
  const t0 = Date.now();
  const after = await client.callTool({ name: 'echo', arguments: { text: 'after cancel' } }, undefined, req);
  assert.equal(text(after), 'after cancel');
  assert.ok(Date.now() - t0 < WAIT);
  const again = await client.callTool({ name: 'greet', arguments: { name: 'again' } }, undefined, req);
  assert.equal(text(again), 'hello again');
  await client.ping(req);
  // no late reply for the cancelled request (the SDK would report an unknown id)
  assert.deepEqual(conn.errors.map(String), []);
}

// --timeout 600: only the cancellation can end these calls; if it did not,
// the later calls would hang (busy loop) or the exit would wait (sleep)
test('cancellation via AbortSignal stops a handler in a busy loop', opts, () =>
  withSdk([FEATURES_APP, '--timeout', '600'], (conn) => cancelWhileRunning(conn, 'spin', {}, 'spinning')));

test('cancellation via AbortSignal stops a handler in ctx:sleep', opts, () =>
  withSdk([FEATURES_APP, '--timeout', '600'], (conn) => cancelWhileRunning(conn, 'sleep', { seconds: 500 }, 'sleeping')));

test('--timeout: an endless handler becomes an isError result mentioning "timed out"; the server lives on', opts, () =>
  withSdk([FEATURES_APP, '--timeout', String(0.5 * SCALE)], async ({ client }) => {
    const t0 = Date.now();
    const spun = await client.callTool({ name: 'spin', arguments: {} }, undefined, req);
    assert.equal(spun.isError, true);
    assert.match(text(spun), /timed out/);
    assert.ok(Date.now() - t0 >= 450 * SCALE, 'not before the timeout');
    const slept = await client.callTool({ name: 'sleep', arguments: { seconds: 500 } }, undefined, req);
    assert.equal(slept.isError, true);
    assert.match(text(slept), /timed out/);
    const after = await client.callTool({ name: 'echo', arguments: { text: 'alive' } }, undefined, req);
    assert.equal(text(after), 'alive');
  }));

test('--memory-limit: a handler building a huge table gets an isError result; the server lives on', opts, () =>
  withSdk([FEATURES_APP, '--memory-limit', '8'], async ({ client }) => {
    const hog = await client.callTool({ name: 'hog', arguments: {} }, undefined, req);
    assert.equal(hog.isError, true);
    assert.match(text(hog), /memory/);
    const after = await client.callTool({ name: 'echo', arguments: { text: 'alive' } }, undefined, req);
    assert.equal(text(after), 'alive');
    // the limit is per call: a second hog fails the same way, not worse
    const again = await client.callTool({ name: 'hog', arguments: {} }, undefined, req);
    assert.equal(again.isError, true);
    assert.match(text(again), /memory/);
  }));

test('ctx:sleep does not block: two sleeping calls run concurrently', opts, () =>
  withSdk([FEATURES_APP], async ({ client }) => {
    const seconds = Math.round(300 * SCALE) / 1000;
    await client.ping(req); // warm up
    const t0 = performance.now();
    const [a, b] = await Promise.all([
      client.callTool({ name: 'sleep', arguments: { seconds } }, undefined, req),
      client.callTool({ name: 'sleep', arguments: { seconds } }, undefined, req),
    ]);
    const elapsed = performance.now() - t0;
    assert.equal(text(a), `slept ${seconds}`);
    assert.equal(text(b), `slept ${seconds}`);
    assert.ok(elapsed >= seconds * 1000 - 5, `they slept (${elapsed.toFixed(0)} ms)`);
    assert.ok(elapsed < seconds * 1000 * 1.5, `${elapsed.toFixed(0)} ms: well under ${2 * seconds * 1000} ms, not one after the other`);
  }));

// }===================================================
