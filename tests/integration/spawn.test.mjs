// spawn.test.mjs — light threads of a call (mcp.spawn, mcp.all:
// core/reactor/call_threads.c). Concurrency is shown by events, not a clock:
// three waits of three kinds (mcp.http to a local origin, mcp.exec of a child
// that blocks on the test's fifo, mcp.socket to a local peer) are each held by
// the test until all three have started, so waits run one after the other
// would never finish. Then: a thread's error at its FILE:LINE, mcp.all failing
// as a whole (the others stopped), a cancel and a --timeout while the three
// are pending, threads left un-waited at the handler's end (each leaving no
// connection and no child behind), the memory limit across threads, what
// threads refuse, and luamcp test's fakes under them. The tools are
// tests/apps/spawn/scripts/spawn.lua.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { APPS, SCALE, TEST_TIMEOUT, WAIT, ms, run, withRaw, within } from './helpers.mjs';
import { answerOf, post, rawInitialize, withHttp } from './http-helpers.mjs';
import { REDIS, startRedis, stopChild } from './services.mjs';

const APP = path.join(APPS, 'spawn');
const opts = { timeout: TEST_TIMEOUT };

for (const k of ['http_proxy', 'https_proxy', 'all_proxy', 'HTTPS_PROXY', 'ALL_PROXY']) delete process.env[k];

// {====== the three outside parties, each holding its answer until released

