// reload-widgets.test.mjs — hot reload of MCP Apps widgets as a client sees
// it over stdio: the official SDK client on `luamcp serve --log-level info`
// of an app written into a fresh temp dir for each test, while the test
// edits the widgets' files as editors save them (in place, or a temp file
// renamed over the old one; helpers.saveFile).
//
//   node --test tests/integration/reload-widgets.test.mjs   (from the repo root)
//
// How the waits work (no sleeping): every reload logs "reloaded DIR in X ms"
// (or "reload failed") on stderr after the new version is published and
// after its notifications were written to stdout. A test waits for the
// notification it expects, or for that line and then a ping round trip:
// once the ping is answered every notification of that reload has been
// handled, so "nothing arrived" can be asserted without a time window.
import assert from 'node:assert/strict';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
  LoggingMessageNotificationSchema,
  McpError,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { TEST_TIMEOUT, WAIT, collect, connectSdk, removeTemp, saveFile, tempApp, watchLines, withSdk } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const req = { timeout: WAIT };

const RELOADED = /^luamcp: info: reloaded .* in [0-9.]+ ms/;
const RELOAD_FAILED = /^luamcp: error: reload failed/;
const UI_MIME = 'text/html;profile=mcp-app';
const UI_CAPS = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [UI_MIME] } } };

const BOARD = 'ui://reload/board.html';
const OTHER = 'ui://reload/other.html';
const ADDED = 'ui://reload/added.html';

// {=================================================== the app

const page = (title, body, head = '') =>
  `<!doctype html>\n<html><head><meta charset="utf-8"><title>${title}</title>${head}</head>\n<body>${body}</body></html>\n`;

/** The board includes a stylesheet, a classic script and a module script with inline:. */
const boardHtml = (marker) =>
  page(
    'Board',
    `<h1>${marker}</h1>\n<script src="inline:board.js"></script>\n<script type="module" src="inline:parts/mod.js"></script>\n`,
    '\n<link rel="stylesheet" href="inline:board.css">\n',
  );

// Line numbers matter: the failure tests look for them in the errors.
const VIEWS_LUA = `local mcp = require "mcp"
mcp.widget { uri = "${BOARD}", file = "board.html" }
`;
const OTHER_LUA = `local mcp = require "mcp"
-- the other widget, on its own in this script
mcp.widget { uri = "${OTHER}", file = "other.html" }
`;
const OTHER_WIDGET_LINE = 3; // of scripts/other.lua
const TOOLS_LUA = `local mcp = require "mcp"
mcp.tool { name = "show_board", ui = "${BOARD}", handler = function() return "board" end }

mcp.tool { name = "show_other", ui = "${OTHER}", handler = function() return "other" end }
`;
const SHOW_OTHER_LINE = 4; // of scripts/tools.lua

const FILES = {
  'scripts/views.lua': VIEWS_LUA,
  'scripts/other.lua': OTHER_LUA,
  'scripts/tools.lua': TOOLS_LUA,
  'widgets/board.html': boardHtml('board v1'),
  'widgets/board.css': 'h1 { color: rgb(1, 2, 3); } /* css v1 */\n',
  'widgets/board.js': 'window.boardVersion = "js v1";\n',
  'widgets/parts/mod.js': 'window.modVersion = "mod v1";\n',
  'widgets/other.html': page('Other', '<p>other v1</p>'),
  'widgets/unused.js': '// included by no widget\n',
};

// }===================================================

// {=================================================== the harness

/**
 * One SDK client (a UI host) on a temp app: collects every resources
 * notification and log message, follows stderr.
 */
