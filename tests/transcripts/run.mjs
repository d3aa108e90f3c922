// run.mjs — runs every tests/transcripts/*.transcript (or those named on the
// command line, or in LUAMCP_TRANSCRIPTS, comma-separated) over stdio (the
// `luamcp serve` child, NDJSON) and over Streamable HTTP (a POST per line),
// once for each revision its header names. The format: tests/README.md.
//
//   node --test tests/transcripts/run.mjs           all of them
//   node tests/transcripts/run.mjs errors ids       two of them
//
// The environment of tests/integration/helpers.mjs applies (LUAMCP_BIN,
// LUAMCP_WRAP, LUAMCP_TIMEOUT_SCALE).
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { REPO_ROOT, TEST_TIMEOUT, WAIT, command, within } from '../integration/helpers.mjs';
import { HttpServer, exchange } from '../integration/http-helpers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODERN = '2026-07-28';
const TRANSPORTS = ['stdio', 'http'];
const REVISIONS = ['none', '2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', MODERN];
const ENVELOPE = 'io.modelcontextprotocol/protocolVersion';
// LUAMCP_TRANSCRIPT_SHOW=1: print every message taken (and status read), to write a transcript
const SHOW = Boolean(process.env.LUAMCP_TRANSCRIPT_SHOW);
const CLIENT_INFO = { name: 'luamcp-transcripts', version: '0.0.0' };

// {=================================================== JSON with every digit

/** A JSON number as written: compared by value, re-encoded as written. */
const SPANS = Symbol('spans');

class Num {
  constructor(raw) {
    this.raw = raw;
  }
}

/** JSON.parse, except that numbers stay Num (123456789012345678 keeps its digits). */
export function parseJson(text) {
  let i = 0;
  const fail = (why) => {
    throw new SyntaxError(`${why} at offset ${i} of ${text.length > 200 ? text.slice(0, 200) + '…' : text}`);
  };
  const ws = () => {
    while (i < text.length && ' \t\r\n'.includes(text[i])) i++;
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const o = {};
      const spans = {};
      Object.defineProperty(o, SPANS, { value: spans });
      ws();
      if (text[i] === '}') return i++, o;
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = string();
        ws();
        if (text[i++] !== ':') fail("expected ':'");
        ws();
        const start = i;
        Object.defineProperty(o, k, { value: value(), enumerable: true, writable: true, configurable: true });
        spans[k] = [start, i];
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return i++, o;
        else fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      ws();
      if (text[i] === ']') return i++, a;
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return i++, a;
        else fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && m[0]) return (i += m[0].length), new Num(m[0]);
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, i)) return (i += word.length), v;
    }
    fail('unexpected character');
  };
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) fail('unterminated string');
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing text');
  return v;
}

/** JSON.stringify for what parseJson returns. */
export function toJson(v, indent = '') {
  if (v instanceof Num) return v.raw;
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const inner = indent ? indent + '  ' : '';
  const nl = indent ? `\n${inner}` : '';
  const end = indent ? `\n${indent}` : '';
  if (Array.isArray(v)) return v.length ? `[${nl}${v.map((x) => toJson(x, inner)).join(`,${nl}`)}${end}]` : '[]';
  const keys = Object.keys(v);
  if (!keys.length) return '{}';
  const sep = indent ? ': ' : ':';
  return `{${nl}${keys.map((k) => JSON.stringify(k) + sep + toJson(v[k], inner)).join(`,${nl}`)}${end}}`;
}

const pretty = (v) => toJson(v, '  ').replace(/^/gm, '    ').trimStart();

/** Equal values; an integer (no fraction, no exponent) only equals an integer, digit for digit. */
function sameNumber(a, b) {
  if (a.raw === b.raw) return true;
  const int = /^-?\d+$/;
  if (int.test(a.raw) || int.test(b.raw)) return int.test(a.raw) && int.test(b.raw) && BigInt(a.raw) === BigInt(b.raw);
  return Number(a.raw) === Number(b.raw);
}

// }===================================================

// {=================================================== matching

