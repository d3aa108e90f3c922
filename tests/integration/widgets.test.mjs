// widgets.test.mjs — MCP Apps (SEP-1865, io.modelcontextprotocol/ui) on the
// wire, over stdio with raw NDJSON: the extension in the capabilities, tool
// _meta.ui (nested and the flat "ui/resourceUri"), visibility for clients with
// and without the UI extension, resources/read of widgets (one content, the
// exact MIME type, _meta.ui as declared, the view helper inlined), and
// `luamcp check` of widget references and paths.
import assert from 'node:assert/strict';
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, EXAMPLE_APP, REPO_ROOT, TEST_TIMEOUT, removeTemp, run, tempApp, withRaw } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const WIDGETS_APP = path.join(APPS, 'widgets');
const UI = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const VIEW_TAG = /<script[^>]*\bsrc\s*=\s*["']?luamcp:view\.js/i;

/** initialize as a host with MCP Apps (ui = true) or as a plain client. */
async function init(srv, { ui }) {
  const capabilities = ui ? { extensions: { [UI]: { mimeTypes: [MIME] } } } : {};
  const r = await srv.call('init', 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities,
    clientInfo: { name: 'luamcp-widgets-test', version: '0.0.0' },
  });
  assert.ok(r.result, `initialize failed: ${JSON.stringify(r)}`);
  srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return r.result;
}

let nextId = 1;
async function call(srv, method, params) {
  const r = await srv.call(nextId++, method, params);
  return r;
}

async function listTools(srv) {
  const tools = [];
  let cursor;
  do {
    const r = await call(srv, 'tools/list', cursor ? { cursor } : {});
    assert.ok(r.result, JSON.stringify(r));
    tools.push(...r.result.tools);
    cursor = r.result.nextCursor;
  } while (cursor);
  return Object.fromEntries(tools.map((t) => [t.name, t]));
}

async function read(srv, uri) {
  const r = await call(srv, 'resources/read', { uri });
  assert.ok(r.result, `resources/read ${uri}: ${JSON.stringify(r)}`);
  return r.result;
}

/** The one content of a widget, checked as hosts check it. */
async function readWidget(srv, uri) {
  const { contents } = await read(srv, uri);
  assert.equal(contents.length, 1, `${uri}: exactly one content`);
  const [c] = contents;
  assert.equal(c.uri, uri);
  assert.equal(c.mimeType, MIME, `${uri}: the MIME type, exactly`);
  assert.equal(typeof c.text, 'string');
  assert.equal(c.blob, undefined);
  return c;
}

/** lua/view.js as it must appear inline: "</script" escaped so the element cannot end early. */
async function inlinedHelper() {
  const js = await readFile(path.join(REPO_ROOT, 'lua', 'view.js'), 'utf8');
  return js.replaceAll('</script', '<\\/script');
}

/** The helper is inline, whole, and its <script> element ends right after it. */
async function assertHelperInlined(html, where) {
  const helper = await inlinedHelper();
  const start = html.indexOf('<script>\n/* luamcp view helper');
  assert.ok(start >= 0, `${where}: the helper's <script> element`);
  const body = start + '<script>\n'.length;
  const end = html.indexOf('</script>', body);
  assert.ok(end > 0, `${where}: the helper's </script>`);
  // the first </script> after the helper's start is its own end: nothing cut it short
  const got = html.slice(body, end).replace(/\n+$/, '');
  const want = helper.replace(/\n+$/, '');
  if (got !== want) {
    let at = 0;
    while (got[at] === want[at]) at++;
    assert.fail(`${where}: the inlined helper differs from lua/view.js at offset ${at} ` +
      `(${got.length} vs ${want.length} chars): ${JSON.stringify(got.slice(at, at + 80))}`);
  }
  assert.ok(!/<\/script/i.test(html.slice(body, end)), `${where}: no premature </script> inside`);
  // and no tag asking for it is left anywhere else
  const rest = html.slice(0, start) + html.slice(end);
  assert.ok(!VIEW_TAG.test(rest), `${where}: a <script src="luamcp:view.js"> is left`);
}

// {=================================================== capabilities and tools/list

test('initialize: the server declares capabilities.extensions["io.modelcontextprotocol/ui"]', opts, async () => {
  for (const ui of [true, false]) {
    await withRaw([WIDGETS_APP], async (srv) => {
      const r = await init(srv, { ui });
      assert.deepEqual(r.capabilities.extensions, { [UI]: { mimeTypes: [MIME] } }, `client with ui=${ui}`);
      assert.ok(r.capabilities.tools && r.capabilities.resources);
    });
  }
  await withRaw([EXAMPLE_APP], async (srv) => {
    const r = await init(srv, { ui: true });
    assert.deepEqual(r.capabilities.extensions?.[UI], { mimeTypes: [MIME] });
  });
});

