// dev.test.mjs — the developer page (web/dev.html at /dev) in headless Chromium.
//
// A copy of the repository's app (scripts/, widgets/, app.lua) in a temp dir is
// served by `luamcp serve --http 127.0.0.1:<port> --dev <tmp>`; the page is
// driven as a person would: pick suggest_gifts, fill the form, run it, see the
// result and the gift board widget render its cards (and its heart button and
// "Tell me more" reach the host); then a new script is saved into the app and
// its tool shows up in the open page without a reload; then the page calls as
// made-up users (Mcp-Dev-As) and a scoped tool is listed only with its
// scope. No console errors.
// Screenshots: tests/out/dev.png (and dev-dark.png). SIGTERM ends the server,
// which must exit 0.
//
//   node tests/browser/dev.test.mjs          (exit 77 = skipped: no Chromium or playwright-core)
//   node --test tests/browser/dev.test.mjs
//
// LUAMCP_BIN (default build/luamcp), LUAMCP_CHROMIUM (default /usr/bin/chromium).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { CHROMIUM, CHROMIUM_FLAGS } from './chromium.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const BIN = path.resolve(REPO, process.env.LUAMCP_BIN || 'build/luamcp');
const OUT = path.join(REPO, 'tests', 'out');

// {=================================================== skip when the browser is missing
function skipReason() {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} not found (Debian: apt-get install -y chromium)`;
  try {
    createRequire(path.join(REPO, 'tests', 'package.json')).resolve('playwright-core');
  } catch {
    return 'playwright-core is not installed in tests/node_modules (npm ci --prefix tests)';
  }
  return null;
}
const SKIP = skipReason();
if (SKIP && !process.env.NODE_TEST_CONTEXT) {
  // run directly (as ctest does): exit 77, ctest's SKIP_RETURN_CODE
  console.log(`SKIP browser.dev: ${SKIP}`);
  process.exit(77);
}
// }===================================================

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function startServer(appDir, port) {
  const child = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`, '--dev', appDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stdout.on('data', (d) => { stderr += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, exited, log: () => stderr };
}

