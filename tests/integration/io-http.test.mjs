// io-http.test.mjs — mcp.http (core/io/io_http.c): handlers that fetch from a
// local node HTTP server (the "origin", 127.0.0.1 on a free port) while the
// reactor keeps answering: 200 transfers in flight over stdio and over
// Streamable HTTP with ping/tools/list answering meanwhile; the request and
// response mapping (JSON both ways, headers, statuses, redirects, size cap,
// TLS verification); transport errors as Lua errors naming the URL; the
// call's deadline and a client's cancel closing the origin's connection;
// connection reuse across calls. The tools are tests/apps/io/scripts/http.lua.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import zlib from 'node:zlib';

import { APPS, SCALE, TEST_TIMEOUT, ms, withRaw, within } from './helpers.mjs';
import { answerOf, post, rawInitialize, rpc, withHttp } from './http-helpers.mjs';

const IO_APP = path.join(APPS, 'io');
const opts = { timeout: TEST_TIMEOUT };

// curl honours these: the origin is reached directly
for (const k of ['http_proxy', 'https_proxy', 'all_proxy', 'HTTPS_PROXY', 'ALL_PROXY']) delete process.env[k];

// {=================================================== the origin server

/**
 * The server the tools fetch from. Counts TCP connections, requests in
 * flight (and the most at once), and emits 'request' (req) for each one.
 * Routes:
 *   /delay/MS         200 "ok" after MS milliseconds
 *   /hold             200 "ok" once the test calls release()
 *   /echo             JSON {method, url, headers, body} of the request
 *   /status/N         status N, text body
 *   /redirect/N       302 to /redirect/N-1, /redirect/0 goes to /echo
 *   /to-file          302 to file:///etc/passwd
 *   /big/N, /chunked/N  N bytes (with Content-Length / chunked)
 *   /gzip             a gzip-encoded JSON body
 *   /headers          repeated X-Multi, application/problem+json body
 *   /badjson          application/json that does not parse
 *   /hang             never answers
 *   /drip             headers, then a byte every 50 ms, never ends
 */
