// db-pg.test.mjs — mcp.db on PostgreSQL (core/io/db_pg.c: libpq's
// asynchronous API on the loop, a pool; db_placeholders.c; migrations on
// PostgreSQL in db_migrate.c; luamcp db --db). One real PostgreSQL (Debian's,
// initdb + postgres as nobody when root, a free loopback port, a temp dir)
// for the file, a database of its own per test. The same cases as
// db.test.mjs where they apply: types, parameters and injection attempts,
// errors at FILE:LINE, --memory-limit, transactions (commit, rollback on error, savepoints,
// a caught SQL error), a pg_sleep that parks its call while a ping is
// answered (by event: the ping's answer comes while the slow call has
// none), cancel and --timeout stopping the statement on the server and
// rolling back; a backend killed mid-query (pg_terminate_backend); the
// password never in argv; migrations (order, migrations/postgres/ over the
// portable file, a failure at FILE:LINE with nothing half-applied, an edited
// one refused, a new one saved while serving applied on that reload); two
// instances behind nginx on one PostgreSQL keeping 20 of 20 read-modify-writes in mcp.db.tx;
// mcp.store on the database on PostgreSQL (two instances, 20 of 20).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { APPS, TEST_TIMEOUT, WAIT, command, removeTemp, saveFile, watchLines, within, withRaw } from './helpers.mjs';
import { HttpServer, answerOf, post, rawInitialize, rpc } from './http-helpers.mjs';
import { NGINX, needs, postgresBin, startNginx, startPostgres, stopChild, until } from './services.mjs';

needs(path.join(postgresBin(), 'initdb'), path.join(postgresBin(), 'postgres'));

const APP = path.join(APPS, 'db-pg');
const opts = { timeout: TEST_TIMEOUT };
let pg, pgDir, nextDb = 0;

before(async () => {
  pgDir = await mkdtemp(path.join(tmpdir(), 'luamcp-pg-'));
  pg = await startPostgres(pgDir);
});
after(async () => {
  await pg?.stop();
  await removeTemp(pgDir);
});

/** A fresh database: its URL (user luamcp, trust on 127.0.0.1). */
function freshDb() {
  const name = `t${++nextDb}`;
  pg.psql(`CREATE DATABASE ${name}`);
  return { name, url: pg.url('luamcp', name) };
}

let nextId = 1;
const callMsg = (name, args, id = nextId++, meta) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
});

async function tool(srv, name, args, json = true) {
  const r = await srv.call(nextId++, 'tools/call', { name, arguments: args });
  assert.ok(r.result, JSON.stringify(r));
  const text = r.result.content[0].text;
  return json ? JSON.parse(text) : text;
}

function runEnv(args, env = {}) {
  const full = { ...process.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k]; else full[k] = v;
  const { command: cmd, args: argv } = command(args);
  const child = spawn(cmd, argv, { env: full, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  return within(new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr }))), WAIT, `luamcp ${args.join(' ')}`);
}

const serve = (url, more = [], app = APP) => ['--no-watch', '--db', url, ...more, app];
const rowsOf = (r) => r.value.map((row) => Object.values(row)[0]);
const started = (srv, token) => srv.take((l) => l.includes('notifications/progress') && l.includes(`"${token}"`), `${token} started`);
const answered = (srv, id) => srv.lines.some((l) => l.includes(`"id":"${id}"`));
/** statements of luamcp's connections running pg_sleep on the server now */
const sleeping = (db) => Number(pg.psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db}' AND query LIKE '%pg_sleep%' AND state = 'active' AND application_name = 'luamcp'`).trim());

