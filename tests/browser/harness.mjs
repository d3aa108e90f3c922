// harness.mjs — the Node half of the test host for MCP Apps views.
//
//   McpHost        the host's side of one server connection (the official SDK
//                  Client over stdio to `luamcp serve`): lists tools, reads
//                  ui:// resources, and enforces visibility both ways (the
//                  model sees and calls only tools whose visibility has
//                  "model"; a view calls only tools whose visibility has "app").
//   startWeb       two HTTP servers on 127.0.0.1, two origins: the host page
//                  (with host-page.js bundled by esbuild) and the sandbox proxy,
//                  served with the view's CSP as an HTTP header.
//   cspOf          that CSP, built from _meta.ui.csp by the spec's rules.
//   openBrowser    Debian's Chromium through playwright-core, fresh profile.
//   openHostPage   a page of the host, its bridge functions exposed, with
//                  every console error, page error and CSP violation kept.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { RESOURCE_MIME_TYPE, getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';

import { REPO_ROOT, WAIT, connectSdk, within } from '../integration/helpers.mjs';
import { CHROMIUM, CHROMIUM_FLAGS } from './chromium.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const OUT_DIR = path.join(REPO_ROOT, 'tests', 'out', 'browser');
export { CHROMIUM, CHROMIUM_FLAGS };
export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
export const UI_CAPABILITIES = { extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } };

export { within, WAIT };

// {=================================================== the server connection

/** Raised by the host, not the server: a JSON-RPC error for the caller. */
export class HostRefusal extends Error {
  constructor(message, code = -32602) {
    super(message);
    this.code = code;
  }
}

export class McpHost {
  /** Connect to `luamcp serve DIR` as a host that renders MCP Apps. */
  static async connect(appDir) {
    const conn = await connectSdk([appDir], { capabilities: UI_CAPABILITIES });
    const host = new McpHost(conn);
    await host.loadTools();
    return host;
  }

  constructor(conn) {
    this.conn = conn;
    this.client = conn.client;
    this.tools = [];
    this.serverCalls = []; // every tools/call that reached the server: {from, name, arguments, result|error}
    this.refusals = []; // every call the host refused: {from, name}
    this.logs = []; // notifications/message from the server
    this.logWaiters = [];
    this.client.fallbackNotificationHandler = async (n) => {
      if (n.method !== 'notifications/message') return;
      this.logs.push(n.params);
      for (const w of [...this.logWaiters]) w();
    };
  }

