// stall.test.mjs — code the call's hook barely or never reaches: the
// <close> variables of calls that end early run within a short grace; a
// __gc finalizer that blocks is reported with its script line; under
// --restart-on-stall a server stuck in one is started again; collector
// settings that would leave garbage uncollected are refused.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { APPS, TEST_TIMEOUT, WAIT, ms, run, withRaw } from './helpers.mjs';
import { HttpServer, answerOf, exchange, mcpHeaders, note, post, rawInitialize, rpc, withHttp } from './http-helpers.mjs';

const APP = path.join(APPS, 'stall');
const opts = { timeout: TEST_TIMEOUT };
const source = readFileSync(path.join(APP, 'scripts', 'stall.lua'), 'utf8').split('\n');
const lineOf = (mark) => source.findIndex((l) => l.includes(mark)) + 1;
const CLOSE_LOOP = lineOf('CLOSE LOOP');
const GC_SLOW = lineOf('GC SLOW LINE');
const GC_LOOP = lineOf('GC LOOP LINE');

const textOf = (r) => r.result?.content?.[0]?.text;

async function until(pred, what, limit = WAIT) {
  const end = Date.now() + limit;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

test('a cancelled call whose __close loops: cut off after its grace, the server answers at once and goes on', opts, () =>
  withRaw([APP], async (srv) => {
    await srv.initialize();
    srv.send(rpc('tools/call', { name: 'park_close_loop', arguments: { seconds: 10 } }, 2));
    await delay(ms(200)); // parked in ctx:sleep
    const t0 = Date.now();
    srv.send(note('notifications/cancelled', { requestId: 2 }));
    assert.deepEqual((await srv.call(3, 'ping')).result, {});
    assert.equal(textOf(await srv.call(4, 'tools/call', { name: 'ok', arguments: {} })), 'ok');
    assert.ok(Date.now() - t0 < ms(1500), `answered after ${Date.now() - t0} ms`);
    await until(() => srv.stderr.includes('ran past'), 'the cut-off report', ms(2000));
    assert.match(srv.stderr, new RegExp(`call 2: a __close .* failed: .*stall\\.lua:${CLOSE_LOOP}: __close ran past the 0\\.1 s`));
    assert.ok(!srv.lines.some((l) => JSON.parse(l).id === 2), 'no answer for the cancelled call');
  }));

test('every __close of a cancelled call runs, one that raises is logged, nothing is answered for it', opts, () =>
  withRaw([APP], async (srv) => {
    await srv.initialize();
    for (const id of [2, 3]) srv.send(rpc('tools/call', { name: 'park_close_count', arguments: { seconds: 10 } }, id));
    await delay(ms(200));
    for (const id of [2, 3]) srv.send(note('notifications/cancelled', { requestId: id }));
    assert.deepEqual((await srv.call(4, 'ping')).result, {});
    assert.equal(textOf(await srv.call(5, 'tools/call', { name: 'closed', arguments: {} })), '4');
    assert.match(srv.stderr, /call 2: a __close .* failed: .*close failed on purpose/);
    // a handler's own error is not a __close's
    assert.equal((await srv.call(6, 'tools/call', { name: 'fails', arguments: {} })).result?.isError, true);
    await srv.call(7, 'ping');
    assert.doesNotMatch(srv.stderr, /call 6: a __close/);
  }));

test('a call that times out while parked runs its __close handlers; one stopped while it ran does not hang the server', opts, () =>
  withRaw(['--timeout', '0.5', APP], async (srv) => {
    await srv.initialize();
    const parked = await srv.call(2, 'tools/call', { name: 'park_close_count', arguments: { seconds: 10 } });
    assert.equal(parked.result?.isError, true, JSON.stringify(parked));
    assert.match(textOf(parked), /timed out after 0\.5 s/);
    assert.equal(textOf(await srv.call(3, 'tools/call', { name: 'closed', arguments: {} })), '2');
    // stopped by its hook while running: Lua leaves hooks off on that
    // coroutine, so its looping __close is not run at all
    const t0 = Date.now();
    const spun = await srv.call(4, 'tools/call', { name: 'spin_close_loop', arguments: {} });
    assert.match(textOf(spun), /timed out/);
    assert.equal(textOf(await srv.call(5, 'tools/call', { name: 'ok', arguments: {} })), 'ok');
    assert.ok(Date.now() - t0 < ms(3000), `took ${Date.now() - t0} ms`);
  }));

test('HTTP: a call cancelled by the client, its __close looping: the session is served at once', opts, () =>
  withHttp(APP, [], async (srv) => {
    const { session } = await rawInitialize(srv);
    const parked = exchange(srv, { headers: mcpHeaders({ session }), body: rpc('tools/call', { name: 'park_close_loop', arguments: { seconds: 10 } }, 7) });
    await delay(ms(200));
    const t0 = Date.now();
    const cancelled = await post(srv, note('notifications/cancelled', { requestId: 7 }), { session });
    assert.equal(cancelled.status, 202);
    const ping = answerOf(await post(srv, rpc('ping', {}, 8), { session }));
    assert.deepEqual(ping.result, {});
    const ok = answerOf(await post(srv, rpc('tools/call', { name: 'ok', arguments: {} }, 9), { session }));
    assert.equal(textOf(ok), 'ok');
    assert.ok(Date.now() - t0 < ms(1500), `answered after ${Date.now() - t0} ms`);
    (await parked).abort();
    await until(() => srv.stderr.includes('ran past'), 'the cut-off report', ms(2000));
  }));

test('a __gc finalizer that blocks the server is reported with its script line while it runs', opts, () =>
  withRaw([APP], async (srv) => {
    await srv.initialize();
    const r = await srv.call(2, 'tools/call', { name: 'gc_slow', arguments: { seconds: 0.8 } });
    assert.equal(textOf(r), 'collected');
    // the watchdog reads the stuck thread's stack without a lock (SECURITY.md): it names the
    // finalizer's line, or (a stale read) the line that made the collection run
    assert.match(srv.stderr, new RegExp(`stall\\.lua:(${GC_SLOW}: a __gc finalizer|${GC_SLOW + 2}: Lua code running without hooks) has blocked the server for \\d+ ms so far`));
  }));

test('--restart-on-stall: a server stuck in a __gc loop is reported, restarted, and answers again', opts, async () => {
  const srv = await new HttpServer(APP, ['--stateless', '--restart-on-stall', '1']).start();
  try {
    const call = (name, id) => post(srv, rpc('tools/call', { name, arguments: {} }, id));
    assert.equal(textOf(answerOf(await call('ok', 1))), 'ok');
    await assert.rejects(call('gc_loop', 2), 'the stuck server never answers: it is ended');
    await until(() => srv.stderr.split('listening on').length > 2, 'the server to listen again', ms(10_000));
    assert.match(srv.stderr, new RegExp(`stall\\.lua:${GC_LOOP}: a __gc finalizer has blocked the server`));
    assert.match(srv.stderr, new RegExp(`stood still for [\\d.]+ s, stuck at .*stall\\.lua:${GC_LOOP}, past --restart-on-stall; exiting \\(status 75\\)`));
    assert.match(srv.stderr, /supervisor: starting the server again \(restart 1\)/);
    assert.equal(textOf(answerOf(await call('ok', 3))), 'ok');
    await srv.stopClean(); // SIGTERM reaches the server through the supervisor: status 0
  } finally {
    await srv.kill();
  }
});

test('--restart-on-stall needs --http', opts, async () => {
  const r = await run(['serve', '--restart-on-stall', '5', APP]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--restart-on-stall needs --http/);
});

test('collectgarbage: settings that would leave garbage uncollected are refused, the others pass', opts, async () => {
  const r = await run(['call', APP, 'gc_escapes', '{}']);
  assert.equal(r.code, 0, r.stderr);
  const text = JSON.parse(r.stdout).content[0].text;
  assert.match(text, /^stop: .*collectgarbage\("stop"\) is not available/m);
  assert.match(text, /^step: .*collectgarbage\("step", n < 0\) is not available/m);
  assert.match(text, /^setstepmul: .*collectgarbage\("setstepmul", n < 100\) is not available/m);
  assert.match(text, /^incremental: .*stepmul < 100\) is not available/m);
  assert.match(text, /^step: true$/m);
  assert.match(text, /^incremental: true$/m);
});