test('types round-trip; positional and named parameters; migrations/postgres/ replaces the portable file', opts, () => {
  const { url } = freshDb();
  return withRaw(serve(url), async (srv) => {
    await srv.initialize();
    const t = await tool(srv, 'types', {});
    for (let i = 1; i <= 9; i++) assert.equal(t[i].same, true, `value ${i} came back as it went`);
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => t[i].lua),
      ['integer', 'integer', 'float', 'string', 'string', 'integer', 'integer', 'null', 'null']);
    assert.deepEqual(t.named, { s: 42, c_is_null: true, a2: 40 });
    const c = t.cols;
    for (const k of ['i2', 'i4', 'i8', 't', 'f']) assert.equal(c[k].type, 'integer', k);
    assert.deepEqual([c.i2.value, c.i4.value, c.i8.value, c.t.value, c.f.value], [1, 2, 3, 1, 0]);
    assert.deepEqual([c.f4.type, c.f4.value, c.f8.type, c.f8.value], ['float', 1.5, 'float', 2.5]);
    assert.deepEqual([c.vc.type, c.tx.type, c.by.type, c.by.hex, c.nul.type], ['string', 'string', 'string', '00ff', 'null']);
    assert.deepEqual([c.num.text, c.d.text, c.j.text], ['12.50', '2024-01-02', '{"a": 1}'], 'anything else: its text');
    assert.deepEqual(t.blob, { changes: 1, last_id: 1, back: true }, 'bytea both ways; RETURNING id is last_id');
    assert.deepEqual(t.empty, []);
    const col = await tool(srv, 'sql', { op: 'one', sql: "SELECT data_type FROM information_schema.columns WHERE table_name = 'blobs' AND column_name = 'b'" });
    assert.equal(col.value.data_type, 'bytea', 'migrations/postgres/002_blobs.sql ran, not the portable 002');
    const e = await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(id, k, v) VALUES (1, ?, ?), (2, ?, ?)', params: '["a","x","b","y"]' });
    assert.deepEqual(e.value, { changes: 2, last_id: 0 });
    const q = await tool(srv, 'sql', { op: 'query', sql: 'SELECT v FROM kv WHERE k = :k OR k = :j ORDER BY id', params: '{"k":"a","j":"b"}' });
    assert.deepEqual(rowsOf(q), ['x', 'y']);
    const quoted = await tool(srv, 'sql', { op: 'query', sql: "SELECT '?' AS a, $$:k$$ AS b, ?::text AS c -- ?", params: '["z"]' });
    assert.deepEqual(quoted.value, [{ a: '?', b: ':k', c: 'z' }], 'placeholders inside quotes and comments are text');
  });
});

test('injection attempts through every way of passing a value are values', opts, () => {
  const { url } = freshDb();
  return withRaw(serve(url), async (srv) => {
    await srv.initialize();
    const evil = ["x'); DROP TABLE kv; --", 'x" OR 1=1 --', "'; SELECT pg_sleep(10); --", ':k', '?', '$1', '$$; DROP TABLE kv; $$'];
    let id = 0;
    for (const [i, e] of evil.entries()) {
      const tag = `inj${i}`;
      await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(id, k, v) VALUES (?, ?, ?)', params: JSON.stringify([++id, tag, e]) });
      await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(id, k, v) VALUES (:id, :k, :v)', params: JSON.stringify({ id: ++id, k: tag, v: e }) });
      const q = await tool(srv, 'sql', { op: 'query', sql: 'SELECT v FROM kv WHERE k = ? AND v = ?', params: JSON.stringify([tag, e]) });
      assert.deepEqual(rowsOf(q), [e, e], `stored verbatim: ${e}`);
      const o = await tool(srv, 'sql', { op: 'one', sql: 'SELECT count(*) AS n FROM kv WHERE v = :v', params: JSON.stringify({ v: e }) });
      assert.equal(o.value.n, 2);
      const none = await tool(srv, 'sql', { op: 'query', sql: 'SELECT k FROM kv WHERE k = ?', params: JSON.stringify([e]) });
      assert.deepEqual(none.value, [], 'a value is never taken as SQL');
    }
    const n = await tool(srv, 'sql', { op: 'one', sql: 'SELECT count(*) AS n FROM kv' });
    assert.equal(n.value.n, evil.length * 2, 'the table is still there, with every row');
  });
});