  async loadTools() {
    this.tools = [];
    let cursor;
    do {
      const page = await this.client.listTools(cursor ? { cursor } : undefined);
      this.tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
  }

  static visibility(tool) {
    return tool?._meta?.ui?.visibility ?? ['model', 'app'];
  }

  tool(name) {
    return this.tools.find((t) => t.name === name);
  }

  /** What the host lists to the model: only tools whose visibility has "model". */
  modelTools() {
    return this.tools.filter((t) => McpHost.visibility(t).includes('model'));
  }

  /** The ui:// resource of a tool (nested key first, then the flat one). */
  uiResourceUri(name) {
    return getToolUiResourceUri(this.tool(name));
  }

  /** The model calls a tool: refused unless the tool is listed to the model. */
  async callFromModel(name, args) {
    const tool = this.tool(name);
    if (!tool || !McpHost.visibility(tool).includes('model')) {
      this.refusals.push({ from: 'model', name });
      throw new HostRefusal(`Tool '${name}' is not available to the model`);
    }
    return this.#call('model', name, args);
  }

  /**
   * A view's tools/call: refused unless its visibility has "app". Answers
   * {result} or {error: {code, message}} (what crosses exposeFunction).
   */
  async callFromView(params) {
    const name = params?.name;
    const tool = this.tool(name);
    if (!tool || !McpHost.visibility(tool).includes('app')) {
      this.refusals.push({ from: 'app', name });
      return { error: { code: -32602, message: `Tool '${name}' is not callable from an app (visibility)` } };
    }
    try {
      return { result: await this.#call('app', name, params.arguments ?? {}) };
    } catch (err) {
      return { error: { code: Number.isSafeInteger(err.code) ? err.code : -32603, message: err.message } };
    }
  }

  async #call(from, name, args) {
    const record = { from, name, arguments: args };
    this.serverCalls.push(record);
    try {
      record.result = await this.client.callTool({ name, arguments: args });
      return record.result;
    } catch (err) {
      record.error = { code: err.code, message: err.message };
      throw err;
    }
  }

  /** resources/read of a view, checked as basic-host checks it. */
  async readUi(uri) {
    const { contents } = await this.client.readResource({ uri });
    assert.equal(contents.length, 1, `${uri}: resources/read must return exactly one content`);
    const [content] = contents;
    assert.equal(content.mimeType, RESOURCE_MIME_TYPE, `${uri}: mimeType`);
    assert.equal(typeof content.text, 'string', `${uri}: HTML as text`);
    return { html: content.text, ui: content._meta?.ui ?? {} };
  }

  async readFromView(params) {
    try {
      return { result: await this.client.readResource(params) };
    } catch (err) {
      return { error: { code: Number.isSafeInteger(err.code) ? err.code : -32603, message: err.message } };
    }
  }

  /** Wait until a server log message matches. */
  untilLog(pred, what) {
    const found = () => this.logs.find(pred);
    if (found()) return Promise.resolve(found());
    return within(
      new Promise((resolve) => {
        const w = () => {
          if (found()) {
            this.logWaiters = this.logWaiters.filter((x) => x !== w);
            resolve(found());
          }
        };
        this.logWaiters.push(w);
      }),
      WAIT,
      what,
    );
  }

  /** End stdin and require a clean exit of the server. */
  async close() {
    const exit = await this.conn.close();
    assert.deepEqual(exit, { code: 0, signal: null }, `the server exited badly\n${this.conn.stderr()}`);
  }
}

// }===================================================

// {=================================================== the CSP of a view

/** What a domain of _meta.ui.csp may look like; anything else is dropped (the host may tighten). */
const SOURCE = /^(https?|wss?):\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:(\d{1,5}|\*))?$/;

/** The spec's policy when a view declares no csp. */
export const DEFAULT_CSP =
  "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; media-src 'self' data:; connect-src 'none'; " +
  "frame-src 'none'; object-src 'none'; base-uri 'self'";

/**
 * The Content-Security-Policy of a view from its _meta.ui.csp (SEP-1865 /
 * MCP Apps 2026-01-26, "UI resource" security): declared domains only.
 * Returns { policy, dropped } (dropped: declared values that are no origin).
 */
export function cspOf(csp) {
  if (csp === null || csp === undefined) return { policy: DEFAULT_CSP, dropped: [] };
  const dropped = [];
  const list = (key) =>
    (Array.isArray(csp[key]) ? csp[key] : []).filter((d) => {
      const ok = typeof d === 'string' && SOURCE.test(d);
      if (!ok) dropped.push({ key, value: d });
      return ok;
    });
  const res = list('resourceDomains');
  const con = list('connectDomains');
  const frm = list('frameDomains');
  const base = list('baseUriDomains');
  const join = (...xs) => xs.flat().join(' ');
  const policy = [
    "default-src 'none'",
    `script-src ${join("'self'", "'unsafe-inline'", res)}`,
    `style-src ${join("'self'", "'unsafe-inline'", res)}`,
    `connect-src ${join("'self'", con)}`,
    `img-src ${join("'self'", 'data:', res)}`,
    `media-src ${join("'self'", 'data:', res)}`,
    `font-src ${join("'self'", res)}`,
    `frame-src ${frm.length ? join(frm) : "'none'"}`,
    "object-src 'none'",
    `base-uri ${base.length ? join(base) : "'self'"}`,
  ].join('; ');
  return { policy, dropped };
}

// }===================================================

// {=================================================== the two origins

