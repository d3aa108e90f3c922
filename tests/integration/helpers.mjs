// helpers.mjs — what the integration tests share: where the binary is, how to
// start it (optionally under a wrapper such as valgrind), a raw NDJSON client,
// an SDK client whose server's exit code is checked, and a raw-JSON scanner
// (to compare reply bytes where JS numbers would lose precision).
//
// Environment:
//   LUAMCP_BIN            the binary (default: build/luamcp in the repo root)
//   LUAMCP_WRAP           a command prefix, split on spaces, e.g.
//                         "valgrind --error-exitcode=99 --leak-check=full -q"
//   LUAMCP_TIMEOUT_SCALE  multiplies every timeout (and the sleep lengths that
//                         timing assertions depend on); e.g. 30 under valgrind
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, writeFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const APPS = path.join(REPO_ROOT, 'tests', 'apps');
export const EXAMPLE_APP = REPO_ROOT;
export const FEATURES_APP = path.join(APPS, 'features');
export const PAGED_APP = path.join(APPS, 'paged');
export const BUSY_APP = path.join(APPS, 'busy');

export const BIN = path.resolve(process.env.LUAMCP_BIN || path.join(REPO_ROOT, 'build', 'luamcp'));
export const WRAP = (process.env.LUAMCP_WRAP || '').split(' ').filter(Boolean);
export const SCALE = Number(process.env.LUAMCP_TIMEOUT_SCALE) > 0 ? Number(process.env.LUAMCP_TIMEOUT_SCALE) : 1;

/** A timeout in ms, scaled. */
export const ms = (base) => Math.round(base * SCALE);
/** The default wait for one reply or one exit. */
export const WAIT = ms(10_000);
/** Per-test limit for node:test. */
export const TEST_TIMEOUT = ms(60_000);

/** The command line that runs `luamcp ...args` (wrapped when asked). */
export function command(args) {
  const argv = [...WRAP, BIN, ...args];
  return { command: argv[0], args: argv.slice(1) };
}