test('errors: PostgreSQL\'s message (and position) at the author\'s FILE:LINE; values that cannot be bound', opts, () => {
  const { url } = freshDb();
  return withRaw(serve(url), async (srv) => {
    await srv.initialize();
    const cases = {
      function: /db\.lua:\d+: mcp\.db\.query: cannot bind a function \(parameter 1/,
      named: /db\.lua:\d+: mcp\.db\.query: cannot bind a function to :x/,
      missing: /db\.lua:\d+: mcp\.db\.query: no value for :x/,
      count: /db\.lua:\d+: mcp\.db\.query: the statement has 2 parameters, 1 value given/,
      mixed: /db\.lua:\d+: mcp\.db\.query: the statement names its parameter :x/,
      two: /db\.lua:\d+: mcp\.db\.query: cannot insert multiple commands/,
      begin: /db\.lua:\d+: mcp\.db\.exec: transactions are mcp\.db\.tx's/,
      syntax: /db\.lua:\d+: mcp\.db\.query: syntax error at end of input \(at character \d+ of the statement\)/,
      nowhere: /db\.lua:\d+: mcp\.db\.one: relation "nowhere" does not exist \(at character 15 of the statement\)/,
    };
    for (const [kind, re] of Object.entries(cases)) {
      const r = await tool(srv, 'bad', { kind });
      assert.equal(r.ok, false, kind);
      assert.match(r.error, re, kind);
    }
    // the connection that ran BEGIN was not left inside it
    assert.deepEqual((await tool(srv, 'sql', { op: 'one', sql: 'SELECT 1 AS one' })).value, { one: 1 });
  });
});

test('a result larger than --memory-limit leaves room for is an error, the pool goes on', opts, () => {
  const { url } = freshDb();
  return withRaw(serve(url, ['--memory-limit', '16']), async (srv) => {
    await srv.initialize();
    const big = await tool(srv, 'sql', { op: 'query', sql: "SELECT repeat('x', ?) AS s FROM generate_series(1, ?)", params: '[200000, 200]' });
    assert.match(big.error, /db\.lua:\d+: mcp\.db\.query: the result is larger than the call's memory limit/);
    const small = await tool(srv, 'sql', { op: 'query', sql: "SELECT repeat('x', ?) AS s FROM generate_series(1, ?)", params: '[1000, 10]' });
    assert.equal(small.value.length, 10);
  });
});

test('tx: commit, rollback on error (raised at its line), nested savepoints, SQL errors', opts, () => {
  const { url } = freshDb();
  return withRaw(serve(url), async (srv) => {
    await srv.initialize();
    assert.deepEqual(await tool(srv, 'tx', { case: 'commit', tag: 'c' }), { ok: true, value: 'done', rows: ['1', '2'] });
    const e = await tool(srv, 'tx', { case: 'error', tag: 'e' });
    assert.equal(e.ok, false);
    assert.match(e.value, /db\.lua:\d+: changed my mind$/);
    assert.deepEqual(e.rows, {}, 'rolled back');
    assert.deepEqual(await tool(srv, 'tx', { case: 'nested', tag: 'n' }), { ok: true, value: 'inner failed', rows: ['outer', 'inner2'] },
      'an SQL error inside a savepoint rolls back that savepoint only');
    const s = await tool(srv, 'tx', { case: 'sqlerror', tag: 's' });
    assert.match(s.value, /db\.lua:\d+: mcp\.db\.exec: relation "nowhere" does not exist/);
    assert.deepEqual(s.rows, {}, 'rolled back');
    const l = await tool(srv, 'tx', { case: 'lost', tag: 'l' });
    assert.equal(l.ok, false, 'tx raises: an SQL error aborted its transaction');
    assert.match(l.value, /db\.lua:\d+: mcp\.db\.tx: the transaction was rolled back/);
    assert.deepEqual(l.rows, {}, 'nothing ran outside the transaction');
  });
});

test('a pg_sleep parks its call: a ping is answered while it runs; a cancel stops the statement on the server and rolls its transaction back', opts, () => {
  const { name, url } = freshDb();
  return withRaw(serve(url), async (srv) => {
    await srv.initialize();
    srv.send(callMsg('slow', { seconds: 600 }, 'slow1', { progressToken: 'p1' }));
    await started(srv, 'p1');
    await until(() => sleeping(name) === 1, 'the statement running on the server');
    const ping = await srv.call('ping1', 'ping');
    assert.deepEqual(ping.result, {});
    assert.ok(!answered(srv, 'slow1'), 'the ping was answered while the slow call was still pending');
    const w = await tool(srv, 'sql', { op: 'exec', sql: "INSERT INTO kv(id, k, v) VALUES (1, 'during', 'x')" });
    assert.equal(w.value.changes, 1, 'another connection of the pool writes meanwhile');
    assert.equal(await tool(srv, 'rmw', {}, false), '1', 'a transaction runs meanwhile (the first connection is the transactions\')');
    assert.ok(!answered(srv, 'slow1'), 'the slow call is still pending');
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow1', reason: 'test' } });
    await until(() => sleeping(name) === 0, 'the cancelled statement to stop on the server');
    // in a transaction: cancelled, rolled back, the pool goes on
    srv.send(callMsg('slow', { seconds: 600, tag: 'cancelled' }, 'slowtx', { progressToken: 'ptx' }));
    await started(srv, 'ptx');
    await until(() => sleeping(name) === 1, 'the transaction\'s statement running');
    assert.deepEqual((await srv.call('ping-tx', 'ping')).result, {});
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slowtx', reason: 'test' } });
    await until(() => sleeping(name) === 0, 'the cancelled transaction\'s statement to stop');
    assert.equal(await tool(srv, 'rmw', {}, false), '2', 'a new transaction runs after it');
    const left = await tool(srv, 'sql', { op: 'query', sql: "SELECT v FROM kv WHERE k = 'cancelled'" });
    assert.deepEqual(left.value, [], 'the cancelled call\'s transaction rolled back');
    assert.ok(!answered(srv, 'slow1') && !answered(srv, 'slowtx'), 'no answer to a cancelled call');
  });
});

test('--timeout stops a running statement and rolls its transaction back', opts, () => {
  const { name, url } = freshDb();
  return withRaw(serve(url, ['--timeout', '2']), async (srv) => {
    await srv.initialize();
    const r = await srv.call('t', 'tools/call', { name: 'slow', arguments: { seconds: 600, tag: 'timedout' } });
    assert.match(JSON.stringify(r), /timed out/);
    await until(() => sleeping(name) === 0, 'the statement to stop on the server');
    const left = await tool(srv, 'sql', { op: 'query', sql: "SELECT v FROM kv WHERE k = 'timedout'" });
    assert.deepEqual(left.value, []);
    assert.equal(await tool(srv, 'slow', { seconds: 0 }, false), 'slept', 'the pool goes on');
  });
});

test('a connection killed mid-query (pg_terminate_backend): a clear error naming the database, and the next call works', opts, () => {
  const { name, url } = freshDb();
  return withRaw(serve(url), async (srv) => {
    await srv.initialize();
    await tool(srv, 'sql', { op: 'one', sql: 'SELECT 1 AS x' }); // connections made
    srv.send(callMsg('slow', { seconds: 600 }, 'killed', { progressToken: 'pk' }));
    await started(srv, 'pk');
    await until(() => sleeping(name) === 1, 'the statement running');
    pg.psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND application_name = 'luamcp'`);
    const r = JSON.parse(await srv.reply('"killed"'));
    const text = JSON.stringify(r);
    assert.ok(r.result?.isError, text);
    assert.match(text, /db\.lua:\d+: mcp\.db\.one: the connection to PostgreSQL postgres:\/\/luamcp@127\.0\.0\.1:\d+\/t\d+ was lost \(terminating connection due to administrator command\)/);
    for (let i = 0; i < 5; i++) // every connection of the pool was dropped: each is made again
      assert.deepEqual((await tool(srv, 'sql', { op: 'one', sql: 'SELECT ? AS i', params: JSON.stringify([i]) })).value, { i });
    assert.equal(await tool(srv, 'rmw', {}, false), '1');
  });
});

test('the password: refused in the URL; from --db-password-file, PGPASSWORD or the db-password credential; never in a message', opts, async () => {
  const { name } = freshDb();
  pg.psql(`ALTER DATABASE ${name} OWNER TO secret`);
  const url = pg.url('secret', name);
  const withPw = url.replace('secret@', 'secret:pw@');
  const r = await runEnv(['call', '--db', withPw, APP, 'sql', JSON.stringify({ op: 'one', sql: 'SELECT 1 AS x' })]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--db: the URL holds a password .*PGPASSWORD.*--db-password-file/);
  const call = ['call', '--db', url, APP, 'sql', JSON.stringify({ op: 'one', sql: 'SELECT current_user AS u' })];
  const none = await runEnv(call, { PGPASSWORD: undefined, PGPASSFILE: '/nonexistent' });
  assert.equal(none.code, 1);
  assert.match(none.stderr + none.stdout, /password authentication failed|no password supplied/);
  const file = await runEnv(['call', '--db-password-file', pg.pwfile, ...call.slice(1)], { PGPASSWORD: undefined });
  assert.equal(file.code, 0, file.stderr);
  assert.match(file.stdout, /\\"u\\":\\"secret\\"/);
  const env = await runEnv(call, { PGPASSWORD: 'pw' });
  assert.equal(env.code, 0, env.stderr);
  // systemd's LoadCredential=db-password:FILE (luamcp@.service)
  const creds = await mkdtemp(path.join(tmpdir(), 'luamcp-creds-'));
  await writeFile(path.join(creds, 'db-password'), 'pw\n', { mode: 0o600 });
  const cred = await runEnv(call, { PGPASSWORD: undefined, PGPASSFILE: undefined, CREDENTIALS_DIRECTORY: creds });
  await removeTemp(creds);
  assert.equal(cred.code, 0, cred.stderr);
  assert.match(cred.stdout, /\\"u\\":\\"secret\\"/);
  // a bundle's user_config: LUAMCP_DB stands for --db (and never fails luamcp test)
  const fromEnv = await runEnv(['call', APP, 'sql', JSON.stringify({ op: 'one', sql: 'SELECT current_user AS u' })],
    { PGPASSWORD: 'pw', LUAMCP_DB: url });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  assert.match(fromEnv.stdout, /\\"u\\":\\"secret\\"/);
  const badEnv = await runEnv(['call', APP, 'sql', '{}'], { LUAMCP_DB: 'mysql://x' });
  assert.equal(badEnv.code, 2);
  assert.match(badEnv.stderr, /LUAMCP_DB: needs postgres:\/\//);
  for (const out of [none, file, env, cred]) assert.ok(!/\bpw\b/.test(out.stderr.replace(/password/g, '')), 'the password is never shown');
});

test('migrations: in order, each recorded; a failure at FILE:LINE with nothing half-applied; an edited one refused; luamcp db migrate --status and query', opts, async () => {
  const { url } = freshDb();
  const app = await mkdtemp(path.join(tmpdir(), 'luamcp-pgapp-'));
  try {
    await cp(APP, app, { recursive: true });
    const status = async () => (await runEnv(['db', app, '--db', url, 'migrate', '--status'])).stdout;
    assert.match(await status(), /pending {2}001_kv\.sql\npending {2}002_blobs\.sql\n2 pending/);
    const m = await runEnv(['db', app, '--db', url, 'migrate']);
    assert.equal(m.code, 0, m.stderr);
    assert.match(await status(), /applied {2}001_kv\.sql .*\napplied {2}002_blobs\.sql .*\n0 pending/);
    const q = await runEnv(['db', app, '--db', url, 'query', 'SELECT name FROM luamcp_migrations ORDER BY applied_at, name']);
    assert.equal(q.stdout, '{"name":"001_kv.sql"}\n{"name":"002_blobs.sql"}\n');
    const ro = await runEnv(['db', app, '--db', url, 'query', 'DELETE FROM kv']);
    assert.equal(ro.code, 1);
    assert.match(ro.stderr, /read-only unless --write/);
    const rw = await runEnv(['db', app, '--db', url, 'query', '--write', 'INSERT INTO kv(id, k, v) VALUES (?, ?, ?)', '--', '7', 'k', 'v']);
    assert.equal(rw.code, 0, rw.stderr);
    for (const sub of ['backup', 'restore']) {
      const b = await runEnv(['db', app, '--db', url, sub, path.join(app, 'x.dump')]);
      assert.equal(b.code, 1);
      assert.match(b.stderr, sub === 'backup' ? /use pg_dump/ : /use pg_restore/);
    }
    // a failing migration: its first statement is not kept either
    await writeFile(path.join(app, 'migrations/003_bad.sql'), "CREATE TABLE half(x int);\n\nINSERT INTO nope VALUES (1);\n");
    const bad = await runEnv(['call', '--db', url, app, 'sql', JSON.stringify({ op: 'one', sql: 'SELECT 1 AS x' })]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /migrations\/003_bad\.sql:3: relation "nope" does not exist/);
    const half = await runEnv(['db', app, '--db', url, 'query', "SELECT to_regclass('half') IS NULL AS gone"]);
    assert.equal(half.stdout, '{"gone":1}\n', 'nothing of the failing migration');
    await writeFile(path.join(app, 'migrations/003_bad.sql'), "CREATE TABLE half(x int);\nINSERT INTO half VALUES (3);\n");
    const good = await runEnv(['call', '--db', url, app, 'sql', JSON.stringify({ op: 'one', sql: 'SELECT x FROM half' })]);
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /\\"x\\":3/);
    // an applied one edited: refused by its checksum
    await writeFile(path.join(app, 'migrations/postgres/002_blobs.sql'), 'CREATE TABLE blobs(id bigserial PRIMARY KEY, b bytea, c int);\n');
    const edited = await runEnv(['call', '--db', url, app, 'sql', JSON.stringify({ op: 'one', sql: 'SELECT 1 AS x' })]);
    assert.equal(edited.code, 1);
    assert.match(edited.stderr, /migrations\/postgres\/002_blobs\.sql:1: edited after it was applied to PostgreSQL postgres:\/\/luamcp@127\.0\.0\.1:\d+\/t\d+ \(checksum sha256:/);
    assert.match(await status(), /edited {3}002_blobs\.sql/);
    // luamcp check: the portable ones on its scratch SQLite, nothing on PostgreSQL
    const check = await runEnv(['check', '--db', url, app]);
    assert.equal(check.code, 0, check.stderr);
  } finally {
    await removeTemp(app);
  }
});

test('two instances behind nginx on one PostgreSQL: 20 concurrent read-modify-writes in mcp.db.tx keep 20 of 20', { ...opts, skip: !existsSync(NGINX) && 'nginx is not installed' }, async () => {
  const { url } = freshDb();
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-pgnginx-'));
  await chmod(dir, 0o755);
  const instances = [];
  let nginx;
  try {
    for (const name of ['a', 'b']) instances.push(await new HttpServer(APP, ['--instance', name, '--db', url, '--no-watch']).start());
    await mkdir(path.join(dir, 'nginx'));
    nginx = await startNginx(path.join(dir, 'nginx'), instances.map((s) => s.port));
    const front = { url: nginx.url, host: `127.0.0.1:${nginx.port}`, port: nginx.port };
    const sessions = [];
    for (let i = 0; i < 20; i++) sessions.push((await rawInitialize(front)).session); // round-robin: both instances
    assert.deepEqual(new Set(sessions.map((s) => s.split('.')[0])), new Set(['a', 'b']), 'sessions on both instances');
    const answers = await Promise.all(sessions.map((session) => post(front, callMsg('rmw', {}), { session })));
    const seen = answers.map((ex) => {
      const r = answerOf(ex).result;
      assert.ok(r && !r.isError, ex.body);
      return Number(r.content[0].text);
    }).sort((x, y) => x - y);
    assert.deepEqual(seen, Array.from({ length: 20 }, (_, i) => i + 1), 'each saw the one before it');
    const n = answerOf(await post(front, callMsg('sql', { op: 'one', sql: 'SELECT n FROM counter WHERE id = 1' }), { session: sessions[0] }));
    assert.deepEqual(JSON.parse(n.result.content[0].text).value, { n: 20 });
  } finally {
    for (const s of instances) await s.stopClean();
    if (nginx) await stopChild(nginx.child);
    await removeTemp(dir);
  }
});

test('a migration saved in migrations/postgres/ while serving is applied on that reload; a failing one keeps the last good version serving', opts, async () => {
  const { url } = freshDb();
  const app = await mkdtemp(path.join(tmpdir(), 'luamcp-pgapp-'));
  try {
    await cp(APP, app, { recursive: true });
    await withRaw(['--db', url, app], async (srv) => {
      const log = watchLines(srv.child.stderr, srv.stderr);
      await srv.initialize();
      const good = () => log.count(/^luamcp: info: reloaded /);
      const failed = () => log.count(/^luamcp: error: reload failed/);
      const f0 = failed();
      await saveFile(path.join(app, 'migrations/postgres/003_more.sql'), 'CREATE TABLE more(x int);\nINSERT INTO more VALUES (1);\nINSERT INTO nope VALUES (2);\n');
      await log.until(() => failed() > f0, 'the failed reload of 003_more.sql');
      assert.match(log.lines.join('\n'), /migrations\/postgres\/003_more\.sql:3: relation "nope" does not exist/);
      const gone = await tool(srv, 'sql', { op: 'one', sql: "SELECT to_regclass('more') IS NULL AS gone" });
      assert.deepEqual(gone.value, { gone: 1 }, 'nothing of it, and the last good version serves');
      const g0 = good();
      await saveFile(path.join(app, 'migrations/postgres/003_more.sql'), 'CREATE TABLE more(x int);\nINSERT INTO more VALUES (1);\n');
      await log.until(() => good() > g0, 'the reload that applies 003_more.sql');
      assert.deepEqual((await tool(srv, 'sql', { op: 'one', sql: 'SELECT x FROM more' })).value, { x: 1 });
    });
  } finally {
    await removeTemp(app);
  }
});

test('mcp.store on the database (its default) on PostgreSQL: two instances, 20 concurrent comments keep 20', opts, async () => {
  const { url } = freshDb();
  const STORE = path.join(APPS, 'store');
  const REV = '2026-07-28';
  const META = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
  const call = async (front, name, args) => {
    const ex = await post(front, rpc('tools/call', { name, arguments: args, _meta: META }),
      { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });
    assert.equal(ex.status, 200, ex.body);
    const r = JSON.parse(ex.body).result;
    assert.ok(!r.isError, ex.body);
    return r.content[0].text;
  };
  const instances = [];
  try {
    for (const name of ['a', 'b']) instances.push(await new HttpServer(STORE, ['--instance', name, '--db', url, '--no-watch']).start());
    const seen = await Promise.all(Array.from({ length: 20 }, (_, i) => call(instances[i % 2], 'comment', { ticket: 't', text: `c${i}` })));
    assert.deepEqual(seen.map(Number).sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i + 1), 'each update saw the ones before it');
    assert.equal(await call(instances[1], 'count', { ticket: 't' }), '20');
    const r = JSON.parse(await call(instances[0], 'atomics', { key: 't:k' }));
    assert.deepEqual([r.add_new, r.add_again, r.cas_wrong, r.cas_right, r.value], [true, false, false, true, 'c']);
  } finally {
    for (const s of instances) await s.stopClean();
  }
});