test('tools/list to a UI host: _meta.ui.resourceUri, the flat ui/resourceUri, _meta.ui.visibility', opts, async () => {
  await withRaw([WIDGETS_APP], async (srv) => {
    await init(srv, { ui: true });
    const tools = await listTools(srv);
    assert.deepEqual(Object.keys(tools).sort(), ['app_only', 'both', 'model_only', 'plain', 'show_probe']);
    assert.deepEqual(tools.show_probe._meta, {
      ui: { resourceUri: 'ui://probe/view.html' },
      'ui/resourceUri': 'ui://probe/view.html',
    });
    assert.deepEqual(tools.app_only._meta, {
      ui: { resourceUri: 'ui://probe/view.html', visibility: ['app'] },
      'ui/resourceUri': 'ui://probe/view.html',
    });
    assert.deepEqual(tools.model_only._meta, { ui: { visibility: ['model'] } });
    assert.deepEqual(tools.both._meta, { ui: { visibility: ['model', 'app'] } });
    assert.equal(tools.plain._meta, undefined, 'a tool without UI has no _meta.ui');
  });
  await withRaw([EXAMPLE_APP], async (srv) => {
    await init(srv, { ui: true });
    const tools = await listTools(srv);
    assert.deepEqual(tools.suggest_gifts._meta, {
      ui: { resourceUri: 'ui://gifts/board.html' },
      'ui/resourceUri': 'ui://gifts/board.html',
    });
    assert.deepEqual(tools.shortlist_gift._meta.ui.visibility, ['app']);
  });
});

test('a client without the UI extension: app-only tools are not listed, and calling one is -32602', opts, async () => {
  await withRaw([WIDGETS_APP], async (srv) => {
    await init(srv, { ui: false });
    const tools = await listTools(srv);
    assert.deepEqual(Object.keys(tools).sort(), ['both', 'model_only', 'plain', 'show_probe']);
    const r = await call(srv, 'tools/call', { name: 'app_only', arguments: {} });
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.match(r.error.message, /app_only/);
    const ok = await call(srv, 'tools/call', { name: 'model_only', arguments: {} });
    assert.deepEqual(ok.result?.content, [{ type: 'text', text: 'model_only ran' }]);
    // the UI-linked tool still answers with text for hosts without views
    const probe = await call(srv, 'tools/call', { name: 'show_probe', arguments: { text: 'hi' } });
    assert.deepEqual(probe.result?.content, [{ type: 'text', text: 'probe: hi' }]);
  });
  await withRaw([EXAMPLE_APP], async (srv) => {
    await init(srv, { ui: false });
    const tools = await listTools(srv);
    assert.deepEqual(Object.keys(tools), ['suggest_gifts']);
    const r = await call(srv, 'tools/call', { name: 'shortlist_gift', arguments: { id: 'tea' } });
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    const gifts = await call(srv, 'tools/call', { name: 'suggest_gifts', arguments: { occasion: 'birthday', budget: 30 } });
    assert.equal(gifts.result.content[0].text, '2 gift ideas:\n- Dice set ($20)\n- Loose-leaf tea sampler ($28)');
    assert.deepEqual(gifts.result.structuredContent, {
      gifts: [
        { id: 'dice', name: 'Dice set', price: 20 },
        { id: 'tea', name: 'Loose-leaf tea sampler', price: 28 },
      ],
    });
  });
});

test('a client with the UI extension sees app-only tools (with visibility) and may call them', opts, async () => {
  await withRaw([EXAMPLE_APP], async (srv) => {
    await init(srv, { ui: true });
    const tools = await listTools(srv);
    assert.deepEqual(Object.keys(tools).sort(), ['shortlist_gift', 'suggest_gifts']);
    const on = await call(srv, 'tools/call', { name: 'shortlist_gift', arguments: { id: 'tea' } });
    assert.deepEqual(on.result?.structuredContent, { shortlist: ['tea'] }, JSON.stringify(on));
    assert.equal(on.result.content[0].text, 'Shortlist: tea');
    const two = await call(srv, 'tools/call', { name: 'shortlist_gift', arguments: { id: 'dice', on: true } });
    assert.deepEqual(two.result.structuredContent, { shortlist: ['dice', 'tea'] });
    const off = await call(srv, 'tools/call', { name: 'shortlist_gift', arguments: { id: 'tea', on: false } });
    assert.deepEqual(off.result.structuredContent, { shortlist: ['dice'] });
    const bad = await call(srv, 'tools/call', { name: 'shortlist_gift', arguments: { id: 'unicorn' } });
    assert.equal(bad.result?.isError, true);
    assert.match(bad.result.content[0].text, /unicorn/);
  });
});

