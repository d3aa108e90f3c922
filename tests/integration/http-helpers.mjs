// http-helpers.mjs — what the Streamable HTTP suites (http-*.test.mjs) share:
// starting `luamcp serve --http` on a free 127.0.0.1 port and stopping it
// with SIGTERM (exit code 0 required), raw HTTP exchanges with an incremental
// SSE parser, and an SDK client over StreamableHTTPClientTransport.
//
// The environment of helpers.mjs applies (LUAMCP_BIN, LUAMCP_WRAP,
// LUAMCP_TIMEOUT_SCALE). Nothing here waits by sleeping: every wait is for
// an event (a stderr line, a response, an SSE event, an exit) with a scaled
// deadline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { APPS, REPO_ROOT, WAIT, command, within } from './helpers.mjs';

export const HTTP_APP = `${APPS}/http`;
export const PROTOCOL_VERSION = '2025-11-25';

// {=================================================== the server

/** A port nothing listens on right now (another process may still take it: start() retries). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function exitOf(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

/**
 * `luamcp serve --http 127.0.0.1:PORT ...args DIR`, started by start() and
 * stopped by stop() (SIGTERM, then the exit). args may be a function of the
 * port (for options that name the server's own URL). env: extra environment
 * variables (LUAMCP_TOKEN from the test's own environment is never passed
 * on unless given here).
 */
export class HttpServer {
  constructor(dir, args = [], { env = {}, port } = {}) {
    this.dir = dir;
    this.args = args;
    this.env = env;
    this.port_ = port; // a port chosen before (another service names this server's URL)
    this.stderr = '';
  }

  async start() {
    for (let attempt = 1; ; attempt++) {
      const port = this.port_ ?? await freePort();
      const extra = typeof this.args === 'function' ? this.args(port) : this.args;
      const { command: cmd, args: argv } = command(['serve', '--http', `127.0.0.1:${port}`, ...extra, this.dir]);
      const env = { ...process.env };
      delete env.LUAMCP_TOKEN;
      // the "listening on" line is at level info: make sure it is shown
      if (!['debug', 'info'].includes((env.LUAMCP_LOG_LEVEL || 'info').toLowerCase())) env.LUAMCP_LOG_LEVEL = 'info';
      Object.assign(env, this.env);
      const child = spawn(cmd, argv, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = exitOf(child);
      let stderr = '';
      const listening = new Promise((resolve, reject) => {
        child.stderr.setEncoding('utf8').on('data', (d) => {
          stderr += d;
          this.stderr = stderr;
          if (stderr.includes(`listening on http://127.0.0.1:${port}/mcp`)) resolve();
        });
        exited.then(({ code, signal }) =>
          reject(Object.assign(new Error(`the server exited (code ${code}, signal ${signal}) before listening`), { code })),
        );
      });
      try {
        await within(listening, WAIT, `the server to listen on port ${port}`);
      } catch (err) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await exited;
        }
        if (/cannot listen/.test(stderr) && attempt < 5) continue; // the port was taken meanwhile
        err.message += `\n--- server stderr ---\n${stderr}`;
        throw err;
      }
      this.child = child;
      this.exited = exited;
      this.port = port;
      this.host = `127.0.0.1:${port}`;
      this.url = `http://127.0.0.1:${port}/mcp`;
      return this;
    }
  }

  /** Send SIGTERM (once): the server finishes the calls in flight, then exits. */
  terminate() {
    if (this.termSent || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.termSent = true;
    this.child.kill('SIGTERM');
  }

  /** SIGTERM, then the exit as {code, signal} (SIGKILL and an error past the limit). */
  async stop(limit = WAIT) {
    this.terminate();
    try {
      return await within(this.exited, limit, `the server (pid ${this.child.pid}) to exit after SIGTERM`);
    } catch (err) {
      this.child.kill('SIGKILL');
      await this.exited;
      err.message += `\n--- server stderr ---\n${this.stderr}`;
      throw err;
    }
  }

  /** Stop, and require a graceful exit (code 0, no signal). */
  async stopClean(limit) {
    const { code, signal } = await this.stop(limit);
    assert.equal(signal, null, `the server was killed by ${signal}\n--- server stderr ---\n${this.stderr}`);
    assert.equal(code, 0, `the server exited with ${code} after SIGTERM\n--- server stderr ---\n${this.stderr}`);
  }

  /** After a failure: end the server whatever it takes. */
  async kill() {
    if (!this.child) return;
    try {
      await this.stop();
    } catch {
      // killed with SIGKILL already
    }
  }
}

