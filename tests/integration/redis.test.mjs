// redis.test.mjs — mcp.redis (core/io/io_redis.c) on a real redis-server of
// the test's own: any command's reply converted (sorted sets, hashes, lists,
// nested arrays, nil as mcp.null inside them), error replies raised at the
// script's line, pipelines (an error reply kept in its slot, MULTI ... EXEC),
// the commands that would break the shared connection refused, no --store
// redis:// a clear error, and 20 concurrent calls each with a pipeline all
// answered (a connection kept in mcp.state by a luasocket library answered
// 13 of 20 with "socket busy"); a reply past the call's --memory-limit, or
// nested deeper than hiredis reads, is an error and the server goes on.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { APPS, TEST_TIMEOUT, WAIT, run } from './helpers.mjs';
import { HttpServer, post, rpc } from './http-helpers.mjs';
import { REDIS, startRedis, stopChild, until } from './services.mjs';

const APP = path.join(APPS, 'redis');
const REV = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
const skip = !existsSync(REDIS) && 'redis-server is not installed';
const opts = { timeout: TEST_TIMEOUT, skip };

let redis, srv;

/** tools/call name: the result (isError or not). */
async function callRaw(name, args = {}) {
  const ex = await post(srv, rpc('tools/call', { name, arguments: args, _meta: META }),
    { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });
  assert.equal(ex.status, 200, ex.body);
  return JSON.parse(ex.body).result;
}

async function call(name, args) {
  const r = await callRaw(name, args);
  assert.ok(!r.isError, JSON.stringify(r));
  return JSON.parse(r.content[0].text);
}

before(async () => {
  if (skip) return;
  redis = await startRedis();
  srv = await new HttpServer(APP, ['--store', `redis://127.0.0.1:${redis.port}/4`, '--no-watch']).start();
  // a call may come before the connection is up (it says so: unreachable)
  await until(async () => !/unreachable/.test(JSON.stringify(await callRaw('cart', { k: 'warm', item: 'w' }))),
    'the connection to redis', WAIT);
});

after(async () => {
  if (srv) await srv.stopClean();
  if (redis) await stopChild(redis.child, redis.exited);
});

test('replies: sorted sets, hashes, lists, nested arrays, nil and mcp.null', opts, async () => {
  const r = await call('types', { k: 'types' });
  assert.equal(r.zadd, 3);
  assert.equal(r.zincr, '11');
  assert.deepEqual(r.top, ['bob', '30', 'cy', '20.5', 'ann', '11']);
  assert.equal(r.hset, 2);
  assert.deepEqual(r.cart, ['apple', '3', 'pear', '1']);
  assert.equal(r.rpush, 3);
  assert.deepEqual(r.list, ['x', 'y', 'z']);
  assert.deepEqual(r.empty, [], 'an empty array is a JSON array');
  assert.equal(r.set, 'OK', 'a status reply is its string');
  assert.equal(r.get_nil, true, 'a nil reply is nil');
  assert.deepEqual(r.mget, ['v', null, 'v'], 'nil inside an array is mcp.null');
  assert.deepEqual(r.nested, [1, ['a', ['b', 2]], 'c']);
  assert.equal(r.info[0][0], 'get');
  assert.ok(Array.isArray(r.info[0][2]) && r.info[0][2].includes('readonly'), JSON.stringify(r.info));
});

test('an error reply raises "redis: ..." at the script\'s line; pcall catches it', opts, async () => {
  const r = await call('raise', { k: 'raise:k' });
  assert.equal(r.ok, false);
  assert.match(r.err, /^[^:]*redis\.lua:\d+: redis: WRONGTYPE /);
  assert.equal(r.ok2, false);
  assert.match(r.err2, /^[^:]*redis\.lua:\d+: redis: ERR unknown command 'NOSUCHCOMMAND'/);
  const u = await callRaw('uncaught');
  assert.equal(u.isError, true);
  assert.match(u.content[0].text, /redis\.lua:\d+: redis: ERR wrong number of arguments for 'incr' command/);
});

