// widget.test.mjs — MCP Apps views in headless Chromium, in a host built on
// the official AppBridge (see harness.mjs and host/): the example app's gift
// board (widgets/gift_board.html) and the test app tests/apps/widgets.
//
//   node --test tests/browser/widget.test.mjs      (from the repo root)
//
// Needs Debian's chromium (/usr/bin/chromium, or LUAMCP_CHROMIUM) and the npm
// packages of tests/package.json. Screenshots land in tests/out/browser/.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { APPS, REPO_ROOT, ms } from '../integration/helpers.mjs';
import {
  DEFAULT_CSP,
  HostRefusal,
  McpHost,
  cspOf,
  haveChromium,
  hostContext,
  openBrowser,
  openHostPage,
  screenshot,
  startWeb,
  viewFrame,
  viewFrameHandle,
} from './harness.mjs';

const opts = { timeout: ms(120_000) };
const skip = haveChromium() ? false : 'Chromium not found (/usr/bin/chromium: apt-get install chromium)';
const BOARD = 'ui://gifts/board.html';
const ASK = { occasion: 'wedding', budget: 150, recipient: 'Sam and Alex' };

/** The names on the board's cards, in order (skeletons left out). */
async function cardNames(frame) {
  return frame.locator('.card:not(.skeleton) .name').allTextContents();
}