/**
 * Run body(srv) against a fresh HTTP server on app dir with extra args;
 * then SIGTERM it and require exit code 0. A failure in the body wins.
 */
export async function withHttp(dir, args, body, opts) {
  const srv = await new HttpServer(dir, args, opts).start();
  let failed = false;
  try {
    return await body(srv);
  } catch (err) {
    failed = true;
    err.message += `\n--- server stderr ---\n${srv.stderr}`;
    throw err;
  } finally {
    if (failed) await srv.kill();
    else await srv.stopClean();
  }
}

// }===================================================

// {=================================================== raw exchanges

/** Parse the complete events in text; returns [events, rest]. */
function parseSse(text, sink) {
  for (;;) {
    const m = /\r\n\r\n|\n\n|\r\r/.exec(text);
    if (!m) return text;
    const block = text.slice(0, m.index);
    text = text.slice(m.index + m[0].length);
    const ev = { fields: [] };
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line.startsWith(':')) {
        sink.comment(line.slice(1));
        continue;
      }
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      ev.fields.push(name);
      if (name === 'data') ev.data = ev.data === undefined ? value : `${ev.data}\n${value}`;
      else if (name === 'id' || name === 'event' || name === 'retry') ev[name] = value;
    }
    if (!ev.fields.length) continue; // a block of comments only
    if (ev.data) ev.message = JSON.parse(ev.data);
    sink.event(ev);
  }
}

/**
 * One HTTP exchange in progress: status and headers are known, the body
 * arrives. For text/event-stream bodies, `events` fills up as events
 * complete (each {id, event, data, retry, message, fields}) and `comments`
 * with comment lines; waitEvent() waits for one.
 */