/** An HTTP origin: every request is held (event 'request' with {req, res}). */
class Origin extends EventEmitter {
  constructor() {
    super();
    this.server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => this.emit('request', { req, res, url: req.url }));
    });
    this.sockets = new Set();
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }
  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = this.server.address().port;
    return this;
  }
  url(p) {
    return `http://127.0.0.1:${this.port}${p}`;
  }
  next(p) {
    return within(
      new Promise((resolve) => {
        const on = (r) => {
          if (r.url !== p) return;
          this.off('request', on);
          resolve(r);
        };
        this.on('request', on);
      }),
      WAIT,
      `a request for ${p} at the origin`,
    );
  }
  async stop() {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A TCP peer: answers "hello\n" with "world\n" once released. */
class Peer {
  constructor() {
    this.hellos = [];
    this.waiters = [];
    this.server = net.createServer((s) => {
      let got = '';
      s.on('data', (d) => {
        got += d;
        if (got === 'hello\n') {
          const w = this.waiters.shift();
          if (w) w(s);
          else this.hellos.push(s);
        }
      });
      s.on('error', () => {});
    });
  }
  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = this.server.address().port;
    return this;
  }
  /** The socket of the next "hello" (one already seen and not taken first);
      each hello goes to one waiter. */
  hello() {
    const seen = this.hellos.shift();
    if (seen) return Promise.resolve(seen);
    return within(new Promise((resolve) => this.waiters.push(resolve)), WAIT, 'hello at the peer');
  }
  async stop() {
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A fifo the child reads: opening it for writing completes once the child
    opened it for reading — the child's start, as an event. */
async function fifoIn(dir, name) {
  const file = path.join(dir, name);
  execFileSync('mkfifo', [file]);
  return file;
}

const closed = (socket, what) =>
  socket.destroyed ? Promise.resolve() : within(new Promise((resolve) => socket.once('close', resolve)), WAIT, what);

/** Wait until process pid is gone (or a zombie no longer: reaped). */
async function gone(pid, what) {
  const end = Date.now() + WAIT;
  for (;;) {
    let state;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      state = stat.slice(stat.lastIndexOf(')') + 2)[0];
    } catch {
      return;
    }
    if (Date.now() > end) assert.fail(`${what}: process ${pid} still there (state ${state})`);
    await delay(20);
  }
}

async function pidIn(file) {
  return Number((await readFile(file, 'utf8')).trim());
}

/** Everything one test needs: origin, peer, a temp dir with a fifo. */
async function withParties(body) {
  const origin = await new Origin().start();
  const peer = await new Peer().start();
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-spawn-'));
  try {
    const fifo = await fifoIn(dir, 'fifo');
    const args = { url: origin.url('/hold'), pidfile: path.join(dir, 'pid'), fifo, port: peer.port };
    return await body({ origin, peer, dir, fifo, args });
  } finally {
    await origin.stop();
    await peer.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** All three have started: the origin's request, the peer's hello, the
    child's open of the fifo (resolved in any order, each an event). */
async function allStarted({ origin, peer, fifo, args }, withSocket = true) {
  const [held, sock, writer] = await Promise.all([
    origin.next('/hold'),
    withSocket ? peer.hello() : null,
    within(open(fifo, 'w'), WAIT, 'the child to open the fifo'),
  ]);
  const pid = await pidIn(args.pidfile);
  return { held, sock, writer, pid };
}

async function release({ held, sock, writer }) {
  held.res.end('held');
  sock?.write('world\n');
  await writer.write('go\n');
  await writer.close();
}

// }======

let nextId = 1;
const callMsg = (name, args, id = `c${nextId++}`) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const textOf = (r) => r.result.content.map((c) => c.text).join('\n');

for (const tool of ['three_all', 'three_spawn']) {
  test(`${tool}: an HTTP request, a child and a socket wait at once (each held until all three started)`, opts, () =>
    withParties((p) =>
      withRaw(['--no-watch', APP], async (srv) => {
        await srv.initialize();
        const m = callMsg(tool, p.args);
        srv.send(m);
        const started = await allStarted(p);
        // the engine still answers while the call's three threads wait
        assert.deepEqual((await srv.call('ping', 'ping')).result, {});
        await release(started);
        const r = JSON.parse(await srv.reply(JSON.stringify(m.id)));
        const want = { body: 'held', out: 'go\n', line: 'world' };
        if (tool === 'three_spawn') want.again = 'held';
        assert.deepEqual(r.result.structuredContent, want, JSON.stringify(r));
        await gone(started.pid, 'the child after its exit');
      }),
    ),
  );
}

test('over Streamable HTTP: the three at once, two calls side by side', opts, () =>
  withParties(async (p) => {
    const dir2 = path.join(p.dir, 'two');
    execFileSync('mkdir', [dir2]);
    const fifo2 = await fifoIn(dir2, 'fifo');
    const args2 = { ...p.args, url: p.origin.url('/hold2'), pidfile: path.join(dir2, 'pid'), fifo: fifo2 };
    await withHttp(APP, ['--no-watch'], async (srv) => {
      const { session } = await rawInitialize(srv);
      const a = post(srv, callMsg('three_all', p.args), { session });
      const b = post(srv, callMsg('three_spawn', args2), { session });
      // six waits of two calls, all pending at once
      const [h1, h2, s1, s2, w1, w2] = await Promise.all([
        p.origin.next('/hold'),
        p.origin.next('/hold2'),
        p.peer.hello(),
        p.peer.hello(),
        within(open(p.fifo, 'w'), WAIT, 'child 1'),
        within(open(fifo2, 'w'), WAIT, 'child 2'),
      ]);
      h1.res.end('held');
      h2.res.end('held');
      s1.write('world\n');
      s2.write('world\n');
      for (const w of [w1, w2]) {
        await w.write('go\n');
        await w.close();
      }
      assert.deepEqual(answerOf(await a).result.structuredContent, { body: 'held', out: 'go\n', line: 'world' });
      assert.deepEqual(answerOf(await b).result.structuredContent, { body: 'held', out: 'go\n', line: 'world', again: 'held' });
    });
  }),
);

test("a thread's error is raised at its waiter with the thread's FILE:LINE", opts, () =>
  withParties((p) =>
    withRaw(['--no-watch', APP], async (srv) => {
      await srv.initialize();
      const m = callMsg('thread_error', { url: p.origin.url('/hold') });
      srv.send(m);
      (await p.origin.next('/hold')).res.end('x'); // the thread fails after its wait: resumed by the loop
      const r = JSON.parse(await srv.reply(JSON.stringify(m.id)));
      assert.equal(r.result.isError, true);
      assert.match(textOf(r), /spawn\.lua:61: the thread failed here$/);

      const m2 = callMsg('thread_error_caught', { url: p.origin.url('/hold') });
      srv.send(m2);
      (await p.origin.next('/hold')).res.end('x');
      const r2 = JSON.parse(await srv.reply(JSON.stringify(m2.id)));
      assert.equal(r2.result.structuredContent.ok, false);
      assert.match(r2.result.structuredContent.err, /spawn\.lua:75: attempt to index a nil value \(local 't'\)$/);
      assert.equal(r2.result.structuredContent.status, 'mcp.thread (failed)');
    }),
  ),
);

test('mcp.all fails as a whole: the first error is raised, the others are stopped', opts, () =>
  withParties((p) =>
    withRaw(['--no-watch', APP], async (srv) => {
      await srv.initialize();
      const m = callMsg('all_fails', { url: p.args.url, pidfile: p.args.pidfile, fifo: p.fifo, bad: p.origin.url('/bad') });
      srv.send(m);
      const bad = p.origin.next('/bad');
      const { held, writer, pid } = await allStarted(p, false);
      (await bad).res.end('boom');
      const r = JSON.parse(await srv.reply(JSON.stringify(m.id)));
      assert.equal(r.result.structuredContent.ok, false, JSON.stringify(r));
      assert.match(r.result.structuredContent.err, /spawn\.lua:92: all failed: boom$/);
      await closed(held.req.socket, "the stopped thread's HTTP connection to close");
      await gone(pid, "the stopped thread's child");
      await writer.close();
    }),
  ),
);

test('a cancel while three thread waits are pending: no answer, no connection, socket or child left', opts, () =>
  withParties((p) =>
    withRaw(['--no-watch', APP], async (srv) => {
      await srv.initialize();
      const m = callMsg('three_all', p.args, 'doomed');
      srv.send(m);
      const { held, sock, writer, pid } = await allStarted(p);
      srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'doomed', reason: 'test' } });
      await closed(held.req.socket, "the origin's connection to close");
      await closed(sock, "the peer's socket to close");
      await gone(pid, 'the child');
      await writer.close();
      assert.deepEqual((await srv.call('after', 'ping')).result, {});
      assert.ok(!srv.lines.some((l) => l.includes('"doomed"')), `a reply to the cancelled call: ${srv.lines.join('\n')}`);
    }),
  ),
);