test('a pipeline: replies in order, an error reply kept in its slot, MULTI ... EXEC, empty', opts, async () => {
  const r = await call('pipeline', { k: 'pipe' });
  assert.deepEqual(r.a, [1, 1, { err: 'ERR value is not an integer or out of range' }, '2.5', null]);
  assert.equal(r.null_is_null, true);
  assert.deepEqual(r.b, ['OK', 'QUEUED', 'QUEUED', 'QUEUED', [2, 2, { err: 'ERR value is not an integer or out of range' }]],
    'an error inside EXEC\'s array is {err=} too');
  assert.deepEqual(r.empty, []);
});

test('commands that would break the shared connection are refused before anything is sent', opts, async () => {
  const r = await call('refused');
  const at = /^[^:]*redis\.lua:\d+: /;
  assert.ok(r.every((e) => at.test(e)), JSON.stringify(r));
  const want = [
    /mcp\.redis: BLPOP is refused: it would hold the connection/,
    /mcp\.redis: SELECT is refused: it would change the connection/,
    /mcp\.redis: SUBSCRIBE is refused/,
    /mcp\.redis: MULTI is refused outside a pipeline/,
    /mcp\.redis: CLIENT is refused/,
    /mcp\.redis: XREAD BLOCK is refused/,
    /mcp\.redis: WATCH is refused/,
    /mcp\.redis: argument 2 must be a string or a number, got table/,
    /mcp\.redis: a command needs its name/,
    /mcp\.redis\.pipeline: MULTI without EXEC or DISCARD/,
    /mcp\.redis\.pipeline: BRPOP is refused/,
  ];
  assert.equal(r.length, want.length, JSON.stringify(r));
  want.forEach((re, i) => assert.match(r[i], re));
  // nothing of the refused pipelines ran
  assert.deepEqual(await call('peek', { k: 'x' }), { x: null });
});

test('20 concurrent calls, each a pipeline: all answered, each increment seen once', opts, async () => {
  const got = await Promise.all(Array.from({ length: 20 }, () => callRaw('cart', { k: 'busy', item: 'apple' })));
  assert.ok(got.every((r) => !r.isError), JSON.stringify(got.filter((r) => r.isError)));
  assert.deepEqual(got.map((r) => Number(r.content[0].text)).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1));
});

test('without --store redis:// mcp.redis raises a clear error', { timeout: TEST_TIMEOUT }, async () => {
  const r = await run(['call', APP, 'cart', '{"k":"c","item":"a"}']);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /redis\.lua:\d+: mcp\.redis needs --store redis:\/\/HOST:PORT\/N/);
});

test('a reply larger than the call may grow by (--memory-limit) is an error, not the value', opts, async () => {
  assert.deepEqual(await call('biglist', { k: 'big:a' }), { ok: true, r: 20000 });
  const r = await run(['call', '--memory-limit', '1', '--store', `redis://127.0.0.1:${redis.port}/4`, APP, 'biglist', '{"k":"big:b"}']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(JSON.parse(JSON.parse(r.stdout).content[0].text).r,
    /redis\.lua:\d+: mcp\.redis: the reply is larger than the call may still grow by \(--memory-limit\)/);
});

test('a reply nested deeper than hiredis reads: an error for its call, then the connection comes back', opts, async () => {
  await call('raise', { k: 'deep:k' }); // sets deep:k in database 4
  assert.deepEqual(await call('deep', { n: 8 }), { ok: true, r: [[[[[[[[1]]]]]]]] });
  const r = await call('deep', { n: 9 });
  assert.equal(r.ok, false);
  assert.match(r.r, /redis\.lua:\d+: mcp\.redis: (the connection to redis .* was lost|redis .* is unreachable)/);
  await until(async () => (await call('deep', { n: 2 })).ok, 'the connection to come back', WAIT);
  assert.deepEqual(await call('peek', { k: 'deep:k' }), { 'deep:k': 'text' }, 'still database 4 (SELECTed again)');
});