export class Exchange {
  constructor(req, res) {
    this.req = req;
    this.res = res;
    this.status = res.statusCode;
    this.headers = res.headers;
    this.sse = /^text\/event-stream/i.test(res.headers['content-type'] || '');
    this.chunks = [];
    this.events = [];
    this.comments = [];
    this.waiters = [];
    this.ended = false;
    let pending = '';
    const decoder = new TextDecoder();
    const sink = {
      event: (ev) => this.events.push(ev),
      comment: (c) => this.comments.push(c),
    };
    this.done = new Promise((resolve, reject) => {
      res.on('data', (chunk) => {
        this.chunks.push(chunk);
        if (this.sse) {
          try {
            pending = parseSse(pending + decoder.decode(chunk, { stream: true }), sink);
          } catch (err) {
            this.error = err;
          }
        }
        this.wake();
      });
      res.on('end', () => {
        this.ended = true;
        this.wake();
        resolve(this);
      });
      const fail = (err) => {
        if (this.ended) return;
        this.error ??= err;
        this.ended = true;
        this.wake();
        reject(err);
      };
      res.on('error', fail);
      res.on('aborted', () => fail(new Error('the response was aborted')));
      req.on('error', fail);
    });
    this.done.catch(() => {}); // the waits report it
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  /** The whole body, once it has ended. */
  get body() {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  /** The SSE events that carry a JSON-RPC message. */
  get messages() {
    return this.events.filter((e) => e.message).map((e) => e.message);
  }

  /** Wait for the body to end (the response as a whole). */
  finished(limit = WAIT, what = 'the end of the response') {
    return within(this.done, limit, what).catch((err) => {
      err.message += ` (waiting for ${what}); status ${this.status}, body so far: ${JSON.stringify(this.body.slice(0, 2000))}`;
      throw err;
    });
  }

  /** Wait until pred(this) holds; rejects if the body ends first. */
  until(pred, what, limit = WAIT) {
    if (pred(this)) return Promise.resolve(this);
    return within(
      new Promise((resolve, reject) => {
        const w = () => {
          if (pred(this)) {
            this.waiters = this.waiters.filter((x) => x !== w);
            resolve(this);
          } else if (this.ended) {
            this.waiters = this.waiters.filter((x) => x !== w);
            reject(new Error(`the response ended (${this.error ? this.error.message : 'cleanly'}) before ${what}; body: ${this.body.slice(0, 2000)}`));
          }
        };
        this.waiters.push(w);
      }),
      limit,
      `${what}; body so far: ${this.body.slice(0, 2000)}`,
    );
  }

  /** The first SSE event matching pred (waiting for it). */
  async waitEvent(pred, what = 'an SSE event', limit) {
    await this.until(() => this.events.some(pred), what, limit);
    return this.events.find(pred);
  }

  /** The JSON-RPC message of the first event matching pred(message). */
  async waitMessage(pred, what = 'a JSON-RPC message', limit) {
    return (await this.waitEvent((e) => e.message && pred(e.message), what, limit)).message;
  }

  /** Close the connection from the client side (a client that goes away). */
  abort() {
    this.req.destroy();
    this.res.destroy();
  }
}

/**
 * Start a raw request on its own connection (no keep-alive) and resolve
 * once the response headers arrive, as an Exchange.
 *   method   default POST
 *   body     an object (JSON-encoded), a string or a Buffer
 *   headers  exactly the headers to send (see mcpHeaders for the usual ones);
 *            Content-Length is added for a body unless one is given
 *   localAddress  the 127/8 address to connect from (each is its own peer)
 */
export function exchange(srv, { method = 'POST', path = '/mcp', headers = {}, body, limit = WAIT, localAddress } = {}) {
  let data;
  if (body !== undefined) data = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const hdrs = { ...headers };
  if (data && !Object.keys(hdrs).some((k) => /^(content-length|transfer-encoding)$/i.test(k))) hdrs['Content-Length'] = data.length;
  const req = http.request({ host: '127.0.0.1', port: srv.port, method, path, headers: hdrs, agent: false, localAddress });
  const answered = new Promise((resolve, reject) => {
    req.on('response', (res) => resolve(new Exchange(req, res)));
    req.on('error', reject);
  });
  if (data) req.end(data);
  else req.end();
  return within(answered, limit, `the response headers of ${method} ${path}`).catch((err) => {
    req.destroy();
    throw err;
  });
}

/** exchange(), then the whole body. */
export async function request(srv, opts = {}) {
  const ex = await exchange(srv, opts);
  await ex.finished(opts.limit);
  return ex;
}

/**
 * The headers a well-behaved client sends (node adds Host): Content-Type
 * and Accept (POST) or Accept (GET), MCP-Protocol-Version, and
 * Mcp-Session-Id when given. null leaves a header out, e.g.
 * mcpHeaders({ accept: null }); extra adds headers (undefined or null
 * values are dropped).
 */
export function mcpHeaders({
  method = 'POST',
  session,
  version = PROTOCOL_VERSION,
  accept = method === 'POST' ? 'application/json, text/event-stream' : 'text/event-stream',
  contentType = method === 'POST' ? 'application/json' : null,
  extra = {},
} = {}) {
  const h = {};
  if (contentType != null) h['Content-Type'] = contentType;
  if (accept != null) h.Accept = accept;
  if (version != null) h['MCP-Protocol-Version'] = version;
  if (session != null) h['Mcp-Session-Id'] = session;
  for (const [k, v] of Object.entries(extra)) if (v != null) h[k] = v;
  return h;
}

let nextId = 1;
export const rpc = (method, params, id = nextId++) => ({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
export const note = (method, params) => ({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) });

/** POST one JSON-RPC message with the usual headers; the whole response. */
export function post(srv, msg, { headers, limit, localAddress, ...opts } = {}) {
  return request(srv, { method: 'POST', headers: headers ?? mcpHeaders(opts), body: msg, limit, localAddress });
}

/** The JSON-RPC message of a finished response: the JSON body or the response event of an SSE body. */
export function answerOf(ex) {
  if (ex.sse) {
    const answers = ex.messages.filter((m) => 'result' in m || 'error' in m);
    assert.equal(answers.length, 1, `expected one answer on the stream, got: ${ex.body}`);
    return answers[0];
  }
  assert.match(ex.headers['content-type'] || '', /^application\/json/, `not JSON: ${ex.status} ${ex.body}`);
  return JSON.parse(ex.body);
}

/**
 * initialize + notifications/initialized over raw HTTP; returns
 * {session, result, exchange}. extra: more headers for both requests;
 * localAddress: the 127/8 address to connect from (each is its own peer).
 */
export async function rawInitialize(srv, { capabilities = {}, extra = {}, localAddress } = {}) {
  const init = await post(
    srv,
    rpc('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities, clientInfo: { name: 'luamcp-http-raw', version: '0.0.0' } }),
    { version: null, extra, localAddress },
  );
  assert.equal(init.status, 200, `initialize: ${init.status} ${init.body}`);
  const msg = answerOf(init);
  assert.ok(msg.result, `initialize failed: ${init.body}`);
  const session = init.headers['mcp-session-id'];
  assert.ok(session, 'initialize answered without an Mcp-Session-Id header');
  const inited = await post(srv, note('notifications/initialized'), { session, extra, localAddress });
  assert.equal(inited.status, 202, `notifications/initialized: ${inited.status} ${inited.body}`);
  return { session, result: msg.result, exchange: init };
}

// }===================================================

// {=================================================== SDK client

/**
 * The official SDK client over StreamableHTTPClientTransport to srv. Every
 * fetch the transport makes is recorded in `fetches` ({method, headers,
 * status, contentType, body}); `getOpened()` resolves once the standalone GET
 * stream (no Last-Event-ID) answered 200, and `waitFetch(pred)` waits for a
 * recorded fetch.
 */
export async function connectHttpSdk(srv, { capabilities = {}, name = 'luamcp-http-sdk', transportOptions = {} } = {}) {
  const fetches = [];
  let waiters = [];
  const record = (entry) => {
    fetches.push(entry);
    const ready = waiters.filter((w) => w.pred(entry));
    waiters = waiters.filter((w) => !w.pred(entry));
    for (const w of ready) w.resolve(entry);
  };
  const waitFetch = (pred, what = 'a fetch', limit = WAIT) => {
    const found = fetches.find(pred);
    if (found) return Promise.resolve(found);
    return within(new Promise((resolve) => waiters.push({ pred, resolve })), limit, what);
  };
  const recordingFetch = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const entry = {
      method: init.method || 'GET',
      headers: Object.fromEntries(headers.entries()),
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
    };
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.contentType = res.headers.get('content-type');
    record(entry);
    return res;
  };
  const transport = new StreamableHTTPClientTransport(new URL(srv.url), { fetch: recordingFetch, ...transportOptions });
  const client = new Client({ name, version: '0.0.0' }, { capabilities });
  const errors = [];
  client.onerror = (err) => errors.push(err);
  await client.connect(transport, { timeout: WAIT });
  const getOpened = () =>
    waitFetch((f) => f.method === 'GET' && !f.headers['last-event-id'] && f.status === 200, 'the SDK to open its standalone GET stream');
  return { client, transport, fetches, waitFetch, getOpened, errors };
}

/** Close an SDK client (aborts its streams); never throws. */
export async function closeHttpSdk(conn) {
  try {
    await conn.client.close();
  } catch {
    // already closed
  }
}

// }===================================================