/** host-page.js and AppBridge in one browser script (also left in tests/out/browser/ to read). */
export async function bundleHostPage() {
  const out = await esbuild.build({
    entryPoints: [path.join(HERE, 'host', 'host-page.js')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
    outfile: path.join(OUT_DIR, 'host.bundle.js'),
  });
  assert.deepEqual(out.errors, []);
  const js = out.outputFiles[0].text;
  await mkdir(OUT_DIR, { recursive: true });
  await writeFile(out.outputFiles[0].path, js);
  return js;
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

/**
 * The host page at one origin, the sandbox proxy at another (another port).
 * Every request is kept in `requests`; every CSP sent in `csps`.
 */
export async function startWeb() {
  const [hostJs, hostHtml, sandboxHtml] = await Promise.all([
    bundleHostPage(),
    readFile(path.join(HERE, 'host', 'host.html'), 'utf8'),
    readFile(path.join(HERE, 'host', 'sandbox.html'), 'utf8'),
  ]);
  const web = { requests: [], csps: [], dropped: [] };
  const ping = (res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Access-Control-Allow-Origin': '*' });
    res.end('pong');
  };
  const hostServer = http.createServer((req, res) => {
    web.requests.push({ origin: 'host', url: req.url });
    const { pathname } = new URL(req.url, 'http://x');
    if (pathname === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(hostHtml);
    } else if (pathname === '/host.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(hostJs);
    } else if (pathname === '/ping') {
      ping(res);
    } else {
      res.writeHead(404).end();
    }
  });
  const sandboxServer = http.createServer((req, res) => {
    web.requests.push({ origin: 'sandbox', url: req.url });
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/sandbox.html') {
      let declared = null;
      try {
        declared = JSON.parse(url.searchParams.get('csp') ?? 'null');
      } catch {
        declared = {}; // unreadable: the strictest policy that still runs the view
      }
      const { policy, dropped } = cspOf(declared);
      web.csps.push(policy);
      web.dropped.push(...dropped);
      res.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Security-Policy': policy,
        'Cache-Control': 'no-store',
      });
      res.end(sandboxHtml);
    } else if (url.pathname === '/ping') {
      ping(res);
    } else {
      res.writeHead(404).end();
    }
  });
  web.hostOrigin = await listen(hostServer);
  web.sandboxOrigin = await listen(sandboxServer);
  web.close = () =>
    Promise.all(
      [hostServer, sandboxServer].map((s) => {
        s.closeAllConnections();
        return new Promise((resolve) => s.close(resolve));
      }),
    );
  return web;
}

// }===================================================

// {=================================================== the browser

export function haveChromium() {
  return existsSync(CHROMIUM);
}

