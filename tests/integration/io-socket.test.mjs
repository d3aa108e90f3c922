// io-socket.test.mjs — mcp.socket (core/io/io_socket.c): cosockets with
// luasocket's client API. Calls that connect, send and receive park on the
// engine's loop (200 at once overlap, ping stays prompt); Debian's lua-redis
// runs through it against a real redis-server; receive patterns, partial
// data on a timeout, "closed", unix sockets; the call's timeout and
// notifications/cancelled close the socket (the peer sees it); names resolve
// without blocking, and a name that does not resolve is an error, not a hang.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { closeHttpSdk, connectHttpSdk, withHttp } from './http-helpers.mjs';
import { APPS, SCALE, TEST_TIMEOUT, WAIT, ms, rawMember, removeTemp, tempApp, withRaw, within } from './helpers.mjs';

const APP = path.join(APPS, 'io');
const REDIS = '/usr/bin/redis-server';
const opts = { timeout: TEST_TIMEOUT };

// {====== node servers the tools talk to

/** A TCP (or unix, with `at`) server on 127.0.0.1:0; onConn(socket) sets up
    each connection. Counts connections and their closes. */
async function server(onConn, at) {
  const s = { conns: new Set(), opened: 0, closed: 0, waiters: [] };
  const wake = () => {
    for (const w of [...s.waiters]) w();
  };
  s.srv = net.createServer((c) => {
    s.opened++;
    s.conns.add(c);
    c.on('error', () => {});
    c.on('close', () => {
      s.closed++;
      s.conns.delete(c);
      wake();
    });
    onConn(c);
    c.on('data', () => setImmediate(wake)); // after onConn's own handler
    wake();
  });
  await new Promise((resolve) => (at ? s.srv.listen(at, resolve) : s.srv.listen(0, '127.0.0.1', resolve)));
  s.port = at ? undefined : s.srv.address().port;
  /** Wait until pred(s) holds. */
  s.until = (pred, what, limit = WAIT) =>
    within(
      new Promise((resolve) => {
        const w = () => {
          if (pred(s)) {
            s.waiters = s.waiters.filter((x) => x !== w);
            resolve();
          }
        };
        s.waiters.push(w);
        w();
      }),
      limit,
      what,
    );
  s.close = () => {
    for (const c of s.conns) c.destroy();
    return new Promise((resolve) => s.srv.close(resolve));
  };
  return s;
}

/** Replies `re:<line>` to each line, after `after` ms. */
const lineReplier = (after) => (c) => {
  let pending = '';
  c.on('data', (d) => {
    pending += d;
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      setTimeout(() => c.writable && c.write(`re:${line}\n`), after);
    }
  });
};

/** Notes what arrives, never answers. */
const silent = (c) => {
  c.got = '';
  c.on('data', (d) => (c.got += d));
};

// }======

const call = (srv, id, name, args, limit) => srv.call(id, 'tools/call', { name, arguments: args }, limit);
const text = (r) => {
  assert.ok(r.result, JSON.stringify(r));
  return r.result.content[0].text;
};
const structured = (r) => {
  assert.ok(r.result && !r.result.isError, JSON.stringify(r));
  return r.result.structuredContent;
};

test('200 calls waiting on sockets at once overlap; ping and tools/list answer meanwhile', opts, async () => {
  const peer = await server(lineReplier(500));
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const t0 = Date.now();
      const n = 200;
      for (let i = 0; i < n; i++) {
        srv.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'sock_line', arguments: { port: peer.port, text: `n${i}` } } });
      }
      await peer.until((p) => p.opened === n, 'all 200 connections');
      const answered = () => srv.lines.filter((l) => /^\d+$/.test(rawMember(l, ['id']) ?? '')).length;
      for (const method of ['ping', 'tools/list']) {
        const t = Date.now();
        const r = await srv.call(method, method, method === 'ping' ? undefined : {});
        assert.ok(r.result, JSON.stringify(r));
        assert.ok(Date.now() - t < ms(50), `${method} took ${Date.now() - t} ms while 200 calls wait`);
      }
      assert.equal(answered(), 0, 'the calls waited for their peer');
      for (let i = 0; i < n; i++) assert.equal(text(JSON.parse(await srv.reply(String(i)))), `re:n${i}`);
      const wall = Date.now() - t0;
      assert.ok(wall < ms(1500), `200 calls of 500 ms took ${wall} ms: they did not overlap`);
      await peer.until((p) => p.closed === n, 'every socket closed by its <close> variable');
    });
  } finally {
    await peer.close();
  }
});

// {====== lua-redis