// }===================================================

// {=================================================== resources

test('resources/read of a widget: one content, text/html;profile=mcp-app, _meta.ui as declared', opts, async () => {
  await withRaw([WIDGETS_APP], async (srv) => {
    await init(srv, { ui: true });
    const probe = await readWidget(srv, 'ui://probe/view.html');
    assert.deepEqual(probe._meta, {
      ui: {
        csp: { connectDomains: ['http://127.0.0.1:*'], resourceDomains: ['https://cdn.example.org'] },
        permissions: { clipboardWrite: {} },
        domain: 'probe.widgets.example',
        prefersBorder: false,
      },
    });
    assert.match(probe.text, /^<!doctype html>/i);
    const inline = await readWidget(srv, 'ui://probe/inline.html');
    assert.deepEqual(inline._meta, { ui: {} });
    const nested = await readWidget(srv, 'ui://probe/nested.html');
    assert.deepEqual(nested._meta, { ui: { prefersBorder: true } });
    assert.equal(nested.text, await readFile(path.join(WIDGETS_APP, 'widgets', 'parts', 'nested.html'), 'utf8'),
      'a widget without the helper is served as written');

    // resources/list carries the same _meta.ui (the hosts' fallback)
    const list = await call(srv, 'resources/list', {});
    const byUri = Object.fromEntries(list.result.resources.map((r) => [r.uri, r]));
    for (const [uri, content] of [['ui://probe/view.html', probe], ['ui://probe/inline.html', inline], ['ui://probe/nested.html', nested]]) {
      assert.equal(byUri[uri]?.mimeType, MIME, uri);
      assert.deepEqual(byUri[uri]._meta, content._meta, `${uri}: _meta.ui in resources/list`);
    }
    assert.equal(byUri['ui://probe/view.html'].title, 'Probe');
    assert.equal(byUri['ui://probe/view.html'].description, 'Shows what the host sent it');
  });
  await withRaw([EXAMPLE_APP], async (srv) => {
    await init(srv, { ui: true });
    const board = await readWidget(srv, 'ui://gifts/board.html');
    assert.deepEqual(board._meta, { ui: { prefersBorder: true } });
  });
});

test('the view helper is inlined whole where a widget asks for it (file and html widgets)', opts, async () => {
  await withRaw([WIDGETS_APP], async (srv) => {
    await init(srv, { ui: true });
    const probe = await readWidget(srv, 'ui://probe/view.html');
    await assertHelperInlined(probe.text, 'probe.html');
    // the widget's own script after the helper is intact
    const source = await readFile(path.join(WIDGETS_APP, 'widgets', 'probe.html'), 'utf8');
    const own = source.slice(source.indexOf('<script>\n  "use strict";'));
    assert.ok(probe.text.endsWith(own), 'the rest of the widget, unchanged');
    const inline = await readWidget(srv, 'ui://probe/inline.html');
    await assertHelperInlined(inline.text, 'inline.html');
    assert.match(inline.text, /\n<\/script><\/body><\/html>\n$/);
  });
  await withRaw([EXAMPLE_APP], async (srv) => {
    await init(srv, { ui: true });
    const board = await readWidget(srv, 'ui://gifts/board.html');
    await assertHelperInlined(board.text, 'gift_board.html');
  });
});

// }===================================================

// {=================================================== luamcp check

/** `luamcp check` must fail (exit 1) with file:line naming the problem. */
async function checkFails(files, { line, pattern, setup } = {}) {
  const dir = await tempApp(files);
  try {
    if (setup) await setup(dir);
    const r = await run(['check', dir]);
    assert.equal(r.signal, null, r.stderr);
    assert.equal(r.code, 1, `exit ${r.code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`);
    const out = r.stdout + r.stderr;
    assert.match(out, new RegExp(`scripts/a\\.lua:${line}: `), `file:line in\n${out}`);
    assert.match(out, pattern);
    return out;
  } finally {
    await removeTemp(dir);
  }
}

const HEADER = 'local mcp = require "mcp"\n\n';
const widget = (file) => `${HEADER}mcp.widget { uri = "ui://t/w.html", file = ${JSON.stringify(file)} }\n`;
const PAGE = '<!doctype html><html><body><p>x</p></body></html>\n';