const KINDS = {
  $any: () => true,
  $string: (v) => typeof v === 'string',
  $number: (v) => v instanceof Num,
  $integer: (v) => v instanceof Num && /^-?\d+$/.test(v.raw),
  $boolean: (v) => typeof v === 'boolean',
  $object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Num),
  $array: (v) => Array.isArray(v),
};

const where = (p) => p || '(the message)';

/** {"$json": pattern}: a string whose JSON text fits pattern. */
const isJsonText = (p) => p !== null && typeof p === 'object' && !Array.isArray(p) && !(p instanceof Num) &&
  Object.keys(p).length === 1 && Object.hasOwn(p, '$json');

/**
 * null when value fits pattern; else what differs and where. Captures go
 * into vars (raw JSON text).
 */
function match(pattern, value, vars, at = '') {
  if (typeof pattern === 'string' && pattern.startsWith('$')) {
    if (pattern.startsWith('$$')) pattern = pattern.slice(1);
    else {
      if (pattern === '$absent') return value === undefined ? null : `${where(at)}: ${toJson(value)}, expected no such key`;
      if (value === undefined) return `${where(at)}: missing (expected ${pattern})`;
      if (pattern.startsWith('$save:')) {
        vars.set(pattern.slice(6), toJson(value));
        return null;
      }
      if (pattern.startsWith('$match:')) {
        if (typeof value !== 'string') return `${where(at)}: ${toJson(value)} is not a string`;
        return new RegExp(pattern.slice(7)).test(value) ? null : `${where(at)}: ${JSON.stringify(value)} does not match /${pattern.slice(7)}/`;
      }
      const kind = KINDS[pattern];
      if (!kind) throw new Error(`unknown placeholder ${pattern} (write $$ for a literal $)`);
      return kind(value) ? null : `${where(at)}: ${toJson(value)} is not ${pattern.slice(1)}`;
    }
  }
  if (value === undefined) return `${where(at)}: missing (expected ${toJson(pattern)})`;
  if (isJsonText(pattern)) {
    if (typeof value !== 'string') return `${where(at)}: ${toJson(value)} is not a string of JSON`;
    let inner;
    try {
      inner = parseJson(value);
    } catch {
      return `${where(at)}: ${JSON.stringify(value)} is not JSON`;
    }
    return match(pattern.$json, inner, vars, `${at}($json)`);
  }
  if (pattern instanceof Num) {
    return value instanceof Num && sameNumber(pattern, value) ? null : `${where(at)}: ${toJson(value)}, expected ${pattern.raw}`;
  }
  if (pattern === null || typeof pattern !== 'object') {
    return pattern === value ? null : `${where(at)}: ${toJson(value)}, expected ${JSON.stringify(pattern)}`;
  }
  if (Array.isArray(pattern)) {
    if (!Array.isArray(value)) return `${where(at)}: ${toJson(value)}, expected an array`;
    for (let k = 0; k < pattern.length; k++) {
      const d = match(pattern[k], value[k], vars, `${at}[${k}]`);
      if (d) return d;
    }
    return value.length > pattern.length ? `${at}[${pattern.length}]: ${toJson(value[pattern.length])} is more than expected` : null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Num) {
    return `${where(at)}: ${toJson(value)}, expected an object`;
  }
  const more = Object.hasOwn(pattern, '$more');
  for (const k of Object.keys(pattern)) {
    if (k === '$more') continue;
    const d = match(pattern[k], value[k], vars, at ? `${at}.${k}` : k);
    if (d) return d;
  }
  if (!more) {
    for (const k of Object.keys(value)) {
      if (!Object.hasOwn(pattern, k)) return `${at ? `${at}.${k}` : k}: ${toJson(value[k])} is not expected (\"$more\" allows other keys)`;
    }
  }
  return null;
}

// }===================================================

// {=================================================== the format

/**
 * Parse a transcript: {header, steps}. Header lines `key: value` come first;
 * steps are `[tags:] > json`, `[tags:] < json`, `[tags:] status N`,
 * `[tags:] headers {...}` and `let NAME = json`. A line that starts with
 * blanks continues the one before.
 */