async function freePort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** redis-server on a free loopback port: {port, child}; retries on a conflict. */
async function startRedis() {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child = spawn(REDIS, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const ready = await within(
      new Promise((resolve) => {
        const seen = (d) => {
          out += d;
          if (out.includes('Ready to accept connections')) resolve(true);
        };
        child.stdout.on('data', seen);
        child.stderr.on('data', seen);
        child.on('exit', () => resolve(false));
      }),
      WAIT,
      'redis-server to start',
    );
    if (ready) return { port, child };
    if (attempt >= 4 || !/in use/i.test(out)) throw new Error(`redis-server did not start:\n${out}`);
  }
}

test('Debian\'s lua-redis, through mcp.socket, against a real redis-server', { ...opts, skip: !existsSync(REDIS) && 'redis-server is not installed' }, async () => {
  const redis = await startRedis();
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const port = redis.port;
      assert.equal(text(await call(srv, 1, 'redis_set', { port, key: 'greeting', value: 'hello redis' })), 'true');
      assert.equal(text(await call(srv, 2, 'redis_get', { port, key: 'greeting' })), 'hello redis');
      assert.equal(text(await call(srv, 3, 'redis_get', { port, key: 'missing' })), '(nil)');

      // 100 INCRs at once: each call gets its own value, 1..100
      const n = 100;
      for (let i = 0; i < n; i++) {
        srv.send({ jsonrpc: '2.0', id: `incr${i}`, method: 'tools/call', params: { name: 'redis_incr', arguments: { port, key: 'counter' } } });
      }
      const got = [];
      for (let i = 0; i < n; i++) got.push(Number(text(JSON.parse(await srv.reply(`"incr${i}"`)))));
      assert.deepEqual(got.sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i + 1));
      assert.equal(text(await call(srv, 4, 'redis_get', { port, key: 'counter' })), String(n));

      // the connections wait in mcp.state; later calls reuse them, each
      // parking itself (not the call that connected) on the socket
      const pool = Number(text(await call(srv, 5, 'redis_pool_size', { port })));
      assert.ok(pool >= 1 && pool <= n, `pool of ${pool}`);
      for (let i = 0; i < 10; i++) assert.equal(text(await call(srv, `seq${i}`, 'redis_incr', { port, key: 'counter' })), String(n + 1 + i));
      assert.equal(Number(text(await call(srv, 6, 'redis_pool_size', { port }))), pool, 'no new connection for sequential calls');
    });
  } finally {
    redis.child.kill('SIGKILL');
  }
});

// }======

test('receive: "*l" drops CRs, n bytes, "*a" to the end, a prefix, then "closed"', opts, async () => {
  const peer = await server((c) => c.once('data', () => c.end('o\rne\r\ntwo\nabcdefg')));
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const r = structured(await call(srv, 1, 'sock_run', {
        port: peer.port,
        send: 'go\n',
        receive: [{ pattern: '*l' }, { pattern: 'l' }, { pattern: '3', prefix: '>' }, { pattern: '*a' }, { pattern: '*l' }, { pattern: 'a' }],
      }));
      assert.equal(r.peer, '127.0.0.1');
      assert.equal(r.sent, 3);
      assert.deepEqual(r.results.map((x) => [x.data, x.err, x.partial]), [
        ['one', undefined, undefined],
        ['two', undefined, undefined],
        ['>abc', undefined, undefined],
        ['defg', undefined, undefined],
        [undefined, 'closed', ''],
        ['', undefined, undefined], // "*a" at the end: the empty rest, no error (luasocket)
      ]);
      assert.equal(r.close, 1);
      assert.equal(r.after_close, 'closed');
    });
  } finally {
    await peer.close();
  }
});

test('receive with settimeout: nil, "timeout", partial — and the socket stays usable', opts, async () => {
  const later = ms(700);
  const peer = await server((c) =>
    c.once('data', () => {
      c.write('part');
      setTimeout(() => c.writable && c.write('ial\n'), later);
    }));
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const r = structured(await call(srv, 1, 'sock_run', {
        port: peer.port,
        send: 'go\n',
        receive: [{ pattern: '*l', timeout: 0.2 }, { pattern: '*l', timeout: -1, prefix: 'part' }],
      }));
      const [first, second] = r.results;
      assert.deepEqual([first.data, first.err, first.partial], [undefined, 'timeout', 'part']);
      assert.ok(first.seconds >= 0.19 && first.seconds < 0.2 + later / 1000, `timed out after ${first.seconds} s`);
      assert.equal(second.data, 'partial');
      // settimeout(0): nothing there, no wait
      const z = structured(await call(srv, 2, 'sock_run', { port: peer.port, receive: [{ pattern: '5', timeout: 0 }] }));
      assert.deepEqual([z.results[0].err, z.results[0].partial], ['timeout', '']);
      assert.ok(z.results[0].seconds < 0.05 * SCALE, `settimeout(0) waited ${z.results[0].seconds} s`);
    });
  } finally {
    await peer.close();
  }
});