/** Reject after `limit` ms unless the promise settles first. */
export function within(promise, limit, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${limit} ms waiting for ${what}`)), limit);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The exit of a child process, as {code, signal}, once its pipes are closed. */
function exitOf(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

/** Wait for a child we spawned to end; SIGKILL it (and fail) if it does not. */
async function awaitExit(child, exited, stderr, limit = WAIT) {
  try {
    return await within(exited, limit, `the server (pid ${child.pid}) to exit`);
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    err.message += `\n--- server stderr ---\n${stderr()}`;
    throw err;
  }
}

function assertCleanExit({ code, signal }, stderr) {
  assert.equal(signal, null, `the server was killed by ${signal}\n--- server stderr ---\n${stderr}`);
  assert.equal(code, 0, `the server exited with ${code}\n--- server stderr ---\n${stderr}`);
}

// {=================================================== temp apps

/** Write an app into a fresh temp dir: files maps relative paths to contents. */
export async function tempApp(files) {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-it-'));
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(dir, rel);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  return dir;
}

export async function removeTemp(dir) {
  await rm(dir, { recursive: true, force: true });
}

// }===================================================

// {=================================================== one-shot commands

/** Run `luamcp ...args` to the end: {code, signal, stdout, stderr}. */
export async function run(args, { cwd = REPO_ROOT, limit = WAIT } = {}) {
  const { command: cmd, args: argv } = command(args);
  const child = spawn(cmd, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = exitOf(child);
  const { code, signal } = await awaitExit(child, exited, () => stderr, limit);
  return { code, signal, stdout, stderr };
}

// }===================================================

// {=================================================== raw NDJSON client

/**
 * A server spoken to with raw lines. Every stdout line is kept (as a string)
 * in `lines`; `take(pred)` returns the first line not taken yet that matches,
 * waiting for it if need be.
 */
export class RawServer {
  constructor(args, { cwd = REPO_ROOT, env } = {}) {
    const { command: cmd, args: argv } = command(['serve', ...args]);
    this.child = spawn(cmd, argv, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = exitOf(this.child);
    this.lines = [];
    this.taken = new Set();
    this.waiters = [];
    this.stderr = '';
    this.child.stderr.setEncoding('utf8').on('data', (d) => (this.stderr += d));
    this.child.stdin.on('error', () => {}); // the server may be gone: the exit code tells
    let pending = Buffer.alloc(0);
    this.child.stdout.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      let nl;
      while ((nl = pending.indexOf(0x0a)) >= 0) {
        this.lines.push(pending.subarray(0, nl).toString('utf8'));
        pending = pending.subarray(nl + 1);
      }
      this.wake();
    });
    this.child.stdout.on('end', () => {
      if (pending.length) this.lines.push(pending.toString('utf8')); // unterminated: still shown
      this.ended = true;
      this.wake();
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  /** Write one line: an object (JSON-encoded), a string or a Buffer (as is). */
  send(msg) {
    const data = Buffer.isBuffer(msg) ? msg : Buffer.from(typeof msg === 'string' ? msg : JSON.stringify(msg));
    this.child.stdin.write(Buffer.concat([data, Buffer.from('\n')]));
  }

  /** The first untaken line matching pred (a function of the raw line). */
  take(pred, what = 'a matching line', limit = WAIT) {
    const find = () => {
      for (let i = 0; i < this.lines.length; i++) {
        if (!this.taken.has(i) && pred(this.lines[i])) {
          this.taken.add(i);
          return this.lines[i];
        }
      }
      return undefined;
    };
    const found = find();
    if (found !== undefined) return Promise.resolve(found);
    return within(
      new Promise((resolve, reject) => {
        const w = () => {
          const line = find();
          if (line !== undefined) {
            this.waiters = this.waiters.filter((x) => x !== w);
            resolve(line);
          } else if (this.ended) {
            this.waiters = this.waiters.filter((x) => x !== w);
            reject(new Error(`stdout ended before ${what}; lines: ${JSON.stringify(this.lines)}`));
          }
        };
        this.waiters.push(w);
      }),
      limit,
      `${what}; lines so far: ${JSON.stringify(this.lines).slice(0, 2000)}`,
    ).catch((err) => {
      err.stderrShown = true;
      err.message += `\n--- server stderr ---\n${this.stderr}`;
      throw err;
    });
  }

  /** The next line, whatever it is. */
  next(limit) {
    return this.take(() => true, 'the next line', limit);
  }

  /** The reply whose id is rawId (raw JSON text of the id, e.g. '7' or '"x"'). */
  reply(rawId, limit) {
    return this.take((line) => isReply(line) && sameId(rawMember(line, ['id']), rawId), `the reply to id ${rawId}`, limit);
  }

  /** Send a request (object with an id, or raw text with rawId) and return its reply line. */
  async request(msg, rawId, limit) {
    if (rawId === undefined) rawId = JSON.stringify(msg.id);
    this.send(msg);
    return this.reply(rawId, limit);
  }

  /** Send and return the parsed reply. */
  async call(id, method, params, limit) {
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    return JSON.parse(await this.request(msg, undefined, limit));
  }

  /** initialize + notifications/initialized; returns the parsed result. */
  async initialize(protocolVersion = '2025-11-25') {
    const r = await this.call('init', 'initialize', {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: 'luamcp-raw-test', version: '0.0.0' },
    });
    assert.ok(r.result, `initialize failed: ${JSON.stringify(r)}`);
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r.result;
  }

  /** Close stdin and wait for the exit: {code, signal}. */
  async close(limit = WAIT) {
    this.child.stdin.end();
    return awaitExit(this.child, this.exited, () => this.stderr, limit);
  }
}

function isReply(line) {
  const id = rawMember(line, ['id']);
  return id !== undefined && (rawMember(line, ['result']) !== undefined || rawMember(line, ['error']) !== undefined);
}

function sameId(a, b) {
  if (a === undefined) return false;
  if (a === b) return true;
  // strings may be escaped differently and still be the same id
  return a.startsWith('"') && b.startsWith('"') && JSON.parse(a) === JSON.parse(b);
}

/**
 * Run body(server) against `luamcp serve ...args`; then close stdin and
 * require exit code 0. A failure in the body wins over a bad exit.
 */
export async function withRaw(args, body, opts) {
  const srv = new RawServer(args, opts);
  let failed = false;
  try {
    return await body(srv);
  } catch (err) {
    failed = true;
    if (!err.stderrShown) err.message += `\n--- server stderr ---\n${srv.stderr}`;
    throw err;
  } finally {
    if (failed) {
      srv.child.stdin.end();
      try {
        await within(srv.exited, WAIT, 'the exit');
      } catch {
        srv.child.kill('SIGKILL');
      }
    } else {
      assertCleanExit(await srv.close(), srv.stderr);
    }
  }
}

// }===================================================

// {=================================================== raw JSON scanning

/**
 * The raw text of a member of a JSON document, following path (object keys
 * and array indexes), or undefined. The text is exactly as it was written, so
 * numbers keep every digit.
 */
export function rawMember(text, pathParts) {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\r\n'.includes(text[i])) i++;
  };
  const skipString = () => {
    i++; // opening quote
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
  };
  const skipValue = () => {
    ws();
    const start = i;
    const c = text[i];
    if (c === '"') skipString();
    else if (c === '{' || c === '[') {
      let depth = 0;
      do {
        const d = text[i];
        if (d === '"') {
          skipString();
          continue;
        }
        if (d === '{' || d === '[') depth++;
        else if (d === '}' || d === ']') depth--;
        i++;
      } while (depth > 0 && i < text.length);
    } else {
      while (i < text.length && !',}] \t\r\n'.includes(text[i])) i++;
    }
    return text.slice(start, i);
  };
  const descend = (key) => {
    ws();
    if (typeof key === 'number') {
      if (text[i] !== '[') return false;
      i++;
      for (let n = 0; ; n++) {
        ws();
        if (text[i] === ']') return false;
        if (n === key) return true;
        skipValue();
        ws();
        if (text[i] === ',') i++;
      }
    }
    if (text[i] !== '{') return false;
    i++;
    for (;;) {
      ws();
      if (text[i] !== '"') return false;
      const ks = i;
      skipString();
      const k = JSON.parse(text.slice(ks, i));
      ws();
      i++; // ':'
      if (k === key) return true;
      skipValue();
      ws();
      if (text[i] === ',') i++;
    }
  };
  for (const p of pathParts) if (!descend(p)) return undefined;
  return skipValue();
}

// }===================================================

// {=================================================== SDK client

/** StdioClientTransport that also tells how the server exited and what was negotiated. */
class TrackedTransport extends StdioClientTransport {
  async start() {
    await super.start();
    this.child = this._process;
    this.exited = exitOf(this.child);
  }

  setProtocolVersion(version) {
    this.protocolVersion = version;
  }
}

/**
 * Connect the official SDK client to `luamcp serve ...args`. Returns
 * {client, transport, stderr(), close()}; close() ends stdin, waits for the
 * exit and requires code 0.
 */
export async function connectSdk(args, { capabilities = {}, cwd = REPO_ROOT } = {}) {
  const { command: cmd, args: argv } = command(['serve', ...args]);
  const transport = new TrackedTransport({ command: cmd, args: argv, cwd, env: { ...process.env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const client = new Client({ name: 'luamcp-integration', version: '0.0.0' }, { capabilities });
  const errors = [];
  client.onerror = (err) => errors.push(err);
  try {
    await client.connect(transport, { timeout: WAIT });
  } catch (err) {
    if (transport.child && transport.child.exitCode === null) transport.child.kill('SIGKILL');
    if (transport.exited) await transport.exited;
    err.message += `\n--- server stderr ---\n${stderr}`;
    throw err;
  }
  const conn = {
    client,
    transport,
    errors, // errors the SDK reported outside any request (e.g. a reply with an unknown id)
    stderr: () => stderr,
    async close() {
      transport.child.stdin.end();
      const exit = await awaitExit(transport.child, transport.exited, () => stderr);
      await client.close();
      return exit;
    },
  };
  return conn;
}

/** Run body(conn) with an SDK client; then require a clean exit (code 0). */
export async function withSdk(args, body, opts) {
  const conn = await connectSdk(args, opts);
  let failed = false;
  try {
    return await body(conn);
  } catch (err) {
    failed = true;
    err.message += `\n--- server stderr ---\n${conn.stderr()}`;
    throw err;
  } finally {
    if (failed) {
      conn.transport.child?.stdin.end();
      try {
        await within(conn.transport.exited, WAIT, 'the exit');
      } catch {
        conn.transport.child.kill('SIGKILL');
      }
      await closeClient(conn);
    } else {
      assertCleanExit(await conn.close(), conn.stderr());
    }
  }
}

async function closeClient(conn) {
  try {
    await conn.client.close();
  } catch {
    // already closed
  }
}

/**
 * Collect the notifications of one schema on a client. waitFor(n) resolves
 * once n have arrived (event-driven, no polling).
 */
export function collect(client, schema) {
  const items = [];
  let waiters = [];
  client.setNotificationHandler(schema, (n) => {
    items.push(n.params);
    const ready = waiters.filter((w) => w.pred(items));
    waiters = waiters.filter((w) => !w.pred(items));
    for (const w of ready) w.resolve(items);
  });
  return {
    items,
    until(pred, what = 'notifications', limit = WAIT) {
      if (pred(items)) return Promise.resolve(items);
      return within(new Promise((resolve) => waiters.push({ pred, resolve })), limit, what);
    },
  };
}

// }===================================================

// {=================================================== files saved as editors save them (reload suites)

let saveSeq = 0;

/**
 * Save text to file as an editor would. how:
 *   'rename'  write a hidden temp file next to it, then rename it over the
 *             file (vim's backupcopy=no, VS Code, most "atomic save"s)
 *   'inplace' truncate and write the file itself (plain `>` redirection)
 * Folders are created as needed.
 */
export async function saveFile(file, text, how = 'rename') {
  await mkdir(path.dirname(file), { recursive: true });
  if (how === 'inplace') {
    await writeFile(file, text);
    return;
  }
  if (how !== 'rename') throw new Error(`saveFile: unknown way '${how}'`);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${saveSeq++}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/**
 * Follow a text stream (a server's stderr) line by line: `lines` holds every
 * complete line so far; count(re) how many match; until(pred, what, limit)
 * resolves once pred(lines) holds (event-driven, checked on every new line).
 * initial: what the stream said before this watch began (e.g. conn.stderr()),
 * so that nothing is missed when a listener was already attached.
 */
export function watchLines(stream, initial = '') {
  const lines = [];
  let pending = '';
  for (const l of initial.split('\n').slice(0, -1)) lines.push(l);
  pending = initial.slice(initial.lastIndexOf('\n') + 1);
  let waiters = [];
  stream.on('data', (d) => {
    pending += typeof d === 'string' ? d : d.toString('utf8');
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      lines.push(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
    const ready = waiters.filter((w) => w.pred(lines));
    waiters = waiters.filter((w) => !w.pred(lines));
    for (const w of ready) w.resolve(lines);
  });
  return {
    lines,
    count: (re) => lines.reduce((n, l) => n + (re.test(l) ? 1 : 0), 0),
    until(pred, what = 'a stderr line', limit = WAIT) {
      if (pred(lines)) return Promise.resolve(lines);
      return within(new Promise((resolve) => waiters.push({ pred, resolve })), limit, `${what}; stderr so far:\n${lines.join('\n')}`);
    },
  };
}

// }===================================================