test('luamcp check: a tool showing a widget that nobody registered', opts, async () => {
  await checkFails(
    {
      'scripts/a.lua':
        `${HEADER}mcp.tool {\n  name = "t",\n  ui = "ui://t/missing.html",\n  handler = function() return "x" end,\n}\n`,
    },
    { line: 3, pattern: /tool 't' shows widget 'ui:\/\/t\/missing\.html', but no mcp\.widget has that uri/ },
  );
});

test('luamcp check: a widget file that does not exist', opts, async () => {
  await checkFails({ 'scripts/a.lua': widget('nope.html'), 'widgets/other.html': PAGE }, {
    line: 3,
    pattern: /widget file '[^']*nope\.html': No such file or directory/,
  });
});

test('luamcp check: widget paths that leave widgets/ (.., absolute, symlinks)', opts, async () => {
  const inside = /must be a path inside the widgets\/ folder/;
  await checkFails({ 'scripts/a.lua': widget('../scripts/a.lua'), 'widgets/w.html': PAGE }, { line: 3, pattern: inside });
  await checkFails({ 'scripts/a.lua': widget('sub/../../scripts/a.lua'), 'widgets/sub/w.html': PAGE }, { line: 3, pattern: inside });
  await checkFails({ 'scripts/a.lua': widget('..'), 'widgets/w.html': PAGE }, { line: 3, pattern: inside });
  // an absolute path, even to a file that is in widgets/
  const abs = await tempApp({ 'widgets/w.html': PAGE });
  try {
    await checkFails({ 'scripts/a.lua': widget(path.join(abs, 'widgets', 'w.html')) }, { line: 3, pattern: inside });
  } finally {
    await removeTemp(abs);
  }
  // a symlink in widgets/ to a file outside, and to a folder outside
  const outside = /leads outside the widgets\/ folder/;
  await checkFails({ 'scripts/a.lua': widget('link.html'), 'secret.html': PAGE, 'widgets/w.html': PAGE }, {
    line: 3,
    pattern: outside,
    setup: (dir) => symlink(path.join(dir, 'secret.html'), path.join(dir, 'widgets', 'link.html')),
  });
  await checkFails({ 'scripts/a.lua': widget('out/secret.html'), 'private/secret.html': PAGE, 'widgets/w.html': PAGE }, {
    line: 3,
    pattern: outside,
    setup: (dir) => symlink('../private', path.join(dir, 'widgets', 'out')),
  });
});

test('luamcp check: widgets in subfolders and symlinks that stay inside widgets/ are fine', opts, async () => {
  const dir = await tempApp({
    'scripts/a.lua':
      `${HEADER}mcp.widget { uri = "ui://t/a.html", file = "sub/a.html" }\n` +
      'mcp.widget { uri = "ui://t/b.html", file = "alias.html" }\n' +
      'mcp.tool { name = "t", ui = "ui://t/a.html", handler = function() return "x" end }\n',
    'widgets/sub/a.html': PAGE,
  });
  try {
    await symlink('sub/a.html', path.join(dir, 'widgets', 'alias.html'));
    const r = await run(['check', dir]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /ok/);
  } finally {
    await removeTemp(dir);
  }
  for (const app of [WIDGETS_APP, EXAMPLE_APP]) {
    const r = await run(['check', app]);
    assert.equal(r.code, 0, `${app}\n${r.stdout}${r.stderr}`);
  }
});

// }===================================================

test('openai = true: a text/html+skybridge copy of the view and the tool\'s openai/outputTemplate', opts, async () => {
  const dir = await tempApp({
    'widgets/board.html': '<!doctype html><html><head><title>b</title></head><body>board</body></html>',
    'scripts/a.lua': [
      'local mcp = require "mcp"',
      'mcp.widget { uri = "ui://t/board.html", file = "board.html", openai = true }',
      'mcp.tool { name = "show", description = "shows", ui = "ui://t/board.html", handler = function() return "x" end }',
      'mcp.tool { name = "plain", description = "no view", handler = function() return "y" end }',
    ].join('\n'),
  });
  try {
    await withRaw([dir], async (srv) => {
      await init(srv, { ui: true });
      const tools = await listTools(srv);
      assert.equal(tools.show._meta['openai/outputTemplate'], 'ui://t/board.skybridge.html');
      assert.equal(tools.show._meta.ui.resourceUri, 'ui://t/board.html');
      assert.equal(tools.plain._meta, undefined);
      const { contents } = await read(srv, 'ui://t/board.skybridge.html');
      assert.equal(contents.length, 1);
      assert.equal(contents[0].mimeType, 'text/html+skybridge');
      assert.match(contents[0].text, /board/);
      const mcpApps = await read(srv, 'ui://t/board.html');
      assert.equal(mcpApps.contents[0].mimeType, MIME);
    });
  } finally {
    await removeTemp(dir);
  }
});