test('the peer closes: receive(n) gives nil, "closed", partial', opts, async () => {
  const peer = await server((c) => c.end('abc'));
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const r = structured(await call(srv, 1, 'sock_run', { port: peer.port, receive: [{ pattern: '5' }, { pattern: '*l' }] }));
      assert.deepEqual(r.results.map((x) => [x.data, x.err, x.partial]), [
        [undefined, 'closed', 'abc'],
        [undefined, 'closed', ''],
      ]);
    });
  } finally {
    await peer.close();
  }
});

test('unix sockets: connect(path), send, receive', opts, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-sock-'));
  const at = path.join(dir, 'echo.sock');
  const peer = await server(lineReplier(0), at);
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const r = structured(await call(srv, 1, 'sock_run', { path: at, send: 'ping\n', receive: [{ pattern: '*l' }] }));
      assert.equal(r.results[0].data, 're:ping');
      const missing = structured(await call(srv, 2, 'sock_run', { path: path.join(dir, 'nobody.sock') }));
      assert.match(missing.connect_error, /no such file|not found|refused/i);
    });
  } finally {
    await peer.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('one socket shared by calls through mcp.state: each parks itself; a second user meanwhile gets "socket busy"', opts, async () => {
  const peer = await server(lineReplier(300));
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      assert.equal(text(await call(srv, 1, 'shared_open', { port: peer.port })), 'open');
      srv.send({ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'shared_line', arguments: { text: 'a' } } });
      await delay(50);
      const b = structured(await call(srv, 'b', 'shared_line', { text: 'b' }));
      assert.equal(b.err, 'socket busy');
      assert.equal(JSON.parse(await srv.reply('"a"')).result.structuredContent.line, 're:a');
      assert.equal(structured(await call(srv, 'c', 'shared_line', { text: 'c' })).line, 're:c');
      assert.equal(peer.opened, 1);
    });
  } finally {
    await peer.close();
  }
});

test('--timeout while waiting on a socket: isError "timed out", the peer sees the close, the server goes on', opts, async () => {
  const quiet = await server(silent);
  const echo = await server(lineReplier(0));
  try {
    await withRaw([APP, '--timeout', '1'], async (srv) => {
      await srv.initialize();
      const r = await call(srv, 1, 'sock_line', { port: quiet.port });
      assert.equal(r.result?.isError, true, JSON.stringify(r));
      assert.match(r.result.content[0].text, /timed out/);
      await quiet.until((p) => p.opened === 1 && p.closed === 1, 'the peer to see its connection closed', ms(2000));
      assert.deepEqual((await srv.call(2, 'ping')).result, {});
      assert.equal(text(await call(srv, 3, 'sock_line', { port: echo.port, text: 'still here' })), 're:still here');
    });
  } finally {
    await quiet.close();
    await echo.close();
  }
});

test('notifications/cancelled during receive: no reply, the peer sees the close; a shared socket then says "closed"', opts, async () => {
  const quiet = await server(silent);
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      srv.send({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'sock_line', arguments: { port: quiet.port } } });
      await quiet.until((p) => [...p.conns].some((c) => c.got.includes('\n')), 'the line to arrive');
      srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'test' } });
      await quiet.until((p) => p.closed === 1, 'the peer to see its connection closed', ms(2000));

      // the same with a socket kept in mcp.state: the object is closed after
      assert.equal(text(await call(srv, 2, 'shared_open', { port: quiet.port })), 'open');
      srv.send({ jsonrpc: '2.0', id: 'c2', method: 'tools/call', params: { name: 'shared_line', arguments: { text: 'x' } } });
      await quiet.until((p) => [...p.conns].some((c) => c.got.includes('x\n')), 'the shared line to arrive');
      srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c2', reason: 'test' } });
      await quiet.until((p) => p.closed === 2, 'the shared socket closed', ms(2000));
      assert.equal(structured(await call(srv, 3, 'shared_line', { text: 'y' })).err, 'closed');

      assert.deepEqual((await srv.call(4, 'ping')).result, {});
      await delay(ms(100));
      assert.ok(!srv.lines.some((l) => ['"c1"', '"c2"'].includes(rawMember(l, ['id']))), 'no reply for a cancelled call');
    });
  } finally {
    await quiet.close();
  }
});