async function waitForPage(url, server, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    if (server.child.exitCode !== null) throw new Error(`the server exited early:\n${server.log()}`);
    try {
      const res = await fetch(url);
      if (res.status === 200) return res.text();
    } catch { /* not up yet */ }
    if (Date.now() > end) throw new Error(`${url} did not answer within ${ms} ms:\n${server.log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/** A screenshot of the page as it rests: the workspace at its top, no toast. */
async function shoot(page, name) {
  await page.evaluate(() => {
    document.getElementById('workspace').scrollTo(0, 0);
    document.querySelectorAll('.toast').forEach((el) => el.remove());
  });
  await page.mouse.move(0, 0);
  await page.waitForTimeout(300);
  await mkdir(OUT, { recursive: true });
  await page.screenshot({ path: path.join(OUT, name) });
}

/** A widget of our own, used only when the repository has no widgets/gift_board.html. */
const FALLBACK_WIDGET = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gift board (test)</title>
<style>body{font-family:sans-serif;margin:0;padding:12px} .card{border:1px solid #ccc;border-radius:8px;padding:8px;margin:6px 0}</style>
</head><body><div id="grid"></div>
<script src="luamcp:view.js"></script>
<script>
  window.mcpView.on("toolresult", function (r) {
    var gifts = (r.structuredContent && r.structuredContent.gifts) || [];
    var grid = document.getElementById("grid");
    grid.replaceChildren();
    gifts.forEach(function (g) {
      var c = document.createElement("article");
      c.className = "card";
      c.textContent = g.name + " $" + g.price;
      grid.appendChild(c);
    });
  });
</script></body></html>
`;

const NEW_TOOL = `-- written by dev.test.mjs while the page is open
local mcp = require "mcp"

mcp.tool {
  name = "echo_text",
  title = "Echo",
  description = "Repeats a text a few times.",
  input = {
    text = mcp.string { description = "What to repeat" },
    times = mcp.integer { min = 1, max = 5, default = 2, description = "How many times" },
    shout = mcp.boolean { optional = true, description = "Upper-case it" },
  },
  handler = function(args)
    local s = args.shout and args.text:upper() or args.text
    return (s .. " "):rep(args.times):sub(1, -2)
  end,
}
`;

test('the developer page: forms, results, a widget, hot reload', { skip: SKIP || false, timeout: 150_000 }, async (t) => {
  assert.ok(existsSync(BIN), `${BIN} not found: build first (cmake --build build)`);
  const require = createRequire(path.join(REPO, 'tests', 'package.json'));
  const { chromium } = require('playwright-core');

  // {=== a copy of the repository's app
  const appDir = await mkdtemp(path.join(tmpdir(), 'luamcp-dev-'));
  const profile = await mkdtemp(path.join(tmpdir(), 'luamcp-dev-chromium-'));
  await cp(path.join(REPO, 'scripts'), path.join(appDir, 'scripts'), { recursive: true });
  if (existsSync(path.join(REPO, 'app.lua'))) await cp(path.join(REPO, 'app.lua'), path.join(appDir, 'app.lua'));
  if (existsSync(path.join(REPO, 'widgets'))) await cp(path.join(REPO, 'widgets'), path.join(appDir, 'widgets'), { recursive: true });
  const ownWidget = !existsSync(path.join(appDir, 'widgets', 'gift_board.html'));
  if (ownWidget) {
    await mkdir(path.join(appDir, 'widgets'), { recursive: true });
    await writeFile(path.join(appDir, 'widgets', 'gift_board.html'), FALLBACK_WIDGET);
    t.diagnostic('widgets/gift_board.html is missing from the repository: using a small widget of the test');
  }
  // }===

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = startServer(appDir, port);
  let context;
  try {
    const html = await waitForPage(`${base}/dev`, server);
    assert.match(html, /<title>luamcp dev<\/title>/, '/dev serves web/dev.html');

    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1440, height: 1000 },
      colorScheme: 'light',
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const problems = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console (${msg.location().url || 'page'}): ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));

    await page.goto(`${base}/dev`);
    await page.evaluate(() => localStorage.clear());
    await page.reload();

    // {=== the tool list
    const giftsItem = page.locator('[data-tool="suggest_gifts"]');
    await giftsItem.waitFor({ timeout: 15000 });
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 15000 });
    assert.match(await giftsItem.innerText(), /widget/, 'suggest_gifts has the widget badge');
    const shortlist = page.locator('[data-tool="shortlist_gift"]');
    if (await shortlist.count()) assert.match(await shortlist.innerText(), /app-only/, 'shortlist_gift has the app-only badge');
    // }===

    // {=== suggest_gifts: the form, the result, the widget
    await giftsItem.click();
    await page.locator('#tool-name', { hasText: 'suggest_gifts' }).waitFor();
    const occasion = page.locator('#fields [name="occasion"]');
    assert.equal(await occasion.evaluate((el) => el.tagName), 'SELECT', 'an enum is a select');
    assert.match(await page.locator('[data-field="occasion"]').innerText(), /required/);
    assert.match(await page.locator('[data-field="recipient"]').innerText(), /optional/);
    assert.equal(await page.locator('#fields [name="budget"]').getAttribute('type'), 'number');
    assert.equal(await page.locator('#fields [name="budget"]').getAttribute('min'), '0');
    await occasion.selectOption({ label: 'birthday' });
    await page.locator('#fields [name="budget"]').fill('50');
    await page.locator('#run').click();

    const result = page.locator('#result');
    await result.locator('.pill', { hasText: 'ok' }).waitFor({ timeout: 15000 });
    const resultText = await result.innerText();
    assert.match(resultText, /3 gift ideas/, 'the text content');
    assert.match(resultText, /structuredContent/, 'structuredContent is shown');
    assert.match(resultText, /Board game: Catan/);

    const frameEl = page.locator('#frame-wrap iframe');
    await frameEl.waitFor({ timeout: 15000 });
    assert.equal(await frameEl.getAttribute('sandbox'), 'allow-scripts', 'sandboxed, without allow-same-origin');
    const srcdoc = await frameEl.getAttribute('srcdoc');
    const metaAt = srcdoc.search(/<meta http-equiv="Content-Security-Policy"/);
    assert.ok(metaAt > 0, 'a CSP <meta> is injected');
    assert.ok(metaAt < srcdoc.search(/<script/i), 'the CSP comes before any script');
    assert.ok(metaAt < srcdoc.search(/<\/head>/i), 'the CSP is in <head>');
    assert.match(srcdoc.slice(metaAt, metaAt + 300), /default-src 'none'/);

    const view = page.frameLocator('#frame-wrap iframe');
    const cards = view.locator('.card');
    await cards.first().waitFor({ timeout: 15000 });
    assert.equal(await cards.count(), 3, 'three gift cards for a birthday under $50');
    assert.match(await cards.first().innerText(), /Catan|Dice|tea/i);
    await page.locator('#widget-status', { hasText: 'ready' }).waitFor();
    // the frame follows the view's ui/notifications/size-changed
    await page.waitForFunction(() => document.querySelector('#frame-wrap iframe').getBoundingClientRect().height > 250,
      null, { timeout: 10000 });

    if (!ownWidget) {
      // the heart: shortlist_gift (an app-only tool) goes through the host
      await view.locator('.card .heart').first().click();
      await page.locator('#view-log .entry', { hasText: 'shortlist_gift' }).first()
        .locator('.outcome', { hasText: 'Shortlist' }).waitFor({ timeout: 10000 });
      await page.locator('#view-log .entry', { hasText: 'model context' }).first().waitFor({ timeout: 10000 });
      // "Tell me more": ui/message reaches the side log
      await view.locator('.card .ask').first().click();
      await page.locator('#view-log .entry', { hasText: 'ui/message' }).first().waitFor({ timeout: 10000 });
      assert.match(await page.locator('#view-log').innerText(), /Tell me more about the/);
    }
    // the server's log notification of the call
    await page.locator('#server-log .entry', { hasText: 'looking for birthday gifts' }).first().waitFor({ timeout: 10000 });

    // }===

    // {=== saving the widget's file renders it again (resources/subscribe + updated)
    if (!ownWidget) {
      const board = path.join(appDir, 'widgets', 'gift_board.html');
      const source = await readFile(board, 'utf8');
      await writeFile(board, source.replace('<title>Gift board</title>', '<title>Gift board (edited)</title>'));
      await page.locator('#view-log .entry', { hasText: "The widget's file changed" }).first().waitFor({ timeout: 20000 });
      await page.locator('#view-log .entry', { hasText: 'Gift board (edited)' }).first().waitFor({ timeout: 15000 });
      await view.locator('.card').first().waitFor({ timeout: 15000 });
      assert.equal(await view.locator('.card').count(), 3, 'the reloaded view got the same input and result');
    }
    // }===

    await shoot(page, 'dev.png');

    // {=== the theme reaches the view
    await page.locator('#theme').click();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    await view.locator('html[data-theme="dark"]').waitFor({ timeout: 5000 });
    await shoot(page, 'dev-dark.png');
    await page.locator('#theme').click();
    await view.locator('html[data-theme="light"]').waitFor({ timeout: 5000 });
    // }===

    // {=== a new script appears without a page reload
    await page.evaluate(() => { window.__stillTheSamePage = 42; });
    await writeFile(path.join(appDir, 'scripts', 'zz_echo.lua'), NEW_TOOL);
    const echoItem = page.locator('[data-tool="echo_text"]');
    await echoItem.waitFor({ timeout: 20000 });
    assert.equal(await page.evaluate(() => window.__stillTheSamePage), 42, 'the page was not reloaded');
    assert.match(await page.locator('#server-log').innerText(), /added echo_text/);
    await echoItem.click();
    await page.locator('#tool-name', { hasText: 'echo_text' }).waitFor();
    assert.equal(await page.locator('#fields [name="times"]').inputValue(), '2', 'the default is prefilled');
    assert.equal(await page.locator('#fields [name="shout"]').evaluate((el) => el.tagName), 'SELECT', 'an optional boolean can stay unset');
    assert.equal(await page.locator('#widget').isHidden(), true, 'no widget for a tool without one');
    await page.locator('#view-log .entry', { hasText: 'ui/resource-teardown answered' }).first().waitFor({ timeout: 5000 });
    await page.locator('#fields [name="text"]').fill('hi');
    await page.locator('#run').click();
    await result.locator('.text-block', { hasText: 'hi hi' }).waitFor({ timeout: 10000 });
    // a business failure is shown as isError
    await page.locator('#fields [name="times"]').fill('9');
    await page.locator('#run').click();
    await result.locator('.pill', { hasText: 'isError' }).waitFor({ timeout: 10000 });
    assert.match(await result.innerText(), /times/);
    // }===

    // {=== back to suggest_gifts: its last result and widget come back
    await giftsItem.click();
    await view.locator('.card').first().waitFor({ timeout: 15000 });
    assert.equal(await view.locator('.card').count(), 3);
    // }===

    // {=== a made-up caller: a scoped tool is listed only with its scope
    await writeFile(path.join(appDir, 'scripts', 'zz_admin.lua'),
      'require("mcp").tool { name = "admin_only", description = "For admins.", scopes = { "admin" },\n' +
      '  handler = function(_, ctx) return "hello " .. tostring(ctx.auth and ctx.auth.subject) end }\n');
    await page.locator('[data-tool="admin_only"]').waitFor({ timeout: 20000 }); // anyone: scopes do not apply
    const callAs = async (subject, scopes) => {
      await page.locator('#caller-text').click();
      await page.locator('#caller-subject').fill(subject);
      await page.locator('#caller-scopes').fill(scopes);
      await Promise.all([page.waitForNavigation(), page.locator('#caller-form button').click()]);
      await page.locator('#conn[data-state="live"]').waitFor({ timeout: 15000 });
    };
    await callAs('ada', 'notes:read');
    assert.match(await page.locator('#caller-text').innerText(), /ada \[notes:read\]/);
    await giftsItem.waitFor({ timeout: 15000 });
    assert.equal(await page.locator('[data-tool="admin_only"]').count(), 0, 'a caller without admin lists admin_only');
    await callAs('ada', 'admin');
    await page.locator('[data-tool="admin_only"]').click();
    await page.locator('#run').click();
    await result.locator('.text-block', { hasText: 'hello ada' }).waitFor({ timeout: 10000 });
    await callAs('', '');
    assert.match(await page.locator('#caller-text').innerText(), /anyone/);
    // }===

    assert.deepEqual(problems, [], 'no console errors');

    // {=== SIGTERM with the page (and its event stream) still open
    server.child.kill('SIGTERM');
    const exit = await within(server.exited, 20000, 'the server to exit after SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, `the server's exit\n${server.log()}`);
    await page.locator('#conn:not([data-state="live"])').waitFor({ timeout: 10000 });
    // }===
  } finally {
    if (context) await context.close().catch(() => {});
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    await rm(appDir, { recursive: true, force: true });
    await rm(profile, { recursive: true, force: true });
  }
});
