// store.test.mjs — mcp.store's atomic operations (add, cas, update, keys) on
// each backend: the read-modify-write a team app does (20 concurrent
// comments on one ticket) keeps 20 of 20 on the app's database (the
// default), in memory and on Redis with two instances behind nginx; add and
// cas answer whether they acted; keys pages through every key under a
// prefix, and nothing else (no character of it is special); TTLs expire
// keys for every operation. On the database, the data survives a restart.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, TEST_TIMEOUT, run } from './helpers.mjs';
import { HttpServer, post, rpc, withHttp } from './http-helpers.mjs';
import { NGINX, REDIS, startNginx, startRedis, stopChild } from './services.mjs';

const opts = { timeout: TEST_TIMEOUT };
const APP = path.join(APPS, 'store');
const REV = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };

async function call(front, name, args) {
  const ex = await post(front, rpc('tools/call', { name, arguments: args, _meta: META }),
    { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });
  assert.equal(ex.status, 200, ex.body);
  const r = JSON.parse(ex.body).result;
  assert.ok(!r.isError, ex.body);
  return r.content[0].text;
}

/** The same checks against one endpoint, whatever serves it. */
async function checks(front, tag) {
  const comments = await Promise.all(Array.from({ length: 20 }, (_, i) => call(front, 'comment', { ticket: tag, text: `c${i}` })));
  assert.equal(await call(front, 'count', { ticket: tag }), '20', 'every comment kept');
  assert.deepEqual(comments.map(Number).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1),
    'each update saw the ones before it');
  const r = JSON.parse(await call(front, 'atomics', { key: `${tag}:k` }));
  assert.equal(r.add_new, true);
  assert.equal(r.add_again, false);
  assert.equal(r.cas_wrong, false);
  assert.equal(r.cas_right, true);
  assert.equal(r.value, 'c');
  assert.equal(r.cas_absent, true);
  assert.equal(r.cas_absent_again, false);
  assert.equal(r.deleted, true);
  assert.equal(r.cas_delete, true);
  assert.equal(r.add_ttl, true);
  assert.match(r.bad, /mcp\.store\.cas: the value must be a string or a number \(or nil\), got table/);
  assert.match(r.bad_fn, /tickets\.lua:\d+: mcp\.store\.update: fn must be a function/);
  await call(front, 'fill', { prefix: `${tag}:p:`, n: 250 });
  await call(front, 'fill', { prefix: `${tag}:q:`, n: 10 });
  await call(front, 'fill', { prefix: `${tag}:p*`, n: 3 }); // a glob character in a key: taken literally
  const listed = JSON.parse(await call(front, 'list', { prefix: `${tag}:p:` }));
  assert.equal(listed.keys.length, 250);
  assert.ok(listed.keys.every((k) => k.startsWith(`${tag}:p:`)));
  assert.ok(listed.pages >= 2, `${listed.pages} page(s) for 250 keys`);
  const star = JSON.parse(await call(front, 'list', { prefix: `${tag}:p*` }));
  assert.equal(star.keys.length, 3, JSON.stringify(star));
  await call(front, 'fill', { prefix: `${tag}:p%_`, n: 2 }); // LIKE's wildcards: literal too
  const like = JSON.parse(await call(front, 'list', { prefix: `${tag}:p%` }));
  assert.deepEqual(like.keys, [`${tag}:p%_1`, `${tag}:p%_2`]);
  // the same answers on every backend (Redis words its errors its own way)
  const edges = JSON.parse(await call(front, 'incr_edges', { key: `${tag}:i` }));
  assert.equal(edges.big, '9223372036854775807');
  assert.match(edges.over, /^mcp\.store\.incr: .*overflow/);
  assert.equal(edges.kept, '9223372036854775807');
  assert.match(edges.text, /^mcp\.store\.incr: .*not an integer/);
  assert.match(edges.zero, /^mcp\.store\.incr: .*not an integer/);
  assert.deepEqual([edges.down, edges.down_again], [-5, -10]);
  const ttl = JSON.parse(await call(front, 'ttl', { key: `${tag}:t` }));
  assert.deepEqual(ttl, { short_gone: true, added_again: true, long: 'v', n: 3, n_kept: '2' });
  assert.deepEqual(JSON.parse(await call(front, 'list', { prefix: `${tag}:t:` })).keys,
    [`${tag}:t:again`, `${tag}:t:long`, `${tag}:t:n`], 'no expired key listed');
}

test('in memory (--store memory): 20 concurrent comments keep 20; add, cas, update and keys', opts, () =>
  withHttp(APP, ['--no-watch', '--store', 'memory'], (srv) => checks(srv, 'mem')));

test('on the app\'s database (the default): 20 concurrent comments keep 20; add, cas, update, keys; all kept across a restart', opts, async () => {
  const data = await mkdtemp(path.join(tmpdir(), 'luamcp-store-db-'));
  try {
    // nothing opened until a script uses the store: check and a listing make no file
    assert.equal((await run(['check', APP])).code, 0);
    await withHttp(APP, ['--no-watch', '--data', data], async (srv) => {
      assert.equal((await post(srv, rpc('tools/list', { _meta: META }), { version: REV, extra: { 'Mcp-Method': 'tools/list' } })).status, 200);
    });
    assert.ok(!existsSync(path.join(data, 'db.sqlite')), 'no database before the store is used');
    await withHttp(APP, ['--no-watch', '--data', data], async (srv) => {
      assert.equal(await call(srv, 'get', { key: 'db:none' }), 'nil');
      await checks(srv, 'db');
    });
    await withHttp(APP, ['--no-watch', '--data', data], async (srv) => {
      assert.equal(await call(srv, 'count', { ticket: 'db' }), '20', 'the comments outlived the server');
      assert.equal(await call(srv, 'get', { key: 'db:t:long' }), 'v');
      assert.equal(await call(srv, 'get', { key: 'db:t:short' }), 'nil');
      assert.equal(JSON.parse(await call(srv, 'list', { prefix: 'db:p:' })).keys.length, 250);
    });
  } finally {
    await rm(data, { recursive: true, force: true });
  }
});

const haveServices = existsSync(NGINX) && existsSync(REDIS);
test('on Redis, two instances behind nginx: 20 concurrent comments keep 20; add, cas, update and keys', { ...opts, skip: !haveServices && 'nginx or redis-server is not installed' }, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-store-'));
  await chmod(dir, 0o755);
  const instances = [];
  let redis, nginx;
  try {
    redis = await startRedis();
    const store = `redis://127.0.0.1:${redis.port}/3`;
    for (const name of ['a', 'b']) instances.push(await new HttpServer(APP, ['--instance', name, '--store', store, '--no-watch']).start());
    await mkdir(path.join(dir, 'nginx'));
    nginx = await startNginx(path.join(dir, 'nginx'), instances.map((s) => s.port));
    await checks({ url: nginx.url, host: `127.0.0.1:${nginx.port}`, port: nginx.port }, 'redis');
  } finally {
    for (const s of instances) await s.stopClean();
    if (nginx) await stopChild(nginx.child);
    if (redis) await stopChild(redis.child);
    await rm(dir, { recursive: true, force: true });
  }
});

test('--store takes memory or a Redis URL, nothing else (usage error, exit 2)', opts, async () => {
  const r = await run(['call', '--store', 'memroy', APP, 'get', '{"key":"k"}']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--store: 'memroy' is not redis:\/\/HOST:PORT\[\/N\] \(nor memory\)/);
});