test('names: "localhost" resolves (off the loop); a name that does not resolve is an error, not a hang', opts, async () => {
  const peer = await server(lineReplier(0));
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const r = structured(await call(srv, 1, 'sock_run', { host: 'localhost', port: peer.port, send: 'hi\n', receive: [{ pattern: '*l' }] }));
      assert.equal(r.results[0].data, 're:hi');
      const bad = structured(await call(srv, 2, 'sock_run', { host: 'nonexistent.invalid', port: peer.port, timeout: 5 }, ms(15_000)));
      assert.equal(typeof bad.connect_error, 'string', JSON.stringify(bad));
      assert.equal(bad.results, undefined);
      const refused = structured(await call(srv, 3, 'sock_run', { port: await freePort() }));
      assert.equal(refused.connect_error, 'connection refused');
    });
  } finally {
    await peer.close();
  }
});

test('over HTTP: calls on worker threads and the engine share the loop (names resolved on the pool, a shared socket)', opts, async () => {
  const peer = await server(lineReplier(50));
  try {
    await withHttp(APP, [], async (srv) => {
      const conn = await connectHttpSdk(srv);
      try {
        const { client } = conn;
        const tool = (name, args) => client.callTool({ name, arguments: args });
        const runs = [];
        for (let i = 0; i < 40; i++) {
          runs.push(tool('sock_run', { host: i % 2 ? 'localhost' : '127.0.0.1', port: peer.port, send: `h${i}\n`, receive: [{ pattern: '*l' }] }));
        }
        const got = await Promise.all(runs);
        got.forEach((r, i) => assert.equal(r.structuredContent.results[0].data, `re:h${i}`, JSON.stringify(r)));
        assert.equal((await tool('shared_open', { port: peer.port })).content[0].text, 'open');
        const lines = await Promise.all(Array.from({ length: 10 }, (_, i) => tool('shared_line', { text: `s${i}` })));
        const ok = lines.filter((r) => r.structuredContent.line);
        assert.ok(ok.length >= 1, JSON.stringify(lines));
        for (const r of lines) assert.ok(r.structuredContent.line?.startsWith('re:s') || r.structuredContent.err === 'socket busy', JSON.stringify(r));
        assert.match((await tool('shared_line', { text: 'last' })).structuredContent.line, /^re:last$/);
      } finally {
        await closeHttpSdk(conn);
      }
    });
  } finally {
    await peer.close();
  }
});

test('hot reload: a socket kept in mcp.state does not carry over; the old state closes it', opts, async () => {
  const peer = await server(lineReplier(0));
  const dir = await tempApp({ 'scripts/socket.lua': await readFile(path.join(APP, 'scripts', 'socket.lua'), 'utf8') });
  try {
    await withRaw([dir, '--log-level', 'info'], async (srv) => {
      await srv.initialize();
      assert.equal(text(await call(srv, 1, 'shared_open', { port: peer.port })), 'open');
      assert.equal(structured(await call(srv, 2, 'shared_line', { text: 'before' })).line, 're:before');
      srv.child.kill('SIGHUP');
      await within((async () => {
        while (!/reloaded /.test(srv.stderr)) await delay(10);
      })(), WAIT, 'the reload');
      await peer.until((p) => p.closed === 1, 'the old state to close the socket');
      assert.equal(structured(await call(srv, 3, 'shared_line', { text: 'after' })).err, 'no shared socket');
    });
  } finally {
    await peer.close();
    await removeTemp(dir);
  }
});

test('send: what the kernel does not take at once is written from the loop; a send timeout gives nil, "timeout", last byte and closes', opts, async () => {
  const bytes = 16 << 20;
  // reads nothing for a while, then everything, then answers the count
  const slow = await server((c) => {
    let n = 0;
    c.pause();
    setTimeout(() => c.resume(), 300);
    c.on('data', (d) => {
      n += d.length;
      if (n === bytes + 1) c.write(`${n}\n`);
    });
  });
  const stuck = await server((c) => c.pause()); // never reads
  try {
    await withRaw([APP], async (srv) => {
      await srv.initialize();
      const t = Date.now();
      srv.send({ jsonrpc: '2.0', id: 'bulk', method: 'tools/call', params: { name: 'sock_bulk', arguments: { port: slow.port, bytes } } });
      assert.ok((await srv.call('p', 'ping')).result, 'ping while the send waits');
      const r = structured(JSON.parse(await srv.reply('"bulk"')));
      assert.deepEqual([r.sent, r.line], [bytes + 1, String(bytes + 1)]);
      assert.ok(Date.now() - t >= 250, 'the peer held the data back: the send waited');

      const to = structured(await call(srv, 2, 'sock_bulk', { port: stuck.port, bytes, timeout: 0.3 }));
      assert.equal(to.err, 'timeout', JSON.stringify(to));
      assert.ok(to.last > 0 && to.last < bytes, `last byte sent: ${to.last}`);
      for (const c of stuck.conns) c.resume(); // reads what did get through, then the end
      await stuck.until((p) => p.closed === 1, 'the stuck peer to see the close');
    });
  } finally {
    await slow.close();
    await stuck.close();
  }
});
