// appclass.test.mjs — a view written against the OFFICIAL App class of
// @modelcontextprotocol/ext-apps (tests/apps/appclass), not luamcp's view
// helper, inlined as the README says: the package's self-contained build
// (dist/src/app-with-deps.js) with its one `export{…}` made into
// `window.McpApps = {…}`, included with
// <script type="module" src="inline:ext-apps.js"></script>. It runs in
// headless Chromium in the host of harness.mjs (AppBridge, the sandbox proxy
// on a second origin served with the view's CSP as a header).
//
// widgets/ext-apps.js is not in the repository: each run copies the app to a
// temp dir and makes it there (tests/apps/appclass/make-ext-apps.mjs), with
// one line more than the README's recipe, which sets zod's jitless before the
// bundle loads (see make-ext-apps.mjs: without it, Chromium reports a CSP
// violation, script-src "eval"). LUAMCP_APPCLASS_RECIPE=readme uses the
// README's recipe as written (and shows that violation).
//
//   node --test-reporter=spec tests/browser/appclass.test.mjs   (exit 77: no Chromium)
//   node --test tests/browser/appclass.test.mjs                 (skipped: no Chromium)
//
// Needs Debian's chromium (/usr/bin/chromium, or LUAMCP_CHROMIUM), the npm
// packages of tests/package.json, and LUAMCP_BIN (default build/luamcp).
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { JITLESS, makeExtApps } from '../apps/appclass/make-ext-apps.mjs';
import { APPS, ms } from '../integration/helpers.mjs';
import {
  CHROMIUM,
  DEFAULT_CSP,
  McpHost,
  WAIT,
  haveChromium,
  hostContext,
  openBrowser,
  openHostPage,
  screenshot,
  startWeb,
  viewFrame,
  viewFrameHandle,
  within,
} from './harness.mjs';

// Run directly (as ctest does) without Chromium: exit 77, ctest's "skipped".
// Under `node --test` the suite is skipped instead.
if (!haveChromium() && !process.env.NODE_TEST_CONTEXT) {
  console.log(`SKIP browser.appclass: ${CHROMIUM} not found (Debian: apt-get install chromium)`);
  process.exit(77);
}

const opts = { timeout: ms(120_000) };
const skip = haveChromium() ? false : `Chromium not found (${CHROMIUM}: apt-get install chromium)`;
const APP = path.join(APPS, 'appclass');
const VIEW = 'ui://appclass/tally.html';
const APP_INFO = { name: 'Tally (App class)', version: '1.2.3' };
const AS_README = process.env.LUAMCP_APPCLASS_RECIPE === 'readme';

/** No console error, page error, CSP violation or bridge warning in any frame. */
function assertHealthy(session, web) {
  assert.deepEqual(session.pageErrors, [], 'uncaught exceptions in the page');
  assert.deepEqual(session.consoleErrors, [], 'console errors (CSP violations among them)');
  assert.deepEqual(
    session.consoleWarnings.filter((w) => /ext-apps|Content Security|CSP|unsafe-eval|handler/i.test(w)),
    [],
    'warnings of the App class, the bridge or the CSP',
  );
  assert.deepEqual(web.dropped, [], 'declared CSP domains the host had to drop');
}

/** What the page went through, for failure messages. */
function diagnostics(session) {
  return (
    `\n  console errors: ${JSON.stringify(session.consoleErrors)}` +
    `\n  page errors: ${JSON.stringify(session.pageErrors)}` +
    `\n  console warnings: ${JSON.stringify(session.consoleWarnings)}`
  );
}