class Origin extends EventEmitter {
  constructor({ tls } = {}) {
    super();
    this.connections = 0;
    this.requests = 0;
    this.inFlight = 0;
    this.maxInFlight = 0;
    this.held = [];
    this.sockets = new Set();
    const handler = (req, res) => this.route(req, res);
    this.server = tls ? https.createServer(tls, handler) : http.createServer(handler);
    this.scheme = tls ? 'https' : 'http';
    this.server.keepAliveTimeout = 60_000;
    this.server.on(tls ? 'secureConnection' : 'connection', (s) => {
      this.connections++;
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
    return `${this.scheme}://127.0.0.1:${this.port}${p}`;
  }

  async stop() {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  route(req, res) {
    const chunks = [];
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    let counted = true;
    const done = () => {
      if (counted) this.inFlight--;
      counted = false;
    };
    res.on('finish', done);
    res.on('close', done);
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      this.requests++;
      this.emit('request', req);
      const body = Buffer.concat(chunks).toString('utf8');
      const [, head, arg] = req.url.match(/^\/([^/?]*)\/?([^?]*)/) || [];
      const n = Number(arg);
      switch (head) {
        case 'delay':
          setTimeout(() => res.end('ok'), n);
          break;
        case 'hold':
          this.held.push(res);
          break;
        case 'echo':
          res.setHeader('Content-Type', 'application/json; charset=utf-8');
          res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
          break;
        case 'status':
          res.statusCode = n;
          res.end(`status ${n}`);
          break;
        case 'redirect':
          res.statusCode = 302;
          res.setHeader('Location', n > 0 ? `/redirect/${n - 1}` : '/echo');
          res.end();
          break;
        case 'to-file':
          res.statusCode = 302;
          res.setHeader('Location', 'file:///etc/passwd');
          res.end();
          break;
        case 'big':
          res.setHeader('Content-Length', n);
          res.end(Buffer.alloc(n, 'x'));
          break;
        case 'chunked': {
          const piece = Buffer.alloc(64 * 1024, 'y');
          let left = n;
          const more = () => {
            while (left > 0) {
              const p = piece.subarray(0, Math.min(left, piece.length));
              left -= p.length;
              if (!res.write(p)) return res.once('drain', more);
            }
            res.end();
          };
          more();
          break;
        }
        case 'gzip':
          res.setHeader('Content-Type', 'application/json');
          res.setHeader('Content-Encoding', 'gzip');
          res.end(zlib.gzipSync(JSON.stringify({ zipped: true, text: 'z'.repeat(1000) })));
          break;
        case 'headers':
          res.setHeader('X-Multi', ['one', 'two']);
          res.setHeader('Content-Type', 'application/problem+json');
          res.end(JSON.stringify({ title: 'a problem', status: 409 }));
          break;
        case 'badjson':
          res.setHeader('Content-Type', 'application/json');
          res.end('{not json');
          break;
        case 'hang':
          break;
        case 'drip': {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          const t = setInterval(() => res.write('.'), 50);
          res.on('close', () => clearInterval(t));
          break;
        }
        default:
          res.statusCode = 400;
          res.end(`no route ${req.url}`);
      }
    });
  }

  /** The next request whose URL starts with prefix. */
  nextRequest(prefix, limit = ms(10_000)) {
    return within(
      new Promise((resolve) => {
        const on = (req) => {
          if (!req.url.startsWith(prefix)) return;
          this.off('request', on);
          resolve(req);
        };
        this.on('request', on);
      }),
      limit,
      `a request for ${prefix} at the origin`,
    );
  }

  /** Answer every /hold request so far. */
  release() {
    for (const res of this.held.splice(0)) res.end('ok');
  }

  /** Resolve once inFlight reaches n. */
  async untilInFlight(n, limit = ms(10_000)) {
    const t0 = Date.now();
    while (this.inFlight < n) {
      if (Date.now() - t0 > limit) throw new Error(`only ${this.inFlight} of ${n} requests reached the origin`);
      await delay(5);
    }
  }
}

async function withOrigin(body, options) {
  const origin = await new Origin(options).start();
  try {
    return await body(origin);
  } finally {
    await origin.stop();
  }
}

/** Resolve when the socket closes; reject past limit. */
function closed(socket, limit, what) {
  if (socket.destroyed) return Promise.resolve();
  return within(new Promise((resolve) => socket.once('close', resolve)), limit, what);
}

// }===================================================

const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const textOf = (msg) => msg.result.content.map((c) => c.text).join('\n');

/** Call a tool over stdio; the result (isError results included). */
async function tool(srv, name, args, id = `t${Math.random()}`) {
  const r = await srv.call(id, 'tools/call', { name, arguments: args });
  assert.ok(r.result, `tools/call ${name} failed: ${JSON.stringify(r)}`);
  return r.result;
}

/** A structured response (not isError). */
async function fetchOk(srv, name, args) {
  const r = await tool(srv, name, args);
  assert.ok(!r.isError, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
  return r.structuredContent;
}

/** An isError result: its text. */
async function fetchErr(srv, name, args) {
  const r = await tool(srv, name, args);
  assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} should fail: ${JSON.stringify(r)}`);
  return r.content.map((c) => c.text).join('\n');
}

async function refusedPort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

test('200 calls fetching at once over stdio overlap, and ping / tools/list answer meanwhile', opts, () =>
  withOrigin((origin) =>
    withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      // decided by events: the origin holds every request until released, so all N
      // in flight at once is the overlap, and answers that come meanwhile came while
      // every transfer waited (a loaded machine only makes it slower, never wrong)
      const N = 200;
      for (let i = 0; i < N; i++) srv.send(call(`c${i}`, 'http_status', { url: origin.url('/hold') }));
      await origin.untilInFlight(N, ms(60_000));
      assert.deepEqual((await srv.call('p1', 'ping')).result, {});
      assert.ok((await srv.call('l1', 'tools/list', {})).result.tools.length);
      assert.equal(origin.inFlight, N, 'ping and tools/list were answered while every transfer waited');
      origin.release();
      const replies = await Promise.all(Array.from({ length: N }, (_, i) => srv.reply(`"c${i}"`)));
      for (const line of replies) assert.equal(textOf(JSON.parse(line)), '200 2', line);
      assert.equal(origin.maxInFlight, N, 'the origin saw all requests at once');
    }),
  ));

test('200 calls fetching at once over Streamable HTTP (--threads 300), another session answers meanwhile', opts, () =>
  withOrigin((origin) =>
    // civetweb's workers bound the POSTs that wait at once (default 64)
    withHttp(IO_APP, ['--threads', '300'], async (srv) => {
      const a = await rawInitialize(srv);
      const b = await rawInitialize(srv);
      const N = 200; // held by the origin until released: events, not a clock (as above)
      const answers = Array.from({ length: N }, (_, i) =>
        post(srv, rpc('tools/call', { name: 'http_status', arguments: { url: origin.url('/hold') } }, `h${i}`), {
          session: a.session, limit: ms(60_000),
        }),
      );
      await origin.untilInFlight(N, ms(60_000));
      const ping = await post(srv, rpc('ping', undefined, 'hp'), { session: b.session });
      assert.deepEqual(answerOf(ping).result, {});
      const list = await post(srv, rpc('tools/list', {}, 'hl'), { session: b.session });
      assert.ok(answerOf(list).result.tools.length);
      assert.equal(origin.inFlight, N, 'the other session was answered while every transfer waited');
      origin.release();
      const done = await Promise.all(answers);
      for (const ex of done) assert.equal(textOf(answerOf(ex)), '200 2', ex.body);
      assert.equal(origin.maxInFlight, N);
    }),
  ));

test('requests and responses: JSON both ways, headers, methods, statuses, encodings', opts, () =>
  withOrigin((origin) =>
    withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      // json= (post with a table): encoded, Content-Type set; the response's JSON decoded
      const sent = { a: 1, list: [1, 2, 3], s: 'é ✓', nested: { t: true } };
      let r = await fetchOk(srv, 'http_post', { url: origin.url('/echo'), body: sent });
      assert.equal(r.status, 200);
      assert.equal(r.json.method, 'POST');
      assert.deepEqual(JSON.parse(r.json.body), sent);
      assert.equal(r.json.headers['content-type'], 'application/json');
      assert.equal(r.json.headers.expect, undefined, 'no Expect: 100-continue');
      assert.match(r.json.headers['user-agent'], /^luamcp\/\d/);
      assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(r.url, origin.url('/echo'));

      // headers out (a number too), the User-Agent and Content-Type replaced; a method in lowercase
      r = await fetchOk(srv, 'http_request', {
        url: origin.url('/echo'),
        method: 'put',
        body: 'raw text',
        headers: { 'X-Test': 'hello', 'X-Num': 42, 'User-Agent': 'mine/1', 'Content-Type': 'text/plain', 'X-Empty': '' },
      });
      assert.equal(r.json.method, 'PUT');
      assert.equal(r.json.body, 'raw text');
      assert.equal(r.json.headers['x-test'], 'hello');
      assert.equal(r.json.headers['x-num'], '42');
      assert.equal(r.json.headers['x-empty'], '');
      assert.equal(r.json.headers['user-agent'], 'mine/1');
      assert.equal(r.json.headers['content-type'], 'text/plain');

      // GET by default, DELETE without a body, HEAD without a body in the answer
      r = await fetchOk(srv, 'http_get', { url: origin.url('/echo?q=1') });
      assert.equal(r.json.method, 'GET');
      assert.equal(r.json.url, '/echo?q=1');
      assert.equal(r.json.body, '');
      r = await fetchOk(srv, 'http_request', { url: origin.url('/echo'), method: 'DELETE' });
      assert.equal(r.json.method, 'DELETE');
      r = await fetchOk(srv, 'http_request', { url: origin.url('/echo'), method: 'HEAD' });
      assert.equal(r.status, 200);
      assert.equal(r.body, '');

      // repeated response headers joined, +json decoded; JSON that does not parse: body only
      r = await fetchOk(srv, 'http_get', { url: origin.url('/headers') });
      assert.equal(r.headers['x-multi'], 'one, two');
      assert.deepEqual(r.json, { title: 'a problem', status: 409 });
      r = await fetchOk(srv, 'http_get', { url: origin.url('/badjson') });
      assert.equal(r.json, undefined);
      assert.equal(r.body, '{not json');

      // gzip is asked for and decoded
      r = await fetchOk(srv, 'http_get', { url: origin.url('/gzip') });
      assert.equal(r.headers['content-encoding'], 'gzip');
      assert.equal(r.json.zipped, true);

      // 4xx/5xx are responses
      for (const code of [404, 500]) {
        r = await fetchOk(srv, 'http_get', { url: origin.url(`/status/${code}`) });
        assert.equal(r.status, code);
        assert.equal(r.body, `status ${code}`);
      }

      // a body bigger than the default buffer sizes comes whole
      const big = await tool(srv, 'http_status', { url: origin.url(`/chunked/${5 << 20}`) });
      assert.equal(textOf({ result: big }), `200 ${5 << 20}`);
    }),
  ));

test('redirects: followed by default (10 at most), follow=false and follow=N, never to file://', opts, () =>
  withOrigin((origin) =>
    withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      let r = await fetchOk(srv, 'http_get', { url: origin.url('/redirect/3') });
      assert.equal(r.status, 200);
      assert.equal(r.json.url, '/echo');
      assert.equal(r.url, origin.url('/echo'), 'url is where the response came from');
      r = await fetchOk(srv, 'http_get', { url: origin.url('/redirect/3'), opts: { follow: false } });
      assert.equal(r.status, 302);
      assert.equal(r.headers.location, '/redirect/2');
      r = await fetchOk(srv, 'http_get', { url: origin.url('/redirect/1'), opts: { follow: 2 } });
      assert.equal(r.status, 200);
      let e = await fetchErr(srv, 'http_get', { url: origin.url('/redirect/1'), opts: { follow: 1 } });
      assert.match(e, /mcp\.http: Maximum \(1\) redirects followed/);
      e = await fetchErr(srv, 'http_get', { url: origin.url('/redirect/20') });
      assert.match(e, /Maximum \(10\) redirects followed/);
      e = await fetchErr(srv, 'http_get', { url: origin.url('/to-file') });
      assert.match(e, /mcp\.http: .*(not supported|disabled)/i);
      assert.doesNotMatch(e, /root:/);
    }),
  ));

test('errors: transport failures name the URL at the script line; bad options and misuse raise there too', opts, () =>
  withOrigin((origin) =>
    withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      const port = await refusedPort();
      const url = `http://127.0.0.1:${port}/x`;
      let e = await fetchErr(srv, 'http_get', { url });
      assert.match(e, /scripts\/http\.lua:\d+: mcp\.http: .*(Couldn't connect|Connection refused).* \(http:\/\/127\.0\.0\.1:\d+\/x\)$/);
      assert.ok(e.includes(`(${url})`), e);
      // a Lua error: pcall catches it
      const caught = await tool(srv, 'http_pcall', { url });
      assert.ok(!caught.isError);
      assert.match(textOf({ result: caught }), /^mcp\.http: .* \(http:\/\/127\.0\.0\.1:\d+\/x\)$/);

      e = await fetchErr(srv, 'http_get', { url: 'file:///etc/passwd' });
      assert.match(e, /http\.lua:\d+: mcp\.http: only http:\/\/ and https:\/\/ URLs are allowed \(file:\/\/\/etc\/passwd\)/);
      e = await fetchErr(srv, 'http_get', { url: 'gopher://127.0.0.1/' });
      assert.match(e, /only http:\/\/ and https:\/\//);

      // the size cap: from Content-Length, and counted while a chunked body arrives
      e = await fetchErr(srv, 'http_status', { url: origin.url('/big/100000'), opts: { max_size: 1000 } });
      assert.match(e, /mcp\.http: the response is larger than max_size \(1000 bytes\)/);
      e = await fetchErr(srv, 'http_status', { url: origin.url('/chunked/300000'), opts: { max_size: 100000 } });
      assert.match(e, /larger than max_size \(100000 bytes\)/);
      assert.equal(textOf({ result: await tool(srv, 'http_status', { url: origin.url('/big/1000'), opts: { max_size: 1000 } }) }), '200 1000');

      const before = origin.requests;
      const misuse = async (kase, re) => assert.match(await fetchErr(srv, 'http_misuse', { case: kase, url: origin.url('/echo') }), re);
      await misuse('coroutine', /http\.lua:\d+: mcp\.http: a handler waits from its own coroutine/);
      await misuse('gsub', /http\.lua:\d+: mcp\.http: cannot wait here/);
      await misuse('unknown_option', /http\.lua:\d+: mcp\.http: unknown option tiemout/);
      await misuse('bad_header', /http\.lua:\d+: mcp\.http: header 'X-A' holds a line break/);
      for (const [args, re] of [
        [{ url: origin.url('/echo'), body: 'x', json: {} }, /give body or json, not both/],
        [{ url: origin.url('/echo'), method: 'HEAD', body: 'x' }, /HEAD takes no body/],
        [{ url: origin.url('/echo'), method: 'GE T' }, /method must be/],
        [{ url: origin.url('/echo'), timeout: -1 }, /timeout must be a positive number/],
        [{ url: origin.url('/echo'), follow: 'yes' }, /follow must be/],
        [{ url: origin.url('/echo'), headers: { 'Bad Name': 'x' } }, /invalid header name/],
        [{ url: origin.url('/echo'), insecure: 1 }, /insecure must be a boolean/],
        [{}, /url must be a string/],
      ])
        assert.match(await fetchErr(srv, 'http_request', args), new RegExp(`http\\.lua:\\d+: mcp\\.http: ${re.source}`));
      assert.equal(origin.requests, before, 'no mistake above reached the origin');
    }),
  ));

test('TLS: a certificate that does not verify fails the request; insecure=true accepts it', opts, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'luamcp-http-tls-'));
  try {
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
      { stdio: 'ignore' });
    } catch {
      t.skip('no openssl command');
      return;
    }
    const tls = { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) };
    await withOrigin(
      (origin) =>
        withRaw([IO_APP], async (srv) => {
          await srv.initialize();
          const e = await fetchErr(srv, 'http_get', { url: origin.url('/echo') });
          assert.match(e, /mcp\.http: .*(certificate|SSL)/i);
          assert.ok(e.includes(`(${origin.url('/echo')})`), e);
          const r = await fetchOk(srv, 'http_get', { url: origin.url('/echo'), opts: { insecure: true } });
          assert.equal(r.status, 200);
          assert.equal(r.json.method, 'GET');
        }),
      { tls },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the call's deadline (--timeout 1) aborts the transfer: 'timed out', the origin sees its connection closed", opts, () =>
  withOrigin((origin) =>
    withRaw(['--timeout', String(SCALE), IO_APP], async (srv) => {
      await srv.initialize();
      for (const route of ['/hang', '/drip']) {
        const arrived = origin.nextRequest(route);
        const t0 = performance.now();
        srv.send(call(`to${route}`, 'http_get', { url: origin.url(route) }));
        const req = await arrived;
        const reply = JSON.parse(await srv.reply(`"to${route}"`));
        const took = performance.now() - t0;
        assert.equal(reply.result?.isError, true, JSON.stringify(reply));
        assert.match(textOf(reply), /timed out/);
        assert.ok(took < ms(1000) + ms(1000), `${route}: the reply took ${Math.round(took)} ms`);
        await closed(req.socket, ms(500), `the origin's socket of ${route} to close`);
      }
      // a timeout= shorter than the call's: curl's own, a Lua error naming the URL
      const arrived = origin.nextRequest('/hang');
      const e = await fetchErr(srv, 'http_request', { url: origin.url('/hang'), timeout: 0.2 * SCALE });
      assert.match(e, /mcp\.http: Operation timed out after \d+ milliseconds.*\(http:\/\/127\.0\.0\.1:\d+\/hang\)/);
      await closed((await arrived).socket, ms(500), "the origin's socket to close after timeout=");
      assert.deepEqual((await srv.call('after', 'ping')).result, {});
      assert.equal(textOf({ result: await tool(srv, 'http_status', { url: origin.url('/delay/1') }) }), '200 2');
    }),
  ));