test('--timeout while three thread waits are pending: the timeout error, nothing left behind', opts, () =>
  withParties((p) => {
    const secs = 2 * SCALE;
    return withRaw(['--no-watch', '--timeout', String(secs), APP], async (srv) => {
      await srv.initialize();
      const m = callMsg('three_all', p.args);
      srv.send(m);
      const { held, sock, writer, pid } = await allStarted(p);
      const r = JSON.parse(await srv.reply(JSON.stringify(m.id), ms(15000)));
      assert.equal(r.result.isError, true);
      assert.match(textOf(r), new RegExp(`call timed out after ${secs} s`));
      await closed(held.req.socket, "the origin's connection to close");
      await closed(sock, "the peer's socket to close");
      await gone(pid, 'the child');
      await writer.close();
    });
  }),
);

test("threads not waited for are stopped when the handler returns", opts, () =>
  withParties((p) =>
    withRaw(['--no-watch', APP], async (srv) => {
      await srv.initialize();
      const m = callMsg('unwaited', { url: p.args.url, pidfile: p.args.pidfile, fifo: p.fifo, gate: p.origin.url('/gate') });
      srv.send(m);
      const gate = p.origin.next('/gate');
      const { held, writer, pid } = await allStarted(p, false);
      (await gate).res.end('open');
      const r = JSON.parse(await srv.reply(JSON.stringify(m.id)));
      assert.equal(textOf(r), 'returned');
      await closed(held.req.socket, "the un-waited thread's HTTP connection to close");
      await gone(pid, "the un-waited thread's child");
      await writer.close();
      assert.match(srv.stderr, /a thread failed and nothing waited for it: .*spawn\.lua:\d+: nobody waits for this/);
    }),
  ),
);

test('the memory limit holds for the call across its threads', opts, () =>
  withParties((p) =>
    withRaw(['--no-watch', '--memory-limit', '8', APP], async (srv) => {
      await srv.initialize();
      // each thread alone fits (2 MiB, then 4 more), the three together do not
      const mb = 1 << 20;
      const small = callMsg('memory', { url: p.origin.url('/hold'), size: 1000 });
      srv.send(small);
      for (let i = 0; i < 3; i++) (await p.origin.next('/hold')).res.end('x');
      assert.equal(textOf(JSON.parse(await srv.reply(JSON.stringify(small.id)))), '6000');
      const m = callMsg('memory', { url: p.origin.url('/hold'), size: 2 * mb });
      srv.send(m);
      const holds = [];
      for (let i = 0; i < 3; i++) holds.push(await p.origin.next('/hold'));
      for (const h of holds) h.res.end('x');
      const r = JSON.parse(await srv.reply(JSON.stringify(m.id)));
      assert.equal(r.result.isError, true, JSON.stringify(r).slice(0, 500));
      assert.match(textOf(r), /spawn\.lua:\d+: the call ran out of memory \(limit 8 MiB per call\)/);
      assert.deepEqual((await srv.call('after', 'ping')).result, {});
    }),
  ),
);