/** Chromium with a fresh profile: {context, close()}. */
export async function openBrowser() {
  const profile = await mkdtemp(path.join(tmpdir(), 'luamcp-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 820, height: 900 },
    deviceScaleFactor: 1,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A new page of the host, wired to `host`: the view's tools/call and
 * resources/read go to the McpHost; ui/message, ui/update-model-context and
 * the like land in `events`. consoleErrors holds every console error of
 * every frame (CSP violations are reported there by the sandbox, and by
 * Chromium itself), pageErrors every uncaught exception.
 */
export async function openHostPage(context, web, host, { viewport } = {}) {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  const session = {
    page,
    events: [],
    consoleErrors: [],
    consoleWarnings: [],
    pageErrors: [],
    waiters: [],
  };
  const wake = () => {
    for (const w of [...session.waiters]) w();
  };
  page.on('console', (msg) => {
    const where = msg.location()?.url || '';
    const line = `[${msg.type()}] ${msg.text()} (${where})`;
    if (msg.type() === 'error') session.consoleErrors.push(line);
    if (msg.type() === 'warning') session.consoleWarnings.push(line);
    wake();
  });
  page.on('pageerror', (err) => {
    session.pageErrors.push(String(err?.stack || err));
    wake();
  });
  await page.exposeFunction('__hostCallTool', (params) => host.callFromView(params).finally(() => setImmediate(wake)));
  await page.exposeFunction('__hostReadResource', (params) => host.readFromView(params));
  await page.exposeFunction('__hostEvent', (kind, data) => {
    session.events.push({ kind, data });
    wake();
  });
  /** Resolve once pred() is truthy (checked on every event); its value. */
  session.until = (pred, what, limit = WAIT) => {
    const v = pred();
    if (v) return Promise.resolve(v);
    return within(
      new Promise((resolve) => {
        const w = () => {
          const got = pred();
          if (got) {
            session.waiters = session.waiters.filter((x) => x !== w);
            resolve(got);
          }
        };
        session.waiters.push(w);
      }),
      limit,
      what,
    );
  };
  session.eventsOf = (kind) => session.events.filter((e) => e.kind === kind).map((e) => e.data);
  await page.goto(`${web.hostOrigin}/`);
  await page.waitForFunction(() => window.testHost !== undefined);
  return session;
}

/** The view's frame (inner iframe of the sandbox proxy), as a FrameLocator. */
export function viewFrame(page) {
  return page.frameLocator('#sandbox').frameLocator('iframe');
}

/** The view's Frame, for evaluate(). */
export async function viewFrameHandle(page) {
  const inner = await page.locator('#sandbox').contentFrame().locator('iframe').elementHandle();
  return inner.contentFrame();
}

export async function screenshot(locator, name) {
  await mkdir(OUT_DIR, { recursive: true });
  const file = path.join(OUT_DIR, name);
  await locator.screenshot({ path: file, animations: 'disabled' });
  return file;
}

// }===================================================

// {=================================================== host context

/** A host theme as hosts send it: values written with light-dark(). */
export const HOST_STYLES = {
  '--color-background-primary': 'light-dark(#ffffff, #30302e)',
  '--color-background-secondary': 'light-dark(#f5f4ed, #262624)',
  '--color-background-tertiary': 'light-dark(#eceae2, #1f1e1d)',
  '--color-background-inverse': 'light-dark(#141413, #faf9f5)',
  '--color-background-danger': 'light-dark(#fdeeee, #3b2324)',
  '--color-text-primary': 'light-dark(#141413, #faf9f5)',
  '--color-text-secondary': 'light-dark(#5e5d59, #c2c0b6)',
  '--color-text-tertiary': 'light-dark(#87867f, #9c9a92)',
  '--color-text-inverse': 'light-dark(#faf9f5, #141413)',
  '--color-text-danger': 'light-dark(#c9364f, #f2728a)',
  '--color-border-primary': 'light-dark(#d1cfc5, #55544f)',
  '--color-border-secondary': 'light-dark(#e0ded5, #45443f)',
  '--color-border-tertiary': 'light-dark(#ebe9e1, #3a3935)',
  '--color-ring-primary': 'light-dark(#2c84db, #5aa6f0)',
  '--font-sans': '"Liberation Sans", "DejaVu Sans", system-ui, sans-serif',
  '--font-mono': '"DejaVu Sans Mono", monospace',
  '--font-weight-normal': '400',
  '--font-weight-medium': '500',
  '--font-weight-semibold': '600',
  '--font-weight-bold': '700',
  '--font-text-xs-size': '12px',
  '--font-text-sm-size': '14px',
  '--font-text-md-size': '16px',
  '--font-heading-sm-size': '18px',
  '--border-radius-sm': '6px',
  '--border-radius-md': '8px',
  '--border-radius-lg': '12px',
  '--border-radius-full': '9999px',
  '--border-width-regular': '1px',
  '--shadow-sm': '0 1px 2px rgb(0 0 0 / 0.06)',
  '--shadow-md': '0 4px 14px rgb(0 0 0 / 0.10)',
};

export function hostContext({ theme = 'light', tool, width = 720, styles = true } = {}) {
  return {
    theme,
    ...(styles ? { styles: { variables: HOST_STYLES } } : {}),
    displayMode: 'inline',
    availableDisplayModes: ['inline'],
    containerDimensions: { width, maxHeight: 1400 },
    locale: 'en-US',
    timeZone: 'UTC',
    platform: 'web',
    deviceCapabilities: { touch: false, hover: true },
    ...(tool ? { toolInfo: { id: 'call-1', tool } } : {}),
  };
}

// }===================================================