test('a cancelled call: no reply, the origin sees its connection closed, the next call works', opts, () =>
  withOrigin((origin) =>
    withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      const arrived = origin.nextRequest('/hang');
      srv.send(call('doomed', 'http_get', { url: origin.url('/hang') }));
      const req = await arrived;
      srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'doomed', reason: 'test' } });
      await closed(req.socket, ms(1000), "the origin's socket to close after the cancel");
      assert.equal(textOf({ result: await tool(srv, 'http_status', { url: origin.url('/delay/1') }) }), '200 2');
      await delay(ms(200));
      assert.ok(!srv.lines.some((l) => l.includes('"doomed"')), `a reply for the cancelled call: ${srv.lines.join('\n')}`);
    }),
  ));

test('connections are reused: 20 sequential calls, one TCP connection', opts, () =>
  withOrigin((origin) =>
    withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      for (let i = 0; i < 20; i++) {
        const r = await fetchOk(srv, 'http_get', { url: origin.url(`/echo?i=${i}`) });
        assert.equal(r.json.url, `/echo?i=${i}`);
      }
      assert.equal(origin.connections, 1, `${origin.connections} connections for 20 calls`);
    }),
  ));

/** A loopback origin that reads each request's head and hands the socket,
    method and target to answer(), which writes whatever the case needs. */
