// db.test.mjs — mcp.db (core/io/db.c, db_sqlite.c): SQL on the app's own
// SQLite file from handlers, on a thread of its own. Types both ways,
// parameters (and injection attempts through each way of passing them),
// errors at the author's line, transactions (commit, rollback, savepoints,
// two calls' never interleaving), a query that parks its call while pings
// are answered and is interrupted at a cancel and at --timeout (its
// transaction rolled back), --sandbox's refusals, --memory-limit, a write
// acknowledged before kill -9 still there after, and where the file lives
// (--data, XDG_DATA_HOME, HOME, STATE_DIRECTORY; check makes nothing).
// luamcp db: a backup taken while a served app writes under load restores
// to a sound database, restore refused while serving and done after, migrate
// --status, query (read-only unless --write, --table), the help.
// Every ordering is decided by events (a progress notification, a flag
// file), never by a clock.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, RawServer, TEST_TIMEOUT, WAIT, command, removeTemp, saveFile, tempApp, watchLines, within, withRaw } from './helpers.mjs';
import { answerOf, freePort, post, rawInitialize, withHttp } from './http-helpers.mjs';
import { until } from './services.mjs';

const ExportTrace = createRequire(import.meta.url)('@opentelemetry/otlp-transformer/build/src/generated/root.js')
  .opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const DB_APP = path.join(APPS, 'db');
const opts = { timeout: TEST_TIMEOUT };
const HUGE = 1e12; // a count no test waits for: only an interrupt ends it

let nextId = 1;
const callMsg = (name, args, id = nextId++, meta) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
});

/** tools/call → the text of its result (parsed as JSON when asked). */
async function tool(srv, name, args, json = true) {
  const r = await srv.call(nextId++, 'tools/call', { name, arguments: args });
  assert.ok(r.result, JSON.stringify(r));
  const text = r.result.content[0].text;
  return json ? JSON.parse(text) : text;
}

/** `luamcp ...args` with env (added to this process's, undefined removes). */
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

async function withTemp(body) {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-db-'));
  try {
    return await body(dir);
  } finally {
    await removeTemp(dir);
  }
}

const serveDb = (data, more = []) => ['--no-watch', '--data', data, ...more, DB_APP];
const rowsOf = (r) => r.value.map((row) => Object.values(row)[0]);

test('types round-trip; positional and named parameters; nothing is opened before the first use', opts, () =>
  withTemp(async (dir) => {
    const data = path.join(dir, 'data');
    await withRaw(serveDb(data), async (srv) => {
      await srv.initialize();
      await srv.call(nextId++, 'tools/list');
      assert.ok(!existsSync(data), 'no data folder before mcp.db is used');
      const t = await tool(srv, 'types', {});
      // maxinteger, mininteger, 0.5, text, blob, true, false, mcp.null, nil
      const want = [['integer', 'integer'], ['integer', 'integer'], ['float', 'real'], ['string', 'text'],
        ['string', 'blob'], ['integer', 'integer'], ['integer', 'integer'], ['null', 'null'], ['null', 'null']];
      want.forEach(([lua, sql], i) => assert.deepEqual(t[i + 1], { lua, sql, same: true }, `value ${i + 1}`));
      assert.deepEqual(t.named, { s: 42, c_is_null: true });
      assert.deepEqual(t.empty, [], 'no rows: an empty JSON array');
      assert.ok(existsSync(path.join(data, 'db.sqlite')));
      const ex = await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(k, v) VALUES (?, ?)', params: '["a", 1]' });
      assert.deepEqual(ex.value, { changes: 1, last_id: ex.value.last_id });
      const one = await tool(srv, 'sql', { op: 'one', sql: 'SELECT k, v FROM kv WHERE id = :id', params: JSON.stringify({ id: ex.value.last_id }) });
      assert.deepEqual(one.value, { k: 'a', v: 1 });
      assert.deepEqual(await tool(srv, 'temp', {}), [{ x: 1 }, { x: 2 }], 'a temporary table is read where it is');
      const none = await tool(srv, 'sql', { op: 'one', sql: 'SELECT 1 WHERE 0' });
      assert.equal(none.value, undefined, 'one: nil without a row');
      const many = await tool(srv, 'sql', { op: 'exec', sql: 'CREATE TABLE s1(x); CREATE TABLE s2(x); INSERT INTO s1 VALUES (1), (2)' });
      assert.equal(many.value.changes, 2, 'several statements without parameters');
      // WAL, foreign keys on (the writer's and a reader's)
      const mode = await tool(srv, 'sql', { op: 'one', sql: 'SELECT * FROM pragma_journal_mode, pragma_foreign_keys' });
      assert.deepEqual(mode.value, { journal_mode: 'wal', foreign_keys: 1 });
      await tool(srv, 'sql', { op: 'exec', sql: 'CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE c(p INTEGER REFERENCES p(id))' });
      const fk = await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO c VALUES (?)', params: '[7]' });
      assert.match(fk.error, /db\.lua:\d+: mcp\.db\.exec: FOREIGN KEY constraint failed/);
    });
    assert.ok(existsSync(path.join(data, 'db.sqlite')), 'the file is in --data');
  }));