export function parseTranscript(file) {
  const text = readFileSync(file, 'utf8');
  const header = { app: undefined, args: [], revision: ['2025-11-25'], transports: [...TRANSPORTS], capabilities: {}, except: [] };
  const steps = [];
  let inHeader = true;
  const lines = text.split('\n');
  const bad = (n, why) => {
    throw new Error(`${path.relative(REPO_ROOT, file)}:${n}: ${why}`);
  };
  for (let n = 1; n <= lines.length; n++) {
    const line = lines[n - 1];
    if (/^\s*(#|$)/.test(line)) continue;
    if (/^\s/.test(line)) {
      const last = steps.at(-1);
      if (!last || !('text' in last)) bad(n, 'a continuation line with nothing to continue');
      last.text += ' ' + line.trim();
      continue;
    }
    const h = /^(app|args|revision|transports|capabilities|except):\s*(.*)$/.exec(line);
    if (h) {
      if (!inHeader) bad(n, `header line '${h[1]}' after the first step`);
      const [, key, value] = h;
      if (key === 'app') header.app = value.trim();
      else if (key === 'args') header.args = value.split(/\s+/).filter(Boolean);
      else if (key === 'capabilities') header.capabilities = JSON.parse(value);
      else if (key === 'except') {
        const words = value.split(/\s+/).filter(Boolean);
        if (words.length !== 2 || !TRANSPORTS.includes(words[0]) || !REVISIONS.includes(words[1])) bad(n, 'except: TRANSPORT REVISION');
        header.except.push(words.join(' '));
      }
      else {
        const words = value.split(/\s+/).filter(Boolean);
        const known = key === 'revision' ? REVISIONS : TRANSPORTS;
        for (const w of words) if (!known.includes(w)) bad(n, `unknown ${key} '${w}' (one of ${known.join(' ')})`);
        header[key] = words;
      }
      continue;
    }
    inHeader = false;
    const let_ = /^let\s+([A-Za-z_]\w*)\s*=\s*(.*)$/.exec(line);
    if (let_) {
      steps.push({ kind: 'let', line: n, name: let_[1], text: let_[2] });
      continue;
    }
    const m = /^(?:([a-z0-9 -]+):\s+)?(>|<|status|headers)(?:\s+(.*))?$/.exec(line);
    if (!m) bad(n, `not a step: ${line}`);
    const tags = (m[1] || '').split(/\s+/).filter(Boolean);
    for (const t of tags) if (!TRANSPORTS.includes(t) && !REVISIONS.includes(t)) bad(n, `unknown tag '${t}'`);
    const kind = { '>': 'send', '<': 'expect', status: 'status', headers: 'headers' }[m[2]];
    steps.push({ kind, line: n, tags, text: m[3] ?? '' });
  }
  if (!header.app) bad(1, 'no app: header');
  return { header, steps };
}

/** Does a step with these tags run under transport and revision? */
function applies(tags, transport, revision) {
  const ts = tags.filter((t) => TRANSPORTS.includes(t));
  const rs = tags.filter((t) => REVISIONS.includes(t));
  return (!ts.length || ts.includes(transport)) && (!rs.length || rs.includes(revision));
}

/** ${NAME} replaced by the JSON text of a let or a $save. */
function substitute(text, vars, where) {
  return text.replace(/\$\{([A-Za-z_]\w*)\}/g, (_, name) => {
    if (!vars.has(name)) throw new Error(`${where}: \${${name}} is neither a let nor a $save so far`);
    return vars.get(name);
  });
}

// }===================================================

// {=================================================== transports

/** One output line or message, as parsed (or the raw text, when it is not JSON). */
function asMessage(text) {
  try {
    return { text, value: parseJson(text) };
  } catch {
    return { text, value: undefined };
  }
}

/** Messages as they arrive; next() waits for the next one. */
class Inbox {
  constructor() {
    this.items = [];
    this.taken = 0;
    this.waiters = [];
    this.closed = false;
  }

  push(item) {
    this.items.push(item);
    this.wake();
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  next(what) {
    if (this.taken < this.items.length) return Promise.resolve(this.items[this.taken++]);
    return within(
      new Promise((resolve, reject) => {
        const w = () => {
          if (this.taken < this.items.length) {
            this.waiters = this.waiters.filter((x) => x !== w);
            resolve(this.items[this.taken++]);
          } else if (this.closed) {
            this.waiters = this.waiters.filter((x) => x !== w);
            reject(new Error(`the output ended before ${what}`));
          }
        };
        this.waiters.push(w);
      }),
      WAIT,
      what,
    );
  }

  rest() {
    return this.items.slice(this.taken);
  }
}

/** `luamcp serve ARGS APP`, a line per message. */
class Stdio {
  constructor(app, args) {
    const { command: cmd, args: argv } = command(['serve', ...args, app]);
    this.child = spawn(cmd, argv, { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.child.stderr.setEncoding('utf8').on('data', (d) => (this.stderr += d));
    this.child.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    this.inbox = new Inbox();
    let pending = Buffer.alloc(0);
    this.child.stdout.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      let nl;
      while ((nl = pending.indexOf(0x0a)) >= 0) {
        this.inbox.push(asMessage(pending.subarray(0, nl).toString('utf8')));
        pending = pending.subarray(nl + 1);
      }
    });
    this.child.stdout.on('end', () => {
      if (pending.length) this.inbox.push(asMessage(pending.toString('utf8')));
      this.inbox.closed = true;
      this.inbox.wake();
    });
  }

  async start() {}

  async send(text) {
    this.child.stdin.write(text + '\n');
  }

  status() {
    throw new Error('status is an HTTP check: tag the line http:');
  }

  /** Close stdin; the exit must be 0. The lines nobody expected. */
  async finish() {
    this.child.stdin.end();
    let exit;
    try {
      exit = await within(this.exited, WAIT, 'the server to exit after EOF');
    } catch (err) {
      this.child.kill('SIGKILL');
      throw err;
    }
    if (exit.code !== 0 || exit.signal) throw new Error(`the server exited with ${exit.code} (signal ${exit.signal})`);
    return this.inbox.rest();
  }

  kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** A Mcp-Name header value: as is when printable ASCII, else the base64 form. */
const headerValue = (s) => (/^[\x20-\x7e]*$/.test(s) ? s : `=?base64?${Buffer.from(s).toString('base64')}?=`);

/** `luamcp serve --http`, a POST per line; the messages of each response, as they arrive. */
class Http {
  constructor(app, args) {
    this.srv = new HttpServer(app, args);
    this.inbox = new Inbox();
    this.posts = [];
    this.extra = {};
  }

  get stderr() {
    return this.srv.stderr;
  }

  async start() {
    await this.srv.start();
  }

  /** Headers for one message: a 2026-07-28 request's from its body, else the session's. */
  headersFor(text) {
    const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      msg = undefined;
    }
    const version = msg?.params?._meta?.[ENVELOPE];
    if (typeof version === 'string') {
      h['MCP-Protocol-Version'] = version;
      if (typeof msg.method === 'string') h['Mcp-Method'] = msg.method;
      const p = msg.params;
      const name = ['tools/call', 'prompts/get'].includes(msg.method) ? p.name
        : msg.method === 'resources/read' ? p.uri
        : ['tasks/get', 'tasks/update', 'tasks/cancel'].includes(msg.method) ? p.taskId : undefined;
      if (typeof name === 'string') h['Mcp-Name'] = headerValue(name);
    } else {
      if (this.version) h['MCP-Protocol-Version'] = this.version;
      if (this.session) h['Mcp-Session-Id'] = this.session;
    }
    for (const [k, v] of Object.entries(this.extra)) {
      for (const have of Object.keys(h)) if (have.toLowerCase() === k.toLowerCase()) delete h[have];
      if (v !== null) h[k] = v;
    }
    this.extra = {};
    return { headers: h, initialize: msg?.method === 'initialize' };
  }

  /** Wait until every earlier POST has ended or had a message taken. */
  async settled() {
    for (const p of this.posts) {
      await within(
        new Promise((resolve) => {
          const w = () => {
            if (p.ended || p.firstIndex < this.inbox.taken) {
              this.inbox.waiters = this.inbox.waiters.filter((x) => x !== w);
              p.waiters = p.waiters.filter((x) => x !== w);
              resolve();
            }
          };
          this.inbox.waiters.push(w);
          p.waiters.push(w);
          w();
        }),
        WAIT,
        `the POST of line ${p.line} to end or answer before the next line is sent (a line that waits needs a < line between)`,
      );
    }
  }

  async send(text, line) {
    await this.settled();
    const { headers, initialize } = this.headersFor(text);
    const p = { line, ended: false, firstIndex: Infinity, waiters: [] };
    this.posts.push(p);
    const deliver = (value) => {
      p.firstIndex = Math.min(p.firstIndex, this.inbox.items.length);
      if (initialize && typeof value.value?.result?.protocolVersion === 'string') this.version = value.value.result.protocolVersion;
      this.inbox.push(value);
    };
    p.exchange = exchange(this.srv, { method: 'POST', headers, body: text }).then((ex) => {
      if (ex.headers['mcp-session-id']) this.session = ex.headers['mcp-session-id'];
      let seen = 0;
      const sync = () => {
        if (ex.sse) {
          for (; seen < ex.events.length; seen++) if (ex.events[seen].data) deliver(asMessage(ex.events[seen].data));
        } else if (ex.ended && !p.ended && ex.body !== '') deliver(asMessage(ex.body));
        if (ex.ended && !p.ended) {
          p.ended = true;
          for (const w of [...p.waiters]) w();
        }
      };
      ex.waiters.push(sync);
      sync();
      return ex;
    });
    p.exchange.catch((err) => {
      p.error = err;
      p.ended = true;
      for (const w of [...p.waiters]) w();
    });
  }

  async status(want) {
    const p = this.posts.at(-1);
    if (!p) throw new Error('status before any POST');
    const ex = await p.exchange;
    if (SHOW) process.stderr.write(`  status ${ex.status}\n`);
    if (ex.status !== want && !SHOW) {
      await ex.finished().catch(() => {});
      throw new Error(`HTTP status ${ex.status}, expected ${want}; body: ${ex.body.slice(0, 500)}`);
    }
  }

  /** SIGTERM, the responses to their end, exit 0; the messages nobody expected. */
  async finish() {
    await this.settled();
    this.srv.terminate();
    for (const p of this.posts) {
      await p.exchange.catch(() => {});
      if (!p.ended) {
        await within(new Promise((resolve) => {
          p.waiters.push(resolve);
          if (p.ended) resolve();
        }), WAIT, `the response to the POST of line ${p.line} to end`);
      }
      if (p.error) throw new Error(`the POST of line ${p.line} failed: ${p.error.message}`);
    }
    await this.srv.stopClean();
    return this.inbox.rest();
  }

  kill() {
    return this.srv.kill();
  }
}

// }===================================================

// {=================================================== running one

/**
 * The request with the 2026-07-28 envelope put in params._meta, unless it
 * has one. The line is edited as text: everything else stays byte for byte.
 */
function withEnvelope(text, capabilities) {
  let msg;
  try {
    msg = parseJson(text);
  } catch {
    return text;
  }
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Num);
  if (!isObject(msg) || typeof msg.method !== 'string' || msg.id === undefined) return text;
  const envelope = `"${ENVELOPE}":"${MODERN}","io.modelcontextprotocol/clientCapabilities":${JSON.stringify(capabilities)},` +
    `"io.modelcontextprotocol/clientInfo":${JSON.stringify(CLIENT_INFO)}`;
  const insert = (at, what) => text.slice(0, at) + what + text.slice(at);
  const after = (span) => text.indexOf('{', span[0]) + 1;
  if (msg.params === undefined) return insert(text.lastIndexOf('}'), `,"params":{"_meta":{${envelope}}}`);
  if (!isObject(msg.params)) return text;
  const meta = msg.params._meta;
  if (meta === undefined) {
    const empty = Object.keys(msg.params).length === 0;
    return insert(after(msg[SPANS].params), `"_meta":{${envelope}}${empty ? '' : ','}`);
  }
  if (!isObject(meta) || meta[ENVELOPE] !== undefined) return text;
  return insert(after(msg.params[SPANS]._meta), envelope + (Object.keys(meta).length ? ',' : ''));
}

/** initialize + notifications/initialized, outside the transcript's lines. */
async function initialize(conn, revision, capabilities) {
  await conn.send(JSON.stringify({
    jsonrpc: '2.0', id: 'transcript-init', method: 'initialize',
    params: { protocolVersion: revision, capabilities, clientInfo: CLIENT_INFO },
  }), 0);
  const m = await conn.inbox.next('the answer to initialize');
  if (m.value?.result?.protocolVersion !== revision) throw new Error(`initialize ${revision} answered ${m.text}`);
  await conn.send('{"jsonrpc":"2.0","method":"notifications/initialized"}', 0);
}

async function runOne(file, { header, steps }, transport, revision) {
  const rel = path.relative(REPO_ROOT, file);
  const app = path.resolve(REPO_ROOT, header.app);
  const conn = transport === 'stdio' ? new Stdio(app, header.args) : new Http(app, header.args);
  const vars = new Map();
  let step;
  try {
    await conn.start();
    vars.set('REVISION', JSON.stringify(revision));
    // a 2025-era revision: the runner initializes, unless the first line the run sends is an initialize
    const first = steps.find((s) => s.kind === 'send' && applies(s.tags, transport, revision));
    const selfInit = first && /"method"\s*:\s*"initialize"/.test(first.text);
    if (revision !== 'none' && revision !== MODERN && !selfInit) await initialize(conn, revision, header.capabilities);
    for (step of steps) {
      const where = `${rel}:${step.line}`;
      if (step.kind === 'let') {
        vars.set(step.name, toJson(parseJson(substitute(step.text, vars, where))));
        continue;
      }
      if (!applies(step.tags, transport, revision)) continue;
      const text = substitute(step.text, vars, where);
      if (step.kind === 'send') {
        await conn.send(revision === MODERN ? withEnvelope(text, header.capabilities) : text, step.line);
      } else if (step.kind === 'status') {
        if (transport === 'http') await conn.status(Number(text));
      } else if (step.kind === 'headers') {
        if (transport === 'http') conn.extra = JSON.parse(text);
      } else {
        const want = parseJson(text);
        const got = await conn.inbox.next(`the line of ${where}`);
        if (SHOW) process.stderr.write(`${where} ${transport} ${revision}: ${got.text}\n`);
        const diff = got.value === undefined ? 'not JSON' : match(want, got.value, vars);
        if (diff && !SHOW) {
          throw new Error(`${diff}\n  expected: ${pretty(want)}\n  got:      ${got.value === undefined ? got.text : pretty(got.value)}`);
        }
      }
    }
    step = undefined;
    const rest = await conn.finish();
    if (rest.length) throw new Error(`more output than the transcript expects:\n${rest.map((m) => `  ${m.text}`).join('\n')}`);
  } catch (err) {
    await conn.kill();
    const at = step ? `${rel}:${step.line}` : rel;
    err.message = `${at} (${transport}, ${revision}): ${err.message}\n--- server stderr ---\n${conn.stderr.slice(-4000)}`;
    throw err;
  }
}

// }===================================================

const wanted = [...process.argv.slice(2), ...(process.env.LUAMCP_TRANSCRIPTS || '').split(',')].filter(Boolean);
const files = readdirSync(HERE)
  .filter((f) => f.endsWith('.transcript'))
  .filter((f) => !wanted.length || wanted.some((w) => f === w || f === `${w}.transcript`))
  .sort();
if (wanted.length && !files.length) throw new Error(`no transcript named ${wanted.join(', ')}`);

// Transcripts run three at a time, and the runs of one (transport x
// revision) side by side: each has a server of its own, mostly waiting.
describe('transcripts', { concurrency: 3 }, () => {
  for (const f of files) {
    const file = path.join(HERE, f);
    const t = parseTranscript(file);
    test(f, { timeout: TEST_TIMEOUT, concurrency: true }, async (ctx) => {
      const runs = [];
      for (const revision of t.header.revision) {
        for (const transport of t.header.transports) {
          if (t.header.except.includes(`${transport} ${revision}`)) continue;
          runs.push(ctx.test(`${transport}, ${revision}`, () => runOne(file, t, transport, revision)));
        }
      }
      await Promise.all(runs);
    });
  }
});