async function rawOrigin(answer) {
  const origin = net.createServer((s) => {
    let head = '';
    s.on('error', () => {});
    s.on('data', (d) => {
      head += d;
      if (!head.includes('\r\n\r\n')) return;
      const [method, target] = head.split(' ');
      head = '';
      answer(s, method, target);
    });
  });
  await new Promise((resolve) => origin.listen(0, '127.0.0.1', resolve));
  return origin;
}

test('a server that closes its connections after each answer: no transfer fails (plain GETs and redirect chains)', opts, async () => {
  // answers, then drops the connection curl would reuse (no Connection: close)
  const origin = await rawOrigin((s, method, target) => {
    const hops = target.startsWith('/r/') ? Number(target.slice(3)) : 0;
    s.write(hops > 0 ? `HTTP/1.1 302 Found\r\nLocation: /r/${hops - 1}\r\nContent-Length: 0\r\n\r\n`
                     : 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    setTimeout(() => s.destroy(), 1);
  });
  const base = `http://127.0.0.1:${origin.address().port}`;
  try {
    await withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      const N = 120;
      for (let i = 0; i < N; i++) srv.send(call(`k${i}`, 'http_status', { url: i % 2 ? `${base}/x` : `${base}/r/5` }));
      const replies = await Promise.all(Array.from({ length: N }, (_, i) => srv.reply(`"k${i}"`)));
      const failed = replies.filter((line) => textOf(JSON.parse(line)) !== '200 2');
      assert.deepEqual(failed, [], `${failed.length} of ${N} failed`);
    });
  } finally {
    origin.close();
  }
});