/** Wait until the board shows exactly these names. */
async function untilNames(frame, names) {
  await frame.locator('.card:not(.skeleton)').first().waitFor();
  const deadline = Date.now() + ms(10_000);
  let got;
  while (Date.now() < deadline) {
    got = await cardNames(frame);
    if (JSON.stringify(got) === JSON.stringify(names)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(got, names, 'the cards on the board');
}

function namesOf(result) {
  return result.structuredContent.gifts.map((g) => g.name);
}

/** No console error, page error, CSP violation or early message in any frame. */
function assertHealthy(session, web) {
  assert.deepEqual(session.pageErrors, [], 'uncaught exceptions in the page');
  assert.deepEqual(session.consoleErrors, [], 'console errors (CSP violations among them)');
  assert.deepEqual(
    session.consoleWarnings.filter((w) => /ext-apps|Content Security|CSP/i.test(w)),
    [],
    'warnings of the bridge or the CSP',
  );
  assert.deepEqual(web.dropped, [], 'declared CSP domains the host had to drop');
}

// {=================================================== the gift board

describe('the gift board (widgets/gift_board.html) in a host built on AppBridge', { skip }, () => {
  let web;
  let browser;
  let host;
  let board; // {html, ui} from resources/read
  let session; // the page showing the board
  let frame; // the board's frame (FrameLocator)
  let firstResult;

  /** Mount the board in page's host with a host context of these options
      (see hostContext); resolves with the view's ui/initialize. */
  const mountBoard = (page, context) =>
    page.evaluate((p) => window.testHost.mount(p), {
      html: board.html,
      ui: board.ui,
      sandboxOrigin: web.sandboxOrigin,
      hostContext: hostContext(context),
    });

  before(async () => {
    web = await startWeb();
    browser = await openBrowser();
    host = await McpHost.connect(REPO_ROOT);
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    await host?.close();
  });

  test('the host finds the board: tool metadata, visibility, resources/read', opts, async () => {
    assert.equal(host.uiResourceUri('suggest_gifts'), BOARD);
    const all = host.tools.map((t) => t.name).sort();
    assert.deepEqual(all, ['shortlist_gift', 'suggest_gifts'], 'a UI client sees the app-only tool too');
    assert.deepEqual(McpHost.visibility(host.tool('shortlist_gift')), ['app']);
    // what the model gets from the host: no app-only tool
    assert.deepEqual(host.modelTools().map((t) => t.name), ['suggest_gifts']);
    // and the model cannot call it: the host refuses before the server sees it
    await assert.rejects(host.callFromModel('shortlist_gift', { id: 'tea' }), HostRefusal);
    assert.deepEqual(host.refusals, [{ from: 'model', name: 'shortlist_gift' }]);
    assert.equal(host.serverCalls.length, 0);

    board = await host.readUi(BOARD);
    assert.equal(board.ui.prefersBorder, true);
    assert.equal(board.ui.csp, undefined, 'the board declares no domains: the default CSP applies');
    assert.match(board.html, /^<!doctype html>/i);
    assert.doesNotMatch(board.html, /<script[^>]*luamcp:view\.js[^>]*><\/script>/, 'the view helper is inlined');
    assert.match(board.html, /window\.mcpView = view;/);
  });

  test('ui/initialize completes; tool input and result render the gifts as cards', opts, async () => {
    assert.ok(board, 'needs the previous test');
    session = await openHostPage(browser.context, web, host);
    const { page } = session;
    frame = viewFrame(page);
    await page.evaluate(() => {
      document.getElementById('user-text').textContent = 'Wedding gift ideas for Sam and Alex? Up to $150.';
      document.getElementById('tool-line').textContent = 'Used Gift ideas (suggest_gifts)';
    });
    // the agent's tools/call goes out while the view initializes
    const call = host.callFromModel('suggest_gifts', ASK);
    const init = await mountBoard(page, { theme: 'light', tool: host.tool('suggest_gifts') });
    assert.equal(init.appInfo.name, 'Gift board', 'appInfo of ui/initialize');
    assert.deepEqual(init.appCapabilities.availableDisplayModes, ['inline']);
    assert.equal(web.csps.at(-1), DEFAULT_CSP, 'the sandbox was served with the default CSP');
    assert.equal(await frame.locator('html').getAttribute('data-theme'), 'light', 'the view applied the host context');

    // streaming arguments: a skeleton while the model writes them
    await page.evaluate(() => window.testHost.toolInputPartial({ occasion: 'wedding' }));
    await frame.locator('.card.skeleton').first().waitFor();
    assert.equal(await frame.locator('.card.skeleton').count(), 3);
    assert.equal(await frame.locator('h1').textContent(), 'Gift ideas for a wedding');
    await screenshot(page.locator('#chat'), 'gift-board-loading.png');

    await page.evaluate((a) => window.testHost.toolInput(a), ASK);
    firstResult = await call;
    assert.ok(!firstResult.isError);
    assert.match(firstResult.content[0].text, /^5 gift ideas for Sam and Alex:\n- /, 'text content for hosts without UI');
    await page.evaluate((r) => window.testHost.toolResult(r), firstResult);
    const expected = namesOf(firstResult);
    assert.deepEqual(expected, [
      'Loose-leaf tea sampler',
      'Engraved photo frame',
      "Chef's knife",
      'Dinner for two voucher',
      'Potted olive tree',
    ]);
    await untilNames(frame, expected);
    assert.equal(await frame.locator('.card .price').first().textContent(), '$28');
    assert.equal(await frame.locator('#count').textContent(), '5 ideas');
    assert.match(await frame.locator('#subtitle').textContent(), /Up to \$150, for Sam and Alex/);
    assert.equal(await frame.locator('#budget').inputValue(), '150');
    assert.equal(await frame.locator('.card .art svg').count(), 5, 'a picture per gift');
    // the view told the host its size and the host followed
    await session.until(() => session.eventsOf('size').some((s) => s.height > 400), 'a size-changed of the board');
    const box = await page.locator('#sandbox').boundingBox();
    assert.ok(box.height > 400, `iframe height ${box.height}`);
  });

  test('the budget slider: the view calls suggest_gifts through the host and re-renders', opts, async () => {
    assert.ok(frame, 'needs the previous test');
    const before = await cardNames(frame);
    const slide = async (budget) => {
      const n = host.serverCalls.length;
      await frame.locator('#budget').fill(String(budget));
      const rec = await session.until(
        () => host.serverCalls.slice(n).find((c) => c.from === 'app' && c.name === 'suggest_gifts' && 'result' in c),
        `the view's suggest_gifts call for $${budget}`,
      );
      assert.deepEqual(rec.arguments, { occasion: 'wedding', budget, recipient: 'Sam and Alex' });
      return rec.result;
    };

    const at60 = await slide(60);
    assert.ok(!at60.isError);
    // the server ran it: its handler logged the call
    await host.untilLog((l) => /wedding gifts up to \$60\b/.test(String(l.data)), 'the server log of the $60 call');
    const names60 = namesOf(at60);
    assert.deepEqual(names60, ['Loose-leaf tea sampler', 'Engraved photo frame', 'Potted olive tree']);
    await untilNames(frame, names60);
    assert.notDeepEqual(names60, before);
    assert.match(await frame.locator('#subtitle').textContent(), /Up to \$60/);
    assert.equal(await frame.locator('#count').textContent(), '3 ideas');

    // too small a budget: the tool says "No wedding gifts fit…" (isError); a friendly empty state
    const at20 = await slide(20);
    assert.equal(at20.isError, true);
    assert.match(at20.content[0].text, /^No wedding gifts fit/);
    await frame.locator('#notice').waitFor();
    assert.equal(await frame.locator('.card').count(), 0);
    assert.equal(await frame.locator('#notice-title').textContent(), 'Nothing fits $20 yet');
    assert.match(await frame.locator('#notice-text').textContent(), /no wedding gifts at this price/);
    await screenshot(session.page.locator('#chat'), 'gift-board-empty.png');

    // its button raises the budget: one more call from the view
    const n = host.serverCalls.length;
    await frame.locator('#notice-action').click();
    const raised = await session.until(
      () => host.serverCalls.slice(n).find((c) => c.from === 'app' && 'result' in c),
      'the call of the empty state button',
    );
    assert.equal(raised.arguments.budget, 45);
    await untilNames(frame, namesOf(raised.result));
    assert.equal(await frame.locator('#budget').inputValue(), '45');

    await untilNames(frame, namesOf(await slide(150)));
  });

  test('the heart calls the app-only shortlist_gift from the view; the model may not', opts, async () => {
    assert.ok(frame, 'needs the previous test');
    const heart = frame.locator('.card[data-id="plant"] .heart');
    assert.equal(await heart.getAttribute('aria-pressed'), 'false');
    await heart.click();
    const rec = await session.until(
      () => host.serverCalls.find((c) => c.name === 'shortlist_gift' && 'result' in c),
      'the shortlist_gift call',
    );
    assert.equal(rec.from, 'app');
    assert.deepEqual(rec.arguments, { id: 'plant', on: true });
    assert.deepEqual(rec.result.structuredContent, { shortlist: ['plant'] });
    await frame.locator('.card[data-id="plant"] .heart[aria-pressed="true"]').waitFor();
    await frame.locator('#footer').waitFor();
    assert.match(await frame.locator('#footer').textContent(), /1 shortlisted:\s*Potted olive tree/);
    // the view keeps the model informed (ui/update-model-context)
    const ctx = await session.until(
      () => session.eventsOf('model-context').find((c) => /Shortlisted: Potted olive tree/.test(c.content?.[0]?.text)),
      'ui/update-model-context with the shortlist',
    );
    assert.equal(ctx.content[0].type, 'text');

    // a second gift, then off again
    await frame.locator('.card[data-id="tea"] .heart').click();
    await frame.locator('.card[data-id="tea"] .heart[aria-pressed="true"]').waitFor();
    await frame.locator('.card[data-id="plant"] .heart').click();
    await frame.locator('.card[data-id="plant"] .heart[aria-pressed="false"]').waitFor();
    // the heart flips at once (optimistic); wait for the server's answers
    await session.until(
      () => host.serverCalls.filter((c) => c.name === 'shortlist_gift' && 'result' in c).length >= 3,
      'three shortlist_gift answers',
    );
    const calls = host.serverCalls.filter((c) => c.name === 'shortlist_gift');
    assert.deepEqual(calls.map((c) => c.arguments), [
      { id: 'plant', on: true },
      { id: 'tea', on: true },
      { id: 'plant', on: false },
    ]);
    assert.ok(calls.every((c) => c.from === 'app'));
    assert.deepEqual(calls.at(-1).result.structuredContent, { shortlist: ['tea'] });
    await frame.locator('.card[data-id="plant"] .heart').click(); // for the screenshots: two hearts
    await frame.locator('.card[data-id="plant"] .heart[aria-pressed="true"]').waitFor();

    // the model still cannot call it, and never saw it
    await assert.rejects(host.callFromModel('shortlist_gift', { id: 'dice' }), /not available to the model/);
    assert.ok(!host.modelTools().some((t) => t.name === 'shortlist_gift'));
  });

  test('"Tell me more" sends a ui/message to the chat', opts, async () => {
    assert.ok(frame, 'needs the previous test');
    await frame.locator('.card[data-id="tea"] .ask').click();
    const msg = await session.until(() => session.eventsOf('message')[0], 'a ui/message at the host');
    assert.deepEqual(msg, {
      role: 'user',
      content: [{ type: 'text', text: 'Tell me more about the Loose-leaf tea sampler' }],
    });
    await frame.locator('.card[data-id="tea"] .ask.sent').waitFor();
    assert.match(await frame.locator('.card[data-id="tea"] .ask').textContent(), /Asked in chat/);
  });

  test('light and dark themes from the host context (screenshots)', opts, async () => {
    assert.ok(frame, 'needs the previous test');
    const { page } = session;
    await page.evaluate(() => {
      document.getElementById('assistant-text').textContent =
        'Here are five ideas for the wedding. The tea sampler and the olive tree are on your shortlist.';
    });
    // wait for the "Asked in chat" confirmation to go back
    await frame.locator('.ask.sent').waitFor({ state: 'detached', timeout: ms(6000) });
    await page.mouse.move(0, 0);
    await screenshot(page.locator('#chat'), 'gift-board-light.png');
    const lightBg = await frame.locator('body').evaluate((b) => getComputedStyle(b).backgroundColor);

    await page.evaluate(() => window.testHost.setHostContext({ theme: 'dark' }));
    await frame.locator('html[data-theme="dark"]').waitFor();
    const darkBg = await frame.locator('body').evaluate((b) => getComputedStyle(b).backgroundColor);
    assert.equal(lightBg, 'rgb(255, 255, 255)', 'light: --color-background-primary of the host');
    assert.equal(darkBg, 'rgb(48, 48, 46)', 'dark: the same light-dark() variable, resolved dark');
    await screenshot(page.locator('#chat'), 'gift-board-dark.png');
    await page.evaluate(() => window.testHost.setHostContext({ theme: 'light' }));
    await frame.locator('html[data-theme="light"]').waitFor();
  });

  test('no CSP violation, no console error, no network use; teardown is answered', opts, async () => {
    assert.ok(session, 'needs the previous tests');
    assertHealthy(session, web);
    // the view fetched nothing: the only requests are the host page and the proxy
    const urls = web.requests.map((r) => `${r.origin} ${r.url.split('?')[0]}`);
    assert.deepEqual([...new Set(urls)].sort(), ['host /', 'host /host.js', 'sandbox /sandbox.html']);
    await session.page.evaluate(() => window.testHost.teardown());
    assert.equal(await session.page.locator('#sandbox').count(), 0);
    assertHealthy(session, web);
    await session.page.close();
  });

  test('narrow container, dark theme: one column, nothing overflows', opts, async () => {
    assert.ok(firstResult, 'needs the render test');
    const narrow = await openHostPage(browser.context, web, host, { viewport: { width: 420, height: 900 } });
    const { page } = narrow;
    await page.evaluate(() => {
      document.documentElement.dataset.theme = 'dark';
      document.documentElement.style.setProperty('--chat-width', '400px');
      document.getElementById('user-text').textContent = 'Wedding gift ideas for Sam and Alex? Up to $150.';
    });
    await mountBoard(page, { theme: 'dark', width: 360, tool: host.tool('suggest_gifts') });
    await page.evaluate((a) => window.testHost.toolInput(a), ASK);
    await page.evaluate((r) => window.testHost.toolResult(r), firstResult);
    const f = viewFrame(page);
    await untilNames(f, namesOf(firstResult));
    const xs = await f.locator('.card').evaluateAll((cards) => cards.map((c) => c.getBoundingClientRect().left));
    assert.equal(new Set(xs).size, 1, `one column (card x: ${xs})`);
    const overflow = await f.locator('html').evaluate((h) => h.scrollWidth - h.clientWidth);
    assert.equal(overflow, 0, 'no horizontal scrolling');
    await narrow.until(() => narrow.eventsOf('size').some((s) => s.height > 500), 'the size of the narrow board');
    await screenshot(page.locator('#chat'), 'gift-board-narrow-dark.png');
    assertHealthy(narrow, web);
    await page.close();
  });

  test('without host style variables the fallbacks hold, light and dark', opts, async () => {
    assert.ok(firstResult, 'needs the render test');
    const plain = await openHostPage(browser.context, web, host);
    const { page } = plain;
    await mountBoard(page, { theme: 'light', styles: false });
    await page.evaluate((a) => window.testHost.toolInput(a), ASK);
    await page.evaluate((r) => window.testHost.toolResult(r), firstResult);
    const f = viewFrame(page);
    await untilNames(f, namesOf(firstResult));
    const bg = () => f.locator('body').evaluate((b) => getComputedStyle(b).backgroundColor);
    assert.equal(await bg(), 'rgb(255, 255, 255)');
    await screenshot(page.locator('#chat'), 'gift-board-fallback-light.png');
    await page.evaluate(() => window.testHost.setHostContext({ theme: 'dark' }));
    await f.locator('html[data-theme="dark"]').waitFor();
    assert.equal(await bg(), 'rgb(31, 31, 30)');
    await screenshot(page.locator('#chat'), 'gift-board-fallback-dark.png');
    assertHealthy(plain, web);
    await page.close();
  });

  test('a cancelled call shows that it was cancelled', opts, async () => {
    assert.ok(board, 'needs the first test');
    const s = await openHostPage(browser.context, web, host);
    const { page } = s;
    await mountBoard(page, { theme: 'light' });
    await page.evaluate((a) => window.testHost.toolInput(a), { occasion: 'anniversary', budget: 80 });
    const f = viewFrame(page);
    assert.equal(await f.locator('h1').textContent(), 'Gift ideas for an anniversary');
    await f.locator('.card.skeleton').first().waitFor();
    await page.evaluate(() => window.testHost.toolCancelled('The user stopped the answer'));
    await f.locator('#notice').waitFor();
    assert.equal(await f.locator('#notice-title').textContent(), 'The request was cancelled');
    assert.equal(await f.locator('#notice-text').textContent(), 'The user stopped the answer');
    assert.equal(await f.locator('.card').count(), 0);
    assertHealthy(s, web);
    await page.close();
  });

  // size-changed must follow the content both ways: with a maxHeight the view
  // sizes itself and the host follows size-changed (mcp-apps.md, "Container sizing")
  test('the frame follows the board when its content shrinks (ui/notifications/size-changed)', opts, async () => {
    assert.ok(firstResult, 'needs the render test');
    const s = await openHostPage(browser.context, web, host);
    const { page } = s;
    await mountBoard(page, { theme: 'light', tool: host.tool('suggest_gifts') });
    await page.evaluate((a) => window.testHost.toolInput(a), ASK);
    await page.evaluate((r) => window.testHost.toolResult(r), firstResult);
    const f = viewFrame(page);
    await untilNames(f, namesOf(firstResult));
    await s.until(() => s.eventsOf('size').some((e) => e.height > 600), 'the size of five cards');
    const tall = (await page.locator('#sandbox').boundingBox()).height;
    const seen = s.eventsOf('size').length;
    await f.locator('#budget').fill('20'); // nothing fits: the empty state is much shorter
    await f.locator('#notice').waitFor();
    const content = await f.locator('#board').evaluate((b) => Math.ceil(b.getBoundingClientRect().height));
    assert.ok(content < tall - 150, `the empty board is ${content}px high, the frame ${tall}px`);
    const sizes = () => s.eventsOf('size').slice(seen).map((e) => e.height);
    await s
      .until(() => sizes().some((h) => h <= content + 2), 'a size-changed with the smaller height', ms(3000))
      .catch((err) => {
        err.message +=
          ` — size-changed heights sent since the budget moved: ${JSON.stringify(sizes())},` +
          ` before: ${JSON.stringify(s.eventsOf('size').slice(0, seen).map((e) => e.height))}; content now ${content}px`;
        throw err;
      });
    await page.close();
  });
});

// }===================================================

// {=================================================== visibility and CSP with the test app

describe('tests/apps/widgets: the host enforces visibility and the declared CSP', { skip }, () => {
  let web;
  let browser;
  let host;
  let session;
  let probe; // the view's Frame
  let ui;

  before(async () => {
    web = await startWeb();
    browser = await openBrowser();
    host = await McpHost.connect(path.join(APPS, 'widgets'));
  });

  after(async () => {
    await browser?.close();
    await web?.close();
    await host?.close();
  });

  test('the model side: app-only tools are not listed and are refused', opts, async () => {
    assert.deepEqual(host.modelTools().map((t) => t.name).sort(), ['both', 'model_only', 'plain', 'show_probe']);
    await assert.rejects(host.callFromModel('app_only', {}), HostRefusal);
    const ran = await host.callFromModel('model_only', {});
    assert.equal(ran.content[0].text, 'model_only ran');
    assert.deepEqual(host.serverCalls.map((c) => c.name), ['model_only'], 'the refused call never reached the server');
  });

  test('the probe view runs under a CSP built from its _meta.ui.csp', opts, async () => {
    const read = await host.readUi(host.uiResourceUri('show_probe'));
    ui = read.ui;
    assert.deepEqual(ui.csp, { connectDomains: ['http://127.0.0.1:*'], resourceDomains: ['https://cdn.example.org'] });
    session = await openHostPage(browser.context, web, host);
    const { page } = session;
    const call = host.callFromModel('show_probe', { text: 'hello' });
    const init = await page.evaluate((p) => window.testHost.mount(p), {
      html: read.html,
      ui,
      sandboxOrigin: web.sandboxOrigin,
      hostContext: hostContext({ theme: 'dark', tool: host.tool('show_probe') }),
    });
    assert.equal(init.appInfo.name, 'Probe');
    const policy = web.csps.at(-1);
    assert.equal(policy, cspOf(ui.csp).policy);
    assert.match(policy, /connect-src 'self' http:\/\/127\.0\.0\.1:\*;/);
    assert.match(policy, /script-src 'self' 'unsafe-inline' https:\/\/cdn\.example\.org;/);
    assert.match(policy, /frame-src 'none'; object-src 'none'; base-uri 'self'$/);
    // permissions -> the inner iframe's allow attribute
    assert.equal(await page.locator('#sandbox').contentFrame().locator('iframe').getAttribute('allow'), 'clipboard-write');

    probe = await viewFrameHandle(page);
    await page.evaluate(() => window.testHost.toolInput({ text: 'hello' }));
    await page.evaluate((r) => window.testHost.toolResult(r), await call);
    await probe.waitForFunction(() => window.probe.results.length === 1);
    assert.deepEqual(await probe.evaluate(() => window.probe.inputs), [{ text: 'hello' }]);
    assert.equal(await probe.locator('#status').textContent(), 'result: hello');
    const ctx = await probe.evaluate(() => window.probe.contexts[0]);
    assert.equal(ctx.theme, 'dark');
    assert.equal(ctx.toolInfo.tool.name, 'show_probe');
  });

  test('a view call to a model-only tool is refused; app-only and default tools are allowed', opts, async () => {
    assert.ok(probe, 'needs the previous test');
    const callFromView = (name) =>
      probe.evaluate(
        (n) =>
          window.mcpView.callTool(n, {}).then(
            (r) => ({ result: r }),
            (e) => ({ error: { code: e.code, message: e.message } }),
          ),
        name,
      );
    const before = host.serverCalls.length;
    const refused = await callFromView('model_only');
    assert.equal(refused.error?.code, -32602, JSON.stringify(refused));
    assert.match(refused.error.message, /not callable from an app/);
    const unknown = await callFromView('no_such_tool');
    assert.equal(unknown.error?.code, -32602);
    assert.deepEqual(host.serverCalls.slice(before), [], 'refused calls never reach the server');

    const app = await callFromView('app_only');
    assert.equal(app.result?.content?.[0]?.text, 'app_only ran', JSON.stringify(app));
    assert.deepEqual(app.result.structuredContent, { calls: 1 });
    const both = await callFromView('both');
    assert.equal(both.result?.content?.[0]?.text, 'both ran');
    const plain = await callFromView('plain');
    assert.equal(plain.result?.content?.[0]?.text, 'plain ran', 'no visibility means model and app');
    assert.deepEqual(
      host.serverCalls.slice(before).map((c) => `${c.from}:${c.name}`),
      ['app:app_only', 'app:both', 'app:plain'],
    );
    assert.deepEqual(host.refusals.filter((r) => r.from === 'app').map((r) => r.name), ['model_only', 'no_such_tool']);
  });

  test('the CSP is live: a declared origin is reachable, another is blocked and reported', opts, async () => {
    assert.ok(probe, 'needs the previous test');
    assertHealthy(session, web);
    const fetchFrom = (url) =>
      probe.evaluate((u) => fetch(u).then((r) => r.text()).catch((e) => `blocked: ${e.name}`), url);
    assert.equal(await fetchFrom(`${web.hostOrigin}/ping`), 'pong', 'connectDomains http://127.0.0.1:* allows it');
    const other = web.hostOrigin.replace('127.0.0.1', 'localhost');
    assert.equal(await fetchFrom(`${other}/ping`), 'blocked: TypeError');
    await session.until(
      () => session.consoleErrors.some((e) => /CSP violation: connect-src blocked http:\/\/localhost:/.test(e)),
      'the violation reported by the sandbox',
    );
    assert.ok(!web.requests.some((r) => r.url === '/ping' && r.origin === 'sandbox'));
    assert.equal(web.requests.filter((r) => r.url === '/ping').length, 1, 'only the allowed fetch reached a server');
    session.consoleErrors = session.consoleErrors.filter((e) => !/localhost/.test(e));
    assertHealthy(session, web);
    await session.page.evaluate(() => window.testHost.teardown());
    await session.page.close();
  });
});

// }===================================================