function harness(conn, dir) {
  const { client } = conn;
  const h = {
    client,
    dir,
    stderr: conn.stderr,
    file: (rel) => path.join(dir, rel),
    updated: collect(client, ResourceUpdatedNotificationSchema),
    listChanged: collect(client, ResourceListChangedNotificationSchema),
    toolsChanged: collect(client, ToolListChangedNotificationSchema),
    log: collect(client, LoggingMessageNotificationSchema),
    err: watchLines(conn.transport.stderr, conn.stderr()),
  };
  h.good = () => h.err.count(RELOADED);
  h.failed = () => h.err.count(RELOAD_FAILED);
  h.mark = () => ({
    updated: h.updated.items.length,
    listChanged: h.listChanged.items.length,
    toolsChanged: h.toolsChanged.items.length,
    log: h.log.items.length,
    good: h.good(),
    failed: h.failed(),
  });
  h.since = (m) => {
    const now = h.mark();
    return Object.fromEntries(Object.keys(m).map((k) => [k, now[k] - m[k]]));
  };
  /** The URIs of resources/updated since mark m. */
  h.updatedSince = (m) => h.updated.items.slice(m.updated).map((p) => p.uri);
  h.goodReloadAfter = (m, what = 'a successful reload') => h.err.until(() => h.good() > m.good, what);
  h.failedReloadAfter = (m, what = 'a failed reload') => h.err.until(() => h.failed() > m.failed, what);
  /** Wait for resources/updated of uri since mark m. */
  h.updatedAfter = (m, uri, what) =>
    h.updated.until(() => h.updatedSince(m).includes(uri), what ?? `notifications/resources/updated for ${uri}`);
  /** Every notification written before now has been handled once this returns. */
  h.settle = async () => {
    await client.ping(req);
    await new Promise((resolve) => setImmediate(resolve));
  };
  /** After a successful reload since m and a ping: everything it said has arrived. */
  h.reloadedAfter = async (m, what) => {
    await h.goodReloadAfter(m, what);
    await h.settle();
  };
  h.read = async (uri) => {
    const { contents } = await client.readResource({ uri }, req);
    assert.equal(contents.length, 1, `${uri}: one content`);
    assert.equal(contents[0].mimeType, UI_MIME);
    return contents[0].text;
  };
  h.listed = async () => (await client.listResources({}, req)).resources.map((r) => r.uri).sort();
  h.tools = async () => (await client.listTools({}, req)).tools;
  h.subscribe = (uri) => client.subscribeResource({ uri }, req);
  h.unsubscribe = (uri) => client.unsubscribeResource({ uri }, req);
  /** The error notifications/message of failed reloads since mark m, as strings. */
  h.reloadErrors = (m) =>
    h.log.items.slice(m.log).filter((p) => p.level === 'error' && p.logger === 'luamcp').map((p) => String(p.data));
  return h;
}

/** A fresh copy of the app (FILES, changed by `edit`), served to an SDK client; body(h). */
async function withApp(body, { files = FILES } = {}) {
  const dir = await tempApp(files);
  try {
    await withSdk(['--log-level', 'info', dir], (conn) => body(harness(conn, dir)), { capabilities: UI_CAPS });
  } finally {
    await removeTemp(dir);
  }
}

// }===================================================