test('a request whose connection dies before any answer: GET, PUT, DELETE once more on a new connection, POST never; a redirect\'s target only on the same origin', opts, async () => {
  // reads each request, then resets the connection without a byte of answer
  // (/r/N redirects first, answered as usual)
  const seen = [];
  const origin = await rawOrigin((s, method, target) => {
    seen.push(`${method} ${target}`);
    if (target.startsWith('/r/') || target.startsWith('/x/')) {
      const to = target.startsWith('/x/') ? `http://localhost:${origin.address().port}/dead` : '/dead';
      s.write(`HTTP/1.1 303 See Other\r\nLocation: ${to}\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    s.resetAndDestroy();
  });
  const base = `http://127.0.0.1:${origin.address().port}`;
  const attempts = async (srv, args) => {
    seen.length = 0;
    const err = textOf({ result: await tool(srv, 'http_pcall', args) });
    assert.match(err, /mcp\.http: .*(reset|Empty reply|Send failure|Recv failure)/i, err);
    return [...seen];
  };
  try {
    await withRaw([IO_APP], async (srv) => {
      await srv.initialize();
      assert.deepEqual(await attempts(srv, { url: `${base}/a` }), ['GET /a', 'GET /a']);
      assert.deepEqual(await attempts(srv, { url: `${base}/b`, method: 'PUT', body: 'x' }), ['PUT /b', 'PUT /b']);
      assert.deepEqual(await attempts(srv, { url: `${base}/c`, method: 'DELETE' }), ['DELETE /c', 'DELETE /c']);
      assert.deepEqual(await attempts(srv, { url: `${base}/d`, body: 'x' }), ['POST /d']);
      // POST, 303, then GET /dead dies on the reused connection: curl asks
      // again on a new one, then luamcp once more; the POST is not repeated
      assert.deepEqual(await attempts(srv, { url: `${base}/r/1`, body: 'x' }),
        ['POST /r/1', 'GET /dead', 'GET /dead', 'GET /dead']);
      // the 303 leads to another origin (a new connection): not asked again,
      // since a restart there would carry the script's headers to it
      assert.deepEqual(await attempts(srv, { url: `${base}/x/1`, body: 'x' }), ['POST /x/1', 'GET /dead']);
    });
  } finally {
    origin.close();
  }
});

test('a response body counts against the call\'s --memory-limit before it reaches Lua: one larger than the call may hold is refused, one that fits is read', opts, () =>
  withOrigin((origin) =>
    withRaw(['--memory-limit', '8', IO_APP], async (srv) => {
      await srv.initialize();
      const e = await fetchErr(srv, 'http_status', { url: origin.url('/big/20000000') });
      assert.match(e, /mcp\.http: the response is larger than the call may still hold under --memory-limit \(\d+ bytes\)/);
      const chunked = await fetchErr(srv, 'http_status', { url: origin.url('/chunked/20000000') });
      assert.match(chunked, /under --memory-limit/);
      assert.equal(textOf({ result: await tool(srv, 'http_status', { url: origin.url('/big/1000000') }) }), '200 1000000');
    })));