test('injection attempts through every way of passing a value are values', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir), async (srv) => {
    await srv.initialize();
    const evil = ["x'); DROP TABLE kv; --", 'x" OR 1=1 --', "'; ATTACH 'evil.db' AS e; --", ':k', '?'];
    for (const [i, e] of evil.entries()) {
      const tag = `inj${i}`;
      await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(k, v) VALUES (?, ?)', params: JSON.stringify([tag, e]) });
      await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(k, v) VALUES (:k, :v)', params: JSON.stringify({ k: tag, v: e }) });
      const q = await tool(srv, 'sql', { op: 'query', sql: 'SELECT v FROM kv WHERE k = ? AND v = ?', params: JSON.stringify([tag, e]) });
      assert.deepEqual(rowsOf(q), [e, e], `stored verbatim: ${e}`);
      const o = await tool(srv, 'sql', { op: 'one', sql: 'SELECT count(*) AS n FROM kv WHERE v = :v', params: JSON.stringify({ v: e }) });
      assert.equal(o.value.n, 2);
      const none = await tool(srv, 'sql', { op: 'query', sql: 'SELECT k FROM kv WHERE k = ?', params: JSON.stringify([e]) });
      assert.deepEqual(none.value, [], 'a value is never taken as SQL');
    }
    const n = await tool(srv, 'sql', { op: 'one', sql: 'SELECT count(*) AS n FROM kv' });
    assert.equal(n.value.n, evil.length * 2, 'the table is still there, with every row');
  })));

test('errors: SQLite\'s message (and offset) at the author\'s FILE:LINE; values that cannot be bound', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir), async (srv) => {
    await srv.initialize();
    const cases = {
      function: /db\.lua:\d+: mcp\.db\.query: cannot bind a function \(parameter 1/,
      named: /db\.lua:\d+: mcp\.db\.query: cannot bind a function to :x/,
      missing: /db\.lua:\d+: mcp\.db\.query: no value for :x/,
      count: /db\.lua:\d+: mcp\.db\.query: the statement has 2 parameters, 1 value given/,
      mixed: /db\.lua:\d+: mcp\.db\.query: the statement names its parameter :x/,
      table: /db\.lua:\d+: mcp\.db\.query: the statement has a positional parameter/,
      two: /db\.lua:\d+: mcp\.db\.query: the text must be one statement/,
      sql: /db\.lua:\d+: mcp\.db\.query: the SQL must be a string/,
      begin: /db\.lua:\d+: mcp\.db\.exec: transactions are mcp\.db\.tx's/,
      savepoint: /db\.lua:\d+: mcp\.db\.query: transactions are mcp\.db\.tx's/,
      syntax: /db\.lua:\d+: mcp\.db\.query: near "=": syntax error \(at byte 34 of the statement\)/,
    };
    for (const [kind, re] of Object.entries(cases)) {
      const r = await tool(srv, 'bad_param', { kind });
      assert.equal(r.ok, false, kind);
      assert.match(r.error, re, kind);
    }
  })));

test('tx: commit, rollback on error (raised as it was), nested savepoints, SQL errors', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir), async (srv) => {
    await srv.initialize();
    assert.deepEqual(await tool(srv, 'tx', { case: 'commit', tag: 'c' }), { ok: true, value: 'done', rows: [1, 2] });
    const e = await tool(srv, 'tx', { case: 'error', tag: 'e' });
    assert.equal(e.ok, false);
    assert.match(e.value, /db\.lua:\d+: changed my mind$/);
    assert.deepEqual(e.rows, {}, 'rolled back');
    assert.deepEqual(await tool(srv, 'tx', { case: 'nested', tag: 'n' }), { ok: true, value: 7, rows: ['outer', 'inner2'] });
    const l = await tool(srv, 'tx', { case: 'lost', tag: 'l' });
    assert.equal(l.ok, false, 'tx raises: its transaction was lost');
    assert.match(l.value, /db\.lua:\d+: mcp\.db\.tx: the transaction was rolled back/);
    assert.deepEqual(l.rows, {}, 'nothing ran outside the transaction');
    const s = await tool(srv, 'tx', { case: 'sqlerror', tag: 's' });
    assert.match(s.value, /db\.lua:\d+: mcp\.db\.exec: no such table: nowhere/);
    assert.deepEqual(s.rows, {}, 'rolled back');
  })));