describe('a view on the official App class of @modelcontextprotocol/ext-apps, inlined by luamcp', { skip }, () => {
  let dir; // the temp copy of tests/apps/appclass, with widgets/ext-apps.js
  let ext; // {file, names, bytes} of the generated ext-apps.js
  let web;
  let browser;
  let host;
  let view; // {html, ui} from resources/read
  let session;
  let frame; // the view's Frame (evaluate, waitForFunction)

  /** Wait until #id of the view shows exactly text (checked by Chromium on every frame). */
  async function untilText(id, text) {
    try {
      await frame.waitForFunction(
        ([i, t]) => document.getElementById(i)?.textContent === t,
        [id, text],
        { timeout: WAIT },
      );
    } catch (err) {
      const now = await frame.evaluate(() => ({
        status: document.getElementById('status')?.textContent,
        label: document.getElementById('label')?.textContent,
        count: document.getElementById('count')?.textContent,
        served: document.getElementById('served')?.textContent,
        seen: window.appclass ? { results: window.appclass.results.length, errors: window.appclass.errors } : null,
      })).catch((e) => `unreadable: ${e.message}`);
      err.message += `\n  waiting for #${id} = ${JSON.stringify(text)}; the view shows ${JSON.stringify(now)}${diagnostics(session)}`;
      throw err;
    }
  }

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'luamcp-appclass-'));
    await cp(APP, dir, { recursive: true });
    ext = await makeExtApps(dir, { jitless: !AS_README });
    web = await startWeb();
    browser = await openBrowser();
    host = await McpHost.connect(dir);
  });

  after(async () => {
    try {
      await browser?.close();
      await web?.close();
      await host?.close();
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  });

  test('resources/read: ext-apps.js (window.McpApps), the module script and the stylesheet are inline', opts, async () => {
    assert.ok(ext.names.includes('App') && ext.names.includes('PostMessageTransport'), `exported: ${ext.names}`);
    const js = await readFile(ext.file, 'utf8');
    assert.match(js.slice(-4000), /window\.McpApps=\{[^}]*\bApp:[\w$]+[^}]*\};\s*$/, 'the export became window.McpApps');
    assert.doesNotMatch(js.slice(-4000), /export\s*\{/);
    assert.equal(js.startsWith(JITLESS), !AS_README, "zod's jitless first (unless the README recipe is asked for)");

    assert.equal(host.uiResourceUri('tally'), VIEW);
    assert.deepEqual(McpHost.visibility(host.tool('bump')), ['app']);
    assert.deepEqual(host.modelTools().map((t) => t.name), ['tally'], 'bump is for the view only');

    view = await host.readUi(VIEW);
    assert.equal(view.ui.csp, undefined, 'no domains declared: the spec default CSP applies');
    assert.equal(view.ui.prefersBorder, true);
    const { html } = view;
    assert.doesNotMatch(html, /(src|href)="inline:/, 'every inline: include was replaced');
    // the whole generated file, as the body of a module script
    const at = html.indexOf(js);
    assert.ok(at > 0, 'ext-apps.js is not in the served HTML as written');
    assert.match(html.slice(0, at), /<script type="module">\n$/, 'ext-apps.js is not in a <script type="module">');
    assert.match(html.slice(at + js.length), /^\n<\/script>\n<script type="module">\n\s*const \$ =/, 'the view module follows it');
    assert.ok(html.length > ext.bytes / 2, 'the HTML holds the library');
    const css = await readFile(path.join(dir, 'widgets', 'tally.css'), 'utf8');
    assert.ok(html.includes(`<style>\n${css}\n</style>`), 'tally.css is not inline as a <style>');
  });

  test('ui/initialize with the App class completes; the tool result renders', opts, async () => {
    assert.ok(view, 'needs the previous test');
    session = await openHostPage(browser.context, web, host);
    const { page } = session;
    await page.evaluate(() => {
      document.getElementById('user-text').textContent = 'How many apples?';
      document.getElementById('tool-line').textContent = 'Used Tally (tally)';
    });
    const call = host.callFromModel('tally', { label: 'apples', count: 3 });
    const init = await within(
      page.evaluate((p) => window.testHost.mount(p), {
        html: view.html,
        ui: view.ui,
        sandboxOrigin: web.sandboxOrigin,
        hostContext: hostContext({ theme: 'light', tool: host.tool('tally') }),
      }),
      WAIT,
      'ui/initialize + ui/notifications/initialized from the App class',
    ).catch((err) => {
      err.message += diagnostics(session);
      throw err;
    });
    assert.deepEqual(init.appInfo, APP_INFO, 'appInfo of ui/initialize: the App class spoke');
    assert.equal(web.csps.at(-1), DEFAULT_CSP, 'the sandbox proxy was served with the default CSP');
    frame = await viewFrameHandle(page);
    // the App learnt the host's name from the initialize result
    await untilText('status', 'connected to luamcp-test-host');
    assert.deepEqual(await frame.evaluate(() => window.appclass.host), { name: 'luamcp-test-host', version: '1.0.0' });

    const result = await call;
    assert.ok(!result.isError, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { label: 'apples', count: 3, served_by: 'Lua 5.4' });
    await page.evaluate((a) => window.testHost.toolInput(a), { label: 'apples', count: 3 });
    await page.evaluate((r) => window.testHost.toolResult(r), result);
    await untilText('status', 'tool result');
    assert.equal(await frame.locator('#label').textContent(), 'apples');
    assert.equal(await frame.locator('#count').textContent(), '3');
    assert.equal(await frame.locator('#served').textContent(), 'served by Lua 5.4');
    assert.deepEqual(await frame.evaluate(() => window.appclass.results), [result], 'ontoolresult got the result as sent');
    // the inlined stylesheet applies
    assert.equal(await frame.locator('#count').evaluate((e) => getComputedStyle(e).fontSize), '32px');
    await screenshot(viewFrame(page).locator('#tally'), 'appclass-result.png');
  });

  test("the button's callServerTool goes through the host to the server and its answer renders", opts, async () => {
    assert.ok(frame, 'needs the previous test');
    const press = async (from, to, nth) => {
      const n = host.serverCalls.length;
      await viewFrame(session.page).locator('#bump').click();
      const rec = await session.until(
        () => host.serverCalls.slice(n).find((c) => 'result' in c || 'error' in c),
        `the view's bump call (${from} -> ${to})`,
      );
      assert.equal(rec.from, 'app');
      assert.equal(rec.name, 'bump');
      assert.deepEqual(rec.arguments, { label: 'apples', count: from, by: 2 });
      assert.equal(rec.error, undefined, JSON.stringify(rec.error));
      assert.deepEqual(rec.result.structuredContent, { label: 'apples', count: to, served_by: 'Lua 5.4', bumps: nth });
      // the Lua handler ran: it logged the call
      await host.untilLog((l) => String(l.data) === `bump apples: ${from} + 2 (bump #${nth})`, `the server log of bump #${nth}`);
      await untilText('count', String(to));
      await untilText('status', 'bumped');
      assert.equal(await frame.locator('#served').textContent(), `served by Lua 5.4, bump #${nth}`);
      return rec;
    };
    const first = await press(3, 5, 1);
    await press(5, 7, 2);
    const answers = await frame.evaluate(() => window.appclass.answers);
    assert.equal(answers.length, 2);
    assert.deepEqual(answers[0], first.result, 'callServerTool resolved with the server result as relayed');
    assert.deepEqual(await frame.evaluate(() => window.appclass.errors), []);
    assert.deepEqual(host.refusals, [], 'the host refused nothing');
    await screenshot(viewFrame(session.page).locator('#tally'), 'appclass-bumped.png');
  });

  test('no CSP violation, console error or network use; ui/resource-teardown is answered', opts, async () => {
    assert.ok(session, 'needs the previous tests');
    assertHealthy(session, web);
    const urls = web.requests.map((r) => `${r.origin} ${r.url.split('?')[0]}`);
    assert.deepEqual([...new Set(urls)].sort(), ['host /', 'host /host.js', 'sandbox /sandbox.html'], 'the view fetched nothing');
    await within(session.page.evaluate(() => window.testHost.teardown()), WAIT, 'the answer to ui/resource-teardown');
    assert.equal(await session.page.locator('#sandbox').count(), 0);
    assertHealthy(session, web);
    await session.page.close();
  });
});