test("a widget's HTML edited in place and saved by rename: resources/updated, then resources/read shows it", opts, () =>
  withApp(async (h) => {
    assert.deepEqual(await h.listed(), [BOARD, OTHER]);
    assert.match(await h.read(BOARD), /<h1>board v1<\/h1>/);
    await h.subscribe(BOARD);
    await h.subscribe(OTHER);

    let n = 2;
    for (const how of ['inplace', 'rename', 'inplace', 'rename']) {
      const marker = `board v${n++}`;
      const m = h.mark();
      await saveFile(h.file('widgets/board.html'), boardHtml(marker), how);
      await h.updatedAfter(m, BOARD, `resources/updated for ${BOARD} after a save (${how})`);
      // the notification came: the very next read has the new HTML
      const html = await h.read(BOARD);
      assert.match(html, new RegExp(`<h1>${marker}</h1>`), `resources/read after the updated of a save (${how})`);
      assert.doesNotMatch(html, /(src|href)="inline:/, 'the includes are still put inline');
      await h.reloadedAfter(m, `the reload after saving board.html (${how})`);
      assert.deepEqual([...new Set(h.updatedSince(m))], [BOARD], `updated for other URIs (${how})`);
      assert.equal(h.since(m).listChanged, 0, `resources/list_changed although the list did not change (${how})`);
      assert.equal(h.since(m).toolsChanged, 0, `tools/list_changed for a widget's HTML (${how})`);
    }
    assert.match(await h.read(OTHER), /other v1/);
  }));

test('a file the widget includes with inline: (stylesheet, script, module in a subfolder) is an update of it', opts, () =>
  withApp(async (h) => {
    await h.subscribe(BOARD);
    await h.subscribe(OTHER);
    const before = await h.read(BOARD);
    assert.ok(before.includes('h1 { color: rgb(1, 2, 3); } /* css v1 */'), 'board.css inline');
    assert.ok(before.includes('window.boardVersion = "js v1";'), 'board.js inline');
    assert.ok(before.includes('window.modVersion = "mod v1";'), 'parts/mod.js inline');

    const edits = [
      ['widgets/board.css', 'h1 { color: rgb(4, 5, 6); } /* css v2 */\n', 'inplace'],
      ['widgets/board.js', 'window.boardVersion = "js v2";\n', 'rename'],
      ['widgets/parts/mod.js', 'window.modVersion = "mod v2";\n', 'inplace'],
      ['widgets/board.css', 'h1 { color: rgb(7, 8, 9); } /* css v3 */\n', 'rename'],
    ];
    for (const [rel, text, how] of edits) {
      const m = h.mark();
      await saveFile(h.file(rel), text, how);
      await h.updatedAfter(m, BOARD, `resources/updated for ${BOARD} after saving ${rel} (${how})`);
      const html = await h.read(BOARD);
      assert.ok(html.includes(text.trimEnd()), `resources/read after saving ${rel} (${how}) does not hold it inline`);
      await h.reloadedAfter(m, `the reload after saving ${rel}`);
      assert.deepEqual([...new Set(h.updatedSince(m))], [BOARD], `updated for a widget that does not include ${rel}`);
    }

    // a file in widgets/ that no widget includes: a reload, no update
    const m = h.mark();
    await saveFile(h.file('widgets/unused.js'), '// still included by no widget\n', 'rename');
    await h.reloadedAfter(m, 'the reload after saving unused.js');
    assert.deepEqual(h.updatedSince(m), [], 'resources/updated for a file no widget includes');
  }));

test('a new widget (mcp.widget in a new script, and its file): resources/list_changed, listed, readable', opts, () =>
  withApp(async (h) => {
    // its HTML first: no resource yet, nothing to tell
    let m = h.mark();
    await saveFile(h.file('widgets/added.html'), page('Added', '<p>added v1</p>'), 'rename');
    await h.reloadedAfter(m, 'the reload after saving added.html');
    assert.equal(h.since(m).listChanged, 0, 'resources/list_changed for a file no widget uses');

    // then the script that declares it, with a tool that shows it
    m = h.mark();
    await saveFile(
      h.file('scripts/added.lua'),
      `local mcp = require "mcp"\nmcp.widget { uri = "${ADDED}", file = "added.html", prefersBorder = true }\n` +
        `mcp.tool { name = "show_added", ui = "${ADDED}", handler = function() return "added" end }\n`,
      'rename',
    );
    await h.listChanged.until((items) => items.length > m.listChanged, 'notifications/resources/list_changed after a new widget');
    await h.reloadedAfter(m, 'the reload after saving scripts/added.lua');
    assert.deepEqual(await h.listed(), [ADDED, BOARD, OTHER]);
    const listing = (await h.client.listResources({}, req)).resources.find((r) => r.uri === ADDED);
    assert.equal(listing.mimeType, UI_MIME);
    assert.match(await h.read(ADDED), /<p>added v1<\/p>/);
    const tool = (await h.tools()).find((t) => t.name === 'show_added');
    assert.equal(tool?._meta?.ui?.resourceUri, ADDED, 'the new tool points at the new widget');
    assert.ok(h.since(m).toolsChanged >= 1, 'tools/list_changed for the new tool');

    // a widget added to a script that was there (html = …): list_changed again
    m = h.mark();
    await saveFile(
      h.file('scripts/views.lua'),
      `${VIEWS_LUA}mcp.widget { uri = "ui://reload/inline.html", html = "<p>inline v1</p>" }\n`,
      'inplace',
    );
    await h.listChanged.until((items) => items.length > m.listChanged, 'resources/list_changed after a widget in views.lua');
    await h.reloadedAfter(m, 'the reload after editing views.lua');
    assert.deepEqual(await h.listed(), [ADDED, BOARD, 'ui://reload/inline.html', OTHER]);
    assert.equal(await h.read('ui://reload/inline.html'), '<p>inline v1</p>');
  }));

test('the declaration of a widget a tool shows is deleted: the reload fails (tool file:line), the old version serves; restored: recovers', opts, () =>
  withApp(async (h) => {
    await h.subscribe(OTHER);
    const script = h.file('scripts/other.lua');
    const aside = h.file('other.lua.aside'); // outside scripts/: not part of the app

    let m = h.mark();
    await rename(script, aside); // deleted, as far as scripts/ is concerned
    await h.failedReloadAfter(m, 'the failed reload after scripts/other.lua went away');
    await h.settle();
    const errors = h.reloadErrors(m);
    assert.equal(errors.length, 1, `notifications/message errors: ${JSON.stringify(h.log.items.slice(m.log))}`);
    assert.match(
      errors[0],
      new RegExp(`scripts/tools\\.lua:${SHOW_OTHER_LINE}: mcp\\.tool: tool 'show_other' shows widget '${OTHER}', but no mcp\\.widget has that uri`),
    );
    assert.match(errors[0], /still serving the previous version/);
    assert.ok(h.err.lines.some((l) => l.includes(`scripts/tools.lua:${SHOW_OTHER_LINE}:`)), 'the error (file:line) on stderr');
    // the previous version keeps serving, whole
    const d = h.since(m);
    assert.deepEqual(
      { updated: d.updated, listChanged: d.listChanged, toolsChanged: d.toolsChanged },
      { updated: 0, listChanged: 0, toolsChanged: 0 },
      'notifications after a failed reload',
    );
    assert.deepEqual(await h.listed(), [BOARD, OTHER]);
    assert.match(await h.read(OTHER), /other v1/);
    assert.equal((await h.tools()).find((t) => t.name === 'show_other')?._meta?.ui?.resourceUri, OTHER);
    const called = await h.client.callTool({ name: 'show_other', arguments: {} }, undefined, req);
    assert.equal(called.content[0].text, 'other');

    // put back: a good reload, the same lists as the version that kept serving
    m = h.mark();
    await rename(aside, script);
    await h.reloadedAfter(m, 'the reload after scripts/other.lua came back');
    assert.equal(h.since(m).failed, 0);
    assert.deepEqual(h.reloadErrors(m), []);
    assert.equal(h.since(m).listChanged, 0, 'list_changed although the list is the one served all along');
    assert.deepEqual(await h.listed(), [BOARD, OTHER]);
    assert.match(await h.read(OTHER), /other v1/);

    // and it is live again: an edit is an update
    m = h.mark();
    await saveFile(h.file('widgets/other.html'), page('Other', '<p>other v2</p>'), 'rename');
    await h.updatedAfter(m, OTHER);
    assert.match(await h.read(OTHER), /other v2/);
  }));

test("the HTML file of a widget a tool shows is deleted: the reload fails (widget file:line, the file's name); restored: recovers", opts, () =>
  withApp(async (h) => {
    await h.subscribe(OTHER);
    const file = h.file('widgets/other.html');

    let m = h.mark();
    await rm(file);
    await h.failedReloadAfter(m, 'the failed reload after widgets/other.html was deleted');
    await h.settle();
    const errors = h.reloadErrors(m);
    assert.equal(errors.length, 1, `notifications/message errors: ${JSON.stringify(h.log.items.slice(m.log))}`);
    assert.match(errors[0], new RegExp(`scripts/other\\.lua:${OTHER_WIDGET_LINE}: mcp\\.widget: widget file '[^']*widgets/other\\.html': No such file or directory`));
    assert.match(errors[0], /still serving the previous version/);
    assert.equal(h.since(m).listChanged, 0, 'list_changed after a failed reload');
    assert.equal(h.since(m).toolsChanged, 0, 'tools/list_changed after a failed reload');
    // the previous version: same lists, the tool still answers
    assert.deepEqual(await h.listed(), [BOARD, OTHER]);
    assert.equal((await h.tools()).find((t) => t.name === 'show_other')?._meta?.ui?.resourceUri, OTHER);
    assert.match(await h.read(BOARD), /board v1/, 'the other widget is still served');

    // restored (with new content): a good reload, the subscriber is told, the read has it
    m = h.mark();
    await saveFile(file, page('Other', '<p>other v2, restored</p>'), 'rename');
    await h.updatedAfter(m, OTHER, `resources/updated for ${OTHER} once its file is back`);
    assert.match(await h.read(OTHER), /other v2, restored/);
    await h.reloadedAfter(m, 'the good reload after the file came back');
    assert.deepEqual(h.reloadErrors(m), []);
    assert.equal(h.since(m).listChanged, 0);
  }));

test('resources/updated goes only to sessions subscribed to that URI', opts, async () => {
  const dir = await tempApp(FILES);
  const conns = [];
  try {
    // three clients (three stdio sessions) on the same app folder
    for (let i = 0; i < 3; i++) conns.push(await connectSdk(['--log-level', 'info', dir], { capabilities: UI_CAPS }));
    const [a, b, c] = conns.map((conn) => harness(conn, dir));
    await a.subscribe(BOARD); // a: the board only
    await b.subscribe(OTHER); // b: the other widget only; c: nothing

    const marks = () => [a, b, c].map((h) => h.mark());
    let m = marks();
    await saveFile(a.file('widgets/board.html'), boardHtml('board v2'), 'rename');
    await a.updatedAfter(m[0], BOARD, 'resources/updated at the subscribed session');
    await Promise.all([a, b, c].map((h, i) => h.reloadedAfter(m[i], `session ${'abc'[i]}'s reload`)));
    assert.deepEqual([...new Set(a.updatedSince(m[0]))], [BOARD]);
    assert.deepEqual(b.updatedSince(m[1]), [], 'resources/updated to a session subscribed to another URI');
    assert.deepEqual(c.updatedSince(m[2]), [], 'resources/updated to a session subscribed to nothing');

    m = marks();
    await saveFile(a.file('widgets/other.html'), page('Other', '<p>other v2</p>'), 'inplace');
    await b.updatedAfter(m[1], OTHER, 'resources/updated for the other widget at b');
    await Promise.all([a, b, c].map((h, i) => h.reloadedAfter(m[i], `session ${'abc'[i]}'s reload`)));
    assert.deepEqual(a.updatedSince(m[0]), [], 'resources/updated for a URI a never subscribed to');
    assert.deepEqual(c.updatedSince(m[2]), []);

    // a unsubscribes: nothing more for it; b subscribes to the board: b is told
    await a.unsubscribe(BOARD);
    await b.subscribe(BOARD);
    m = marks();
    await saveFile(a.file('widgets/board.css'), 'h1 { color: rgb(9, 9, 9); }\n', 'rename');
    await b.updatedAfter(m[1], BOARD, 'resources/updated at b after it subscribed to the board');
    await Promise.all([a, b, c].map((h, i) => h.reloadedAfter(m[i], `session ${'abc'[i]}'s reload`)));
    assert.deepEqual(a.updatedSince(m[0]), [], 'resources/updated after resources/unsubscribe');
    assert.deepEqual([...new Set(b.updatedSince(m[1]))], [BOARD]);
    assert.deepEqual(c.updatedSince(m[2]), []);
  } finally {
    const exits = [];
    for (const conn of conns) {
      exits.push(await conn.close().catch((err) => ({ error: err.message })));
    }
    await removeTemp(dir);
    for (const [i, exit] of exits.entries()) {
      assert.deepEqual(exit, { code: 0, signal: null }, `session ${'abc'[i]}'s server exited badly\n${conns[i].stderr()}`);
    }
  }
});

// A deleted widget: the reload fails, and the version that keeps serving
// still has the page it loaded.
test('a subscribed widget whose HTML file is deleted (reload failed): the last good page keeps serving', opts, () =>
  withApp(async (h) => {
    await h.subscribe(OTHER);
    const m = h.mark();
    await rm(h.file('widgets/other.html'));
    await h.failedReloadAfter(m, 'the failed reload');
    await h.settle();
    assert.match(await h.read(OTHER), /other v1/);
    assert.match(await h.read(BOARD), /board v1/);
  }));