test('two calls\' transactions never interleave: the second waits for the first to end; another process waits for the lock', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir), async (srv) => {
    await srv.initialize();
    const flag = path.join(dir, 'go');
    const progressOf = (token, msg) => srv.take((l) => l.includes('notifications/progress') && l.includes(`"${token}"`) && l.includes(msg), `${token} ${msg}`);
    srv.send(callMsg('order', { who: 'A', flag }, 'A', { progressToken: 'pA' }));
    await progressOf('pA', '"in"'); // A holds the transaction, waiting for the flag
    srv.send(callMsg('order', { who: 'B' }, 'B', { progressToken: 'pB' }));
    await progressOf('pB', '"before"'); // B's BEGIN is queued behind A's transaction
    const ping = await srv.call('p', 'ping');
    assert.deepEqual(ping.result, {});
    // another process (luamcp call on the same file) waits for the lock until its deadline
    const insert = ['sql', JSON.stringify({ op: 'exec', sql: "INSERT INTO log(who) VALUES ('C')" })];
    const blocked = await runEnv(['call', '--timeout', '1', '--data', dir, DB_APP, ...insert]);
    assert.equal(blocked.code, 1);
    assert.match(blocked.stdout, /call timed out after 1 s/);
    await writeFile(flag, '');
    for (const id of ['"A"', '"B"']) assert.ok(JSON.parse(await srv.reply(id)).result, id);
    const after = await runEnv(['call', '--data', dir, DB_APP, ...insert]);
    assert.equal(after.code, 0, after.stderr);
    const log = await tool(srv, 'sql', { op: 'query', sql: 'SELECT who FROM log ORDER BY id' });
    assert.deepEqual(rowsOf(log), ['A', 'A', 'B', 'B', 'C']);
  })));

test('slow queries park their calls: pings, tools and writes answered while they run; a cancel interrupts them and rolls a tx back', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir), async (srv) => {
    await srv.initialize();
    const started = (token) => srv.take((l) => l.includes('notifications/progress') && l.includes(`"${token}"`), `${token} started`);
    // two reads: one on each reader connection
    srv.send(callMsg('slow', { n: HUGE }, 'slow1', { progressToken: 'p1' }));
    srv.send(callMsg('slow', { n: HUGE }, 'slow2', { progressToken: 'p2' }));
    await started('p1');
    await started('p2');
    for (let i = 0; i < 3; i++) assert.deepEqual((await srv.call(`ping${i}`, 'ping')).result, {});
    assert.equal(await tool(srv, 'echo', { text: 'other tools too' }, false), 'other tools too');
    const w = await tool(srv, 'sql', { op: 'exec', sql: 'INSERT INTO kv(k, v) VALUES (?, ?)', params: '["during", 1]' });
    assert.equal(w.value.changes, 1, 'the writer is free while readers count');
    assert.ok(!srv.lines.some((l) => /"id":"slow[12]"/.test(l)), 'the slow queries are still running');
    for (const id of ['slow1', 'slow2']) srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });
    // only an interrupt frees a reader: each count would take hours
    const during = await tool(srv, 'sql', { op: 'query', sql: 'SELECT v FROM kv WHERE k = ?', params: '["during"]' });
    assert.deepEqual(rowsOf(during), [1]);
    // in a transaction: the writer's
    srv.send(callMsg('slow', { n: HUGE, tag: 'cancelled' }, 'slowtx', { progressToken: 'ptx' }));
    await started('ptx');
    assert.deepEqual((await srv.call('ping-tx', 'ping')).result, {});
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slowtx', reason: 'test' } });
    const left = await tool(srv, 'sql', { op: 'exec', sql: 'DELETE FROM kv WHERE k = ?', params: '["cancelled"]' });
    assert.equal(left.value.changes, 0, 'the cancelled call\'s transaction rolled back');
    assert.ok(!srv.lines.some((l) => /"id":"slow(1|2|tx)"/.test(l)), 'no answer to a cancelled call');
  })));

test('--timeout interrupts a running query and rolls its transaction back', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir, ['--timeout', '2']), async (srv) => {
    await srv.initialize();
    const r = await srv.call('t', 'tools/call', { name: 'slow', arguments: { n: HUGE, tag: 'timedout' } });
    assert.match(JSON.stringify(r), /timed out/);
    const left = await tool(srv, 'sql', { op: 'query', sql: 'SELECT v FROM kv WHERE k = ?', params: '["timedout"]' });
    assert.deepEqual(left.value, []);
    assert.equal(await tool(srv, 'slow', { n: 1000 }, false), '1000', 'the connection goes on');
  })));

test('--sandbox: ATTACH, load_extension and pragmas that touch files are refused', opts, () =>
  withTemp((dir) => withRaw(serveDb(path.join(dir, 'd'), ['--sandbox']), async (srv) => {
    await srv.initialize();
    const refused = [`ATTACH '${dir}/other.db' AS o`, `SELECT load_extension('${dir}/x')`, 'PRAGMA journal_mode=DELETE',
      `VACUUM INTO '${dir}/copy.db'`, "PRAGMA temp_store_directory = '/tmp'", 'SELECT * FROM pragma_database_list'];
    for (const sql of refused) {
      const r = await tool(srv, 'sql', { op: 'query', sql });
      assert.match(r.error ?? '', /not authorized|authorization denied/, sql);
    }
    assert.ok(!existsSync(path.join(dir, 'other.db')) && !existsSync(path.join(dir, 'copy.db')));
    assert.deepEqual((await tool(srv, 'sql', { op: 'query', sql: 'PRAGMA user_version' })).value, [{ user_version: 0 }]);
  })));