test('2000 threads asleep at once; a chain of 2000 threads each waiting for the one before; spawns nested past Lua\'s C limit are an error', opts, () =>
  withRaw(['--no-watch', APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call('many', 'tools/call', { name: 'many', arguments: { n: 2000 } });
    const got = r.result.structuredContent;
    assert.equal(got.sum, (2000 * 2001) / 2, JSON.stringify(r).slice(0, 300));
    assert.equal(got.depth, 2000);
    assert.match(got.nested, /spawn\.lua:\d+: C stack overflow/);
    assert.deepEqual((await srv.call('after', 'ping')).result, {});
  }),
);

test('what threads refuse, and mcp.now()', opts, () =>
  withRaw(['--no-watch', APP], async (srv) => {
    await srv.initialize();
    const r = (await srv.call('m1', 'tools/call', { name: 'misuse', arguments: {} })).result.structuredContent;
    assert.match(r.not_fn, /function expected, got number/);
    assert.match(r.all_not_fn, /mcp\.all: item 2 is a number, not a function/);
    assert.match(r.coroutine, /not from a coroutine it made/);
    assert.equal(r.all_empty, 0);
    assert.equal(r.results, 'a,b,c');
    assert.match(r.yield, /spawn\.lua:\d+: mcp\.spawn: a thread may only yield by waiting/);
    assert.match(r.tx, /mcp\.db\.tx: a thread of mcp\.spawn cannot open a transaction/);
    assert.equal(r.now, true);
    const again = (await srv.call('m2', 'tools/call', { name: 'misuse', arguments: {} })).result.structuredContent;
    assert.equal(again.stale, "mcp.spawn: this thread's call has ended");
  }),
);

test("luamcp test: the fakes answer threads, whose waits overlap on the virtual clock", opts, async () => {
  const { code, stdout, stderr } = await run(['test', APP]);
  assert.equal(code, 0, stdout + stderr);
  assert.match(stdout, /4 passed, 0 failed/);
});

test('mcp.redis, mcp.store and mcp.db from threads; a transaction stays the handler\'s', { ...opts, skip: !existsSync(REDIS) && 'redis-server is not installed' }, async () => {
  const redis = await startRedis();
  const data = await mkdtemp(path.join(tmpdir(), 'luamcp-spawn-data-'));
  try {
    await withRaw(['--no-watch', '--store', `redis://127.0.0.1:${redis.port}/5`, '--data', data, APP], async (srv) => {
      await srv.initialize();
      let r;
      for (let i = 0; ; i++) { // the store's connection comes up after the start (a call says "unreachable")
        r = await srv.call(`s${i}`, 'tools/call', { name: 'stores', arguments: {} });
        if (!/unreachable/.test(JSON.stringify(r)) || i > 100) break;
        await delay(20);
      }
      const got = r.result.structuredContent;
      assert.ok(got, JSON.stringify(r));
      assert.equal(typeof got.n, 'number');
      assert.equal(got.v, 'v');
      assert.equal(got.one, 1);
      assert.match(got.refused, /mcp\.db\.one: a thread of mcp\.spawn cannot use the database while its handler holds a transaction/);
      assert.equal(got.three, 3);
    });
  } finally {
    await stopChild(redis.child, redis.exited);
    await rm(data, { recursive: true, force: true });
  }
});

test('ctx from threads: log, progress and sleep work (a thread waits for a thread; mcp.all stops a 30 s sleep); questions to the client are refused', opts, () =>
  withRaw(['--no-watch', APP], async (srv) => {
    await srv.initialize();
    srv.send({ jsonrpc: '2.0', id: 'lv', method: 'logging/setLevel', params: { level: 'info' } });
    await srv.reply('"lv"');
    srv.send({ jsonrpc: '2.0', id: 'ctx', method: 'tools/call', params: { name: 'ctx_threads', arguments: {}, _meta: { progressToken: 'p1' } } });
    const r = JSON.parse(await srv.reply('"ctx"'));
    const got = r.result.structuredContent;
    assert.equal(got.a, 'slept');
    assert.equal(got.b, 'progressed');
    assert.equal(got.chain, 'inner+outer');
    assert.equal(got.all_ok, false);
    assert.match(got.all_err, /spawn\.lua:\d+: woke and failed$/);
    assert.match(got.asked, /ctx:elicit must be called from the handler itself \(not a coroutine it made, nor a thread of mcp\.spawn\)/);
    assert.ok(srv.lines.some((l) => l.includes('notifications/message') && l.includes('from thread 1')), srv.lines.join('\n'));
    assert.ok(srv.lines.some((l) => l.includes('notifications/progress') && l.includes('"half"')), srv.lines.join('\n'));
  }),
);