test('a result larger than --memory-limit leaves room for is an error, the server goes on', opts, () =>
  withTemp((dir) => withRaw(serveDb(dir, ['--memory-limit', '16']), async (srv) => {
    await srv.initialize();
    const r = await srv.call('big', 'tools/call', { name: 'big', arguments: { n: 200, size: 200000 } });
    assert.equal(r.result?.isError, true, JSON.stringify(r));
    assert.match(r.result.content[0].text, /db\.lua:\d+: mcp\.db\.query: the result is larger than the call's memory limit/);
    assert.equal(await tool(srv, 'big', { n: 10, size: 1000 }, false), '10');
  })));

test('kill -9: every insert acknowledged before it is there after a restart', opts, () =>
  withTemp(async (dir) => {
    const srv = new RawServer(serveDb(dir));
    await srv.initialize();
    await tool(srv, 'sql', { op: 'query', sql: 'SELECT 1' }); // the schema
    for (let i = 1; i <= 1000; i++) srv.send(callMsg('ack', { i }, `ack${i}`));
    await srv.reply('"ack300"');
    srv.child.kill('SIGKILL');
    await srv.exited;
    const acked = srv.lines.map((l) => /"id":"ack(\d+)","result":\{"content"/.exec(l)).filter(Boolean).map((m) => Number(m[1]));
    assert.ok(acked.includes(300), `${acked.length} acknowledged`);
    const r = await runEnv(['call', '--data', dir, DB_APP, 'sql', JSON.stringify({ op: 'query', sql: 'SELECT i FROM acked' })]);
    assert.equal(r.code, 0, r.stderr);
    const there = new Set(rowsOf(JSON.parse(JSON.parse(r.stdout).content[0].text)));
    const lost = acked.filter((i) => !there.has(i));
    assert.deepEqual(lost, [], `acknowledged, then lost (of ${acked.length})`);
  }));

test('where the file is: --data, $XDG_DATA_HOME, ~/.local/share, $STATE_DIRECTORY; serve prints it; check makes nothing', opts, () =>
  withTemp(async (dir) => {
    const q = ['sql', JSON.stringify({ op: 'one', sql: 'SELECT 1 AS one' })];
    const clean = { XDG_DATA_HOME: undefined, STATE_DIRECTORY: undefined };
    const home = path.join(dir, 'home');
    const c = await runEnv(['check', DB_APP], { ...clean, HOME: home });
    assert.equal(c.code, 0, c.stderr);
    assert.ok(!existsSync(home), 'check made nothing');
    for (const [env, file] of [
      [{ ...clean, HOME: home }, path.join(home, '.local/share/luamcp/db-test/db.sqlite')],
      [{ ...clean, HOME: home, XDG_DATA_HOME: path.join(dir, 'xdg') }, path.join(dir, 'xdg/luamcp/db-test/db.sqlite')],
      [{ ...clean, HOME: home, STATE_DIRECTORY: path.join(dir, 'state') }, path.join(dir, 'state/db.sqlite')],
    ]) {
      const r = await runEnv(['call', DB_APP, ...q], env);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(existsSync(file), `${JSON.stringify(env)}: ${file}`);
    }
    const srv = new RawServer(['--no-watch', DB_APP], { env: { ...process.env, HOME: home, XDG_DATA_HOME: path.join(dir, 'xdg') } });
    await srv.initialize();
    const code = await srv.close();
    assert.equal(code.code, 0);
    assert.match(srv.stderr, new RegExp(`data folder: ${path.join(dir, 'xdg/luamcp/db-test').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  }));

test('over HTTP: concurrent calls\' inserts and transactions, all there', opts, () =>
  withTemp((dir) => withHttp(DB_APP, ['--no-watch', '--data', dir], async (srv) => {
    const { session } = await rawInitialize(srv);
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => post(srv, callMsg('ack', { i: i + 1 }), { session })),
      ...Array.from({ length: 5 }, (_, i) => post(srv, callMsg('tx', { case: 'commit', tag: `h${i}` }), { session })),
      ...Array.from({ length: 10 }, () => post(srv, callMsg('types', {}), { session })), // the readers
    ]);
    for (const ex of answers) assert.ok(answerOf(ex).result && !answerOf(ex).result.isError, ex.body);
    const n = answerOf(await post(srv, callMsg('sql', { op: 'one', sql: 'SELECT (SELECT count(*) FROM acked) AS a, (SELECT count(*) FROM kv) AS k' }), { session }));
    assert.deepEqual(JSON.parse(n.result.content[0].text).value, { a: 20, k: 10 });
  })));

test('--otlp: a CLIENT span per statement (db.system.name, db.operation.name), never the values; --metrics counts them', opts, () =>
  withTemp(async (dir) => {
    const spans = [];
    const rx = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (d) => chunks.push(d));
      req.on('end', () => {
        for (const rs of ExportTrace.decode(Buffer.concat(chunks)).resourceSpans)
          for (const ss of rs.scopeSpans) for (const sp of ss.spans) spans.push(sp);
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise((resolve) => rx.listen(0, '127.0.0.1', resolve));
    try {
      const mport = await freePort();
      await withHttp(DB_APP, ['--no-watch', '--data', dir, '--otlp', `http://127.0.0.1:${rx.address().port}`, '--metrics', `127.0.0.1:${mport}`], async (srv) => {
        const { session } = await rawInitialize(srv);
        const r = answerOf(await post(srv, callMsg('sql', { op: 'exec', sql: 'INSERT INTO kv(k, v) VALUES (?, ?)', params: '["span", "s3cret-value"]' }), { session }));
        assert.ok(r.result && !r.result.isError, JSON.stringify(r));
        const isInsert = (sp) => sp.name === 'INSERT';
        await until(() => spans.some(isInsert), 'the INSERT span');
        const sp = spans.find(isInsert);
        const attrs = Object.fromEntries(sp.attributes.map((a) => [a.key, a.value.stringValue]));
        assert.equal(sp.kind, 3, 'SPAN_KIND_CLIENT');
        assert.deepEqual(attrs, { 'db.system.name': 'sqlite', 'db.operation.name': 'INSERT' });
        assert.ok(spans.some((p) => Buffer.compare(p.spanId, sp.parentSpanId) === 0), 'under the call\'s span');
        assert.ok(!JSON.stringify(spans.map((x) => x.attributes)).includes('s3cret'), 'no value in any span');
        const bad = answerOf(await post(srv, callMsg('sql', { op: 'query', sql: 'SELEC' }), { session }));
        assert.match(bad.result.content[0].text, /syntax error/);
        const text = await (await fetch(`http://127.0.0.1:${mport}/metrics`)).text();
        assert.match(text, /^mcp_db_statements_total\{result="ok"\} [1-9]/m, text);
        assert.match(text, /^mcp_db_statements_total\{result="error"\} 1$/m);
      });
    } finally {
      rx.closeAllConnections();
      await new Promise((resolve) => rx.close(resolve));
    }
  }));

// {=================================================== migrations (db_migrate.c)

const MIG_SCRIPT = `local mcp = require "mcp"
mcp.tool { name = "q", description = "rows of a query", input = { sql = mcp.string() },
  handler = function(a) return mcp.db.query(a.sql) end }
mcp.tool { name = "hold", description = "an insert in a transaction held until the file flag exists",
  input = { flag = mcp.string() },
  handler = function(a, ctx)
    return mcp.db.tx(function()
      mcp.db.exec("INSERT INTO t VALUES ('held')")
      ctx:progress(1, 2, "in")
      mcp.exec { "sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.01; done', "sh", a.flag }
      return "held"
    end)
  end }
`;
const sha256 = (text) => createHash('sha256').update(text).digest('hex');
// 2 before 10: the order is the numbers', not the names'
const MIGRATIONS = {
  'migrations/001_base.sql': "CREATE TABLE t(x TEXT);\nINSERT INTO t VALUES ('001');\n",
  'migrations/2_more.sql': "-- a second table\nCREATE TABLE u(y TEXT);\n",
  'migrations/10_fill.sql': "INSERT INTO u VALUES ('010');\nINSERT INTO t VALUES ('010');\n",
};

test('migrations: applied in order at load with their checksums; a failing one at FILE:LINE leaves nothing of its set and the last good version serving; an edited applied one is refused; a new one saved while serving is applied on that reload', opts, async () => {
  const app = await tempApp({ 'scripts/q.lua': MIG_SCRIPT, ...MIGRATIONS });
  try {
    const data = path.join(app, '.data');
    await withRaw(['--data', data, app], async (srv) => {
      const log = watchLines(srv.child.stderr, srv.stderr);
      await srv.initialize();
      const q = async (sql) => (await tool(srv, 'q', { sql }));
      const applied = await q('SELECT name, checksum, applied_at > 0 AS at FROM luamcp_migrations ORDER BY rowid');
      assert.deepEqual(applied, Object.entries(MIGRATIONS).map(([f, text]) => ({ name: path.basename(f), checksum: sha256(text), at: 1 })));
      assert.deepEqual(await q('SELECT x FROM t ORDER BY rowid'), [{ x: '001' }, { x: '010' }]);
      const failed = () => log.count(/^luamcp: error: reload failed/);
      const good = () => log.count(/^luamcp: info: reloaded /);
      // a new migration whose third line fails: nothing of it applied, the version before serves
      let f0 = failed();
      await saveFile(path.join(app, 'migrations/11_bad.sql'), "INSERT INTO t VALUES ('011');\n\nINSERT INTO nope VALUES (1);\n");
      await log.until(() => failed() > f0, 'the failed reload of 11_bad.sql');
      assert.match(log.lines.join('\n'), /migrations\/11_bad\.sql:3: no such table: nope/);
      assert.deepEqual(await q('SELECT x FROM t ORDER BY rowid'), [{ x: '001' }, { x: '010' }], 'nothing of the failing set');
      assert.equal((await q('SELECT count(*) AS n FROM luamcp_migrations'))[0].n, 3);
      // fixed while serving: applied on that reload
      const g0 = good();
      await saveFile(path.join(app, 'migrations/11_bad.sql'), "INSERT INTO t VALUES ('011');\n");
      await log.until(() => good() > g0, 'the reload that applies 11_bad.sql');
      assert.deepEqual(await q('SELECT x FROM t ORDER BY rowid'), [{ x: '001' }, { x: '010' }, { x: '011' }]);
      assert.equal((await q("SELECT count(*) AS n FROM luamcp_migrations WHERE name = '11_bad.sql'"))[0].n, 1);
      // an applied migration edited: its checksum says so, nothing is skipped silently
      f0 = failed();
      await saveFile(path.join(app, 'migrations/2_more.sql'), 'CREATE TABLE u(y TEXT, z TEXT);\n');
      await log.until(() => failed() > f0, 'the failed reload of an edited 2_more.sql');
      assert.match(log.lines.join('\n'), /migrations\/2_more\.sql:1: edited after it was applied .*checksum sha256:/);
      assert.deepEqual(await q('SELECT count(*) AS n FROM u'), [{ n: 1 }], 'still serving');
      // a new one numbered below one applied: refused, not run out of order
      await saveFile(path.join(app, 'migrations/2_more.sql'), MIGRATIONS['migrations/2_more.sql']);
      f0 = failed();
      await saveFile(path.join(app, 'migrations/5_late.sql'), "INSERT INTO t VALUES ('005');\n");
      await log.until(() => failed() > f0, 'the failed reload of 5_late.sql');
      assert.match(log.lines.join('\n'), /migrations\/5_late\.sql: new, but numbered below 11_bad\.sql, applied already/);
      // an applied one whose file is gone: a warning, the reload goes on (one
      // file at a time: each removal's reload fails, then succeeds, for sure)
      const gone = /11_bad\.sql: applied to .* earlier, and no longer in migrations\//;
      f0 = failed();
      await rm(path.join(app, 'migrations/11_bad.sql'));
      await log.until(() => failed() > f0, 'the failed reload without 11_bad.sql, 5_late.sql still there');
      assert.match(log.lines.join('\n'), gone);
      const g1 = good(), warned = log.count(gone);
      await rm(path.join(app, 'migrations/5_late.sql'));
      await log.until(() => good() > g1, 'the reload without 5_late.sql');
      assert.ok(log.count(gone) > warned, 'warned again');
      assert.deepEqual(await q('SELECT x FROM t ORDER BY rowid'), [{ x: '001' }, { x: '010' }, { x: '011' }]);
      // a reload's migrations wait for a transaction a handler holds, the server answering meanwhile
      const flag = path.join(app, '.flag');
      srv.send(callMsg('hold', { flag }, 'hold', { progressToken: 'ph' }));
      await srv.take((l) => l.includes('notifications/progress') && l.includes('"ph"'), 'the transaction held');
      const g2 = good();
      await saveFile(path.join(app, 'migrations/12_after.sql'), "INSERT INTO t VALUES ('012');\n");
      await log.until((lines) => lines.some((l) => /the migrations wait for the write lock/.test(l)), 'the migrations waiting');
      assert.deepEqual((await srv.call('p', 'ping')).result, {});
      await writeFile(flag, '');
      assert.equal(JSON.parse(await srv.reply('"hold"')).result.content[0].text, 'held');
      await log.until(() => good() > g2, 'the reload that applies 12_after.sql');
      assert.deepEqual(await q('SELECT x FROM t ORDER BY rowid'), [{ x: '001' }, { x: '010' }, { x: '011' }, { x: 'held' }, { x: '012' }]);
    });
    // a fresh start on an edited file does not load at all
    await writeFile(path.join(app, 'migrations/2_more.sql'), 'CREATE TABLE u(y TEXT, z TEXT);\n');
    const r = await runEnv(['call', '--data', data, app, 'q', JSON.stringify({ sql: 'SELECT 1' })]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /2_more\.sql:1: edited after it was applied/);
  } finally {
    await removeTemp(app);
  }
});

test('migrations: luamcp check runs them on a scratch database in memory (no data folder); luamcp test gives each file a fresh database with them applied', opts, async () => {
  const each = (tag) => `local test = require "mcp.test"
local app = test.app()
test("fresh and migrated", function()
  test.eq(app:call("q", { sql = "SELECT x FROM t ORDER BY rowid" }).content[1].text, '[{"x":"001"},{"x":"010"}]')
  app:call("q", { sql = "INSERT INTO t VALUES ('${tag}') RETURNING x" })
end)
`;
  const app = await tempApp({ 'scripts/q.lua': MIG_SCRIPT, ...MIGRATIONS, 'tests/a_test.lua': each('a'), 'tests/b_test.lua': each('b') });
  try {
    const home = path.join(app, 'home');
    const env = { HOME: home, XDG_DATA_HOME: undefined, STATE_DIRECTORY: undefined };
    const ok = await runEnv(['check', app], env);
    assert.equal(ok.code, 0, ok.stderr);
    const t = await runEnv(['test', app], env);
    assert.equal(t.code, 0, t.stdout + t.stderr);
    assert.match(t.stdout + t.stderr, /2 passed/);
    assert.ok(!existsSync(home), 'neither made a data folder');
    await writeFile(path.join(app, 'migrations/12_bad.sql'), "-- one\nINSERT INTO t VALUES\n  ('x', 'y');\n");
    await writeFile(path.join(app, 'migrations/12_dup.sql'), 'SELECT 1;\n');
    await writeFile(path.join(app, 'migrations/13 bad name.sql'), 'SELECT 1;\n');
    let bad = await runEnv(['check', app], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /migrations\/12_(bad|dup)\.sql: its number 12 is also 12_(bad|dup)\.sql's/);
    assert.match(bad.stderr, /migrations\/13 bad name\.sql: not a migration's name/);
    await rm(path.join(app, 'migrations/12_dup.sql'));
    await rm(path.join(app, 'migrations/13 bad name.sql'));
    bad = await runEnv(['check', app], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /migrations\/12_bad\.sql:2: .*2 values/);
    const sv = await runEnv(['serve', '--data', path.join(app, 'data'), app], env); // stdin at EOF: it would end at once
    assert.equal(sv.code, 1, 'serve does not start on a failing migration');
    assert.match(sv.stderr, /migrations\/12_bad\.sql:2: .*2 values/);
    const tb = await runEnv(['test', app], env);
    assert.notEqual(tb.code, 0);
    assert.match(tb.stdout + tb.stderr, /12_bad\.sql:2:/);
    assert.ok(!existsSync(home), 'still no data folder');
  } finally {
    await removeTemp(app);
  }
});

// }===================================================

// {=================================================== luamcp db: backup, restore, migrate, query

const db = (data, app, ...rest) => runEnv(['db', '--data', data, app, ...rest]);
const lines = (r) => r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('luamcp db backup while a served app writes under load: the copy restores to a consistent database; restore is refused while serving, done after', opts, () =>
  withTemp(async (dir) => {
    const data = path.join(dir, 'live'), file = path.join(dir, 'copy.sqlite');
    const srv = new RawServer(serveDb(data));
    await srv.initialize();
    await tool(srv, 'sql', { op: 'query', sql: 'SELECT 1' }); // the schema: the server has the file open
    const N = 3000;
    for (let i = 1; i <= N; i++) srv.send(callMsg('ack', { i }, `load${i}`));
    await srv.reply('"load200"');
    const answered = () => srv.lines.filter((l) => /"id":"load\d+","result":\{"content"/.test(l)).length;
    const before = answered();
    const b = await db(data, DB_APP, 'backup', file);
    const after = answered();
    assert.equal(b.code, 0, b.stderr);
    assert.match(b.stdout, /^backed up .* to .*copy\.sqlite: \d+ rows in \d+ tables, \d+ pages, \d+ bytes$/m);
    // restore is refused while the server has the database open
    const refused = await db(data, DB_APP, 'restore', file);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is open in a luamcp process .*db\.sqlite\.lock/);
    // the copy restored into a fresh data folder: sound, and between the two counts
    const fresh = path.join(dir, 'fresh');
    const r = await db(fresh, DB_APP, 'restore', file);
    assert.equal(r.code, 0, r.stderr);
    const ic = await db(fresh, DB_APP, 'query', 'PRAGMA integrity_check');
    assert.deepEqual(lines(ic), [{ integrity_check: 'ok' }], ic.stderr);
    const n = lines(await db(fresh, DB_APP, 'query', 'SELECT count(*) AS n FROM acked'))[0].n;
    assert.ok(n >= before && n <= N, `${n} rows: ${before} answered before the backup, ${after} after`);
    await srv.reply(`"load${N}"`);
    assert.equal((await srv.close()).code, 0);
    // the server gone: restore is done, the database before kept
    const done = await db(data, DB_APP, 'restore', file);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /kept the database before as .*db\.sqlite\.before-restore \(\d+ rows\)/);
    assert.deepEqual(lines(await db(data, DB_APP, 'query', 'SELECT count(*) AS n FROM acked')), [{ n }]);
    assert.ok(existsSync(path.join(data, 'db.sqlite.before-restore')));
    // a file that is not a database is refused, the database untouched
    await writeFile(path.join(dir, 'junk'), 'not sqlite at all, padded to look like something '.repeat(20));
    const junk = await db(data, DB_APP, 'restore', path.join(dir, 'junk'));
    assert.equal(junk.code, 1);
    assert.match(junk.stderr, /is not a sound SQLite database/);
    assert.deepEqual(lines(await db(data, DB_APP, 'query', 'SELECT count(*) AS n FROM acked')), [{ n }]);
  }));

test('luamcp db query: rows as JSON lines, ARGs bound, writes refused without --write; migrate and migrate --status: pending, applied, edited, gone; read-only subcommands make no folder', opts, async () => {
  const app = await tempApp({ 'scripts/q.lua': MIG_SCRIPT, ...MIGRATIONS });
  try {
    const data = path.join(app, '.data');
    let st = await db(data, app, 'migrate', '--status');
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, /^pending  001_base\.sql\npending  2_more\.sql\npending  10_fill\.sql\n3 pending\n$/);
    for (const sub of [['backup', path.join(app, 'b.sqlite')], ['query', 'SELECT 1'], ['shell']]) {
      const r = await db(data, app, ...sub);
      assert.equal(r.code, 1, sub[0]);
      assert.match(r.stderr, /no database there yet/);
    }
    assert.ok(!existsSync(data), 'read-only subcommands made no data folder');
    const m = await db(data, app, 'migrate');
    assert.equal(m.code, 0, m.stderr);
    assert.match(m.stdout, /^applied  001_base\.sql  \d{4}-\d\d-\d\dT[\d:]+Z  sha256:[0-9a-f]{12}$/m);
    st = await db(data, app, 'migrate', '--status');
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, /applied  001_base\.sql .*\napplied  2_more\.sql .*\napplied  10_fill\.sql .*\n0 pending\n$/);
    // query: rows, parameters, types
    const q = await db(data, app, 'query', "SELECT x, length(x) AS n, NULL AS z, x'00ff' AS b FROM t WHERE x > ? ORDER BY x", '001');
    assert.equal(q.code, 0, q.stderr);
    assert.deepEqual(lines(q), [{ x: '010', n: 3, z: null, b: '00ff' }]);
    const tb = await db(data, app, 'query', '--table', "SELECT x, NULL AS none FROM t ORDER BY x");
    assert.equal(tb.code, 0, tb.stderr);
    assert.equal(tb.stdout, 'x    none\n---  ----\n001  NULL\n010  NULL\n');
    // writes: refused without --write, nothing changed; done with it
    const w = await db(data, app, 'query', "INSERT INTO t VALUES ('cli')");
    assert.equal(w.code, 1);
    assert.match(w.stderr, /writes: query is read-only unless --write/);
    assert.deepEqual(lines(await db(data, app, 'query', 'SELECT count(*) AS n FROM t')), [{ n: 2 }]);
    const ww = await db(data, app, 'query', '--write', "INSERT INTO t VALUES (?)", 'cli');
    assert.equal(ww.code, 0, ww.stderr);
    assert.deepEqual(lines(await db(data, app, 'query', 'SELECT count(*) AS n FROM t')), [{ n: 3 }]);
    // errors: SQL, two statements, parameters, usage
    assert.equal((await db(data, app, 'query', 'SELEC 1')).code, 1);
    assert.match((await db(data, app, 'query', 'SELECT 1; SELECT 2')).stderr, /one statement at a time/);
    assert.match((await db(data, app, 'query', 'SELECT ?')).stderr, /the statement has 1 parameters/);
    for (const args of [['query'], ['frobnicate'], ['backup'], ['migrate', '--write'], ['backup', '--table', 'f'], ['query', '--nope', 'SELECT 1']]) {
      const u = await db(data, app, ...args);
      assert.equal(u.code, 2, args.join(' '));
    }
    // an edited applied migration, a new one, a removed one
    await writeFile(path.join(app, 'migrations/2_more.sql'), 'CREATE TABLE u(y TEXT, z TEXT);\n');
    await writeFile(path.join(app, 'migrations/20_new.sql'), 'SELECT 1;\n');
    await rm(path.join(app, 'migrations/001_base.sql'));
    st = await db(data, app, 'migrate', '--status');
    assert.equal(st.code, 1);
    assert.match(st.stdout, /^edited   2_more\.sql .* applied as sha256:[0-9a-f]{12}, the file is now sha256:[0-9a-f]{12}$/m);
    assert.match(st.stdout, /^pending  20_new\.sql$/m);
    assert.match(st.stdout, /^gone     001_base\.sql .* no longer in migrations\/$/m);
    assert.match(st.stderr, /2_more\.sql: edited after it was applied/);
  } finally {
    await removeTemp(app);
  }
});

test('luamcp db --help and luamcp help db: each subcommand; luamcp --help lists db', opts, async () => {
  for (const args of [['db', '--help'], ['help', 'db'], ['db', 'x', 'backup', '--help']]) {
    const r = await runEnv(args);
    assert.equal(r.code, 0);
    for (const sub of ['backup FILE', 'restore FILE', 'migrate [--status]', 'query [--write] [--table] SQL [ARG...]', 'shell [--write]'])
      assert.ok(r.stdout.includes(`luamcp db [--data DIR] APPDIR ${sub}`), `${args.join(' ')}: ${sub}`);
    assert.match(r.stdout, /db\.sqlite\.lock/);
  }
  assert.match((await runEnv(['--help'])).stdout, /luamcp db \[--data DIR\] DIR SUBCOMMAND/);
});

// }===================================================
