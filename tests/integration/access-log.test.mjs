// access-log.test.mjs — `serve --access-log FILE`: one JSON line per request
// answered, for each kind of outcome, with the peer, the session, the
// subject and the instance; SIGUSR1 (logrotate's convention) reopens the file
// and a rotation under load loses no line.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, TEST_TIMEOUT } from './helpers.mjs';
import { exchange, mcpHeaders, post, rpc, withHttp } from './http-helpers.mjs';
import { until } from './services.mjs';

const opts = { timeout: TEST_TIMEOUT };
const APP = path.join(APPS, 'metrics');
const dir = mkdtempSync(path.join(tmpdir(), 'luamcp-access-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

const INIT = () => rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } });

test('a line per request: ok, tool_error, error, timeout, cancelled; peer, session, subject, instance, id, duration, bytes', opts, async () => {
  const log = path.join(dir, 'outcomes.log');
  // a bearer token: the subject is logged, never the token
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = path.join(dir, 'jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k' }] }));
  const RESOURCE = 'https://mcp.test.example/mcp', ISSUER = 'https://as.test.example';
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const signed = `${b64({ alg: 'ES256', typ: 'at+jwt', kid: 'k' })}.${b64({ iss: ISSUER, aud: RESOURCE, sub: 'ada', exp: now + 600, iat: now })}`;
  const token = `${signed}.${crypto.sign('sha256', Buffer.from(signed), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  const auth = { Authorization: `Bearer ${token}` };
  await withHttp(APP, ['--access-log', log, '--timeout', '0.3', '--instance', 'east-1',
    '--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', jwks], async (srv) => {
    const init = await post(srv, INIT(), { version: null, extra: auth });
    const session = init.headers['mcp-session-id'];
    const call = (id, name) => post(srv, rpc('tools/call', { name, arguments: {} }, id), { session, extra: auth });
    await call('c-fine', 'fine');
    await call('c-sad', 'sad');
    await call('c-refuse', 'refuse');
    await call('c-slow', 'slow');
    // cancelled: the call is parked, the client cancels it
    const pending = exchange(srv, { method: 'POST', headers: mcpHeaders({ session, extra: auth }), body: rpc('tools/call', { name: 'slow', arguments: {} }, 'c-cancel') });
    await new Promise((r) => setTimeout(r, 100));
    await post(srv, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c-cancel' } }, { session, extra: auth });
    await (await pending).finished().catch(() => {});
    await post(srv, rpc('tools/list', {}, 'l-1'), { session, extra: auth });
    await until(() => lines(log).length >= 7, 'the access log lines');
    const got = Object.fromEntries(lines(log).map((l) => [String(l.id), l]));
    assert.deepEqual(['c-fine', 'c-sad', 'c-refuse', 'c-slow', 'c-cancel'].map((id) => got[id]?.outcome),
      ['ok', 'tool_error', 'error', 'timeout', 'cancelled'], JSON.stringify(got));
    const fine = got['c-fine'];
    assert.equal(fine.method, 'tools/call');
    assert.equal(fine.name, 'fine');
    assert.equal(fine.peer, '127.0.0.1');
    assert.equal(fine.session, session);
    assert.equal(fine.subject, 'ada');
    assert.equal(fine.instance, 'east-1');
    assert.equal(fine.revision, '2025-11-25');
    assert.ok(fine.bytes > 20 && fine.duration_ms >= 0);
    assert.match(fine.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(got['c-slow'].duration_ms >= 250, JSON.stringify(got['c-slow']));
    assert.equal(got['l-1'].method, 'tools/list');
    assert.equal(got['1'] ? got['1'].method : lines(log)[0].method, 'initialize');
    assert.ok(!readFileSync(log, 'utf8').includes(token.split('.')[2]), 'the token reached the access log');
  });
});

// issue 33, item 9: a request refused before it reaches the engine (its
// token) was in no access-log line; each is one now, with the status and a
// fixed word for why, never the token
test('refused requests: a line each (status, reason), never the token', opts, async () => {
  const log = path.join(dir, 'refused.log');
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = path.join(dir, 'jwks-refused.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k' }] }));
  const RESOURCE = 'https://mcp.test.example/mcp', ISSUER = 'https://as.test.example';
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const sign = (claims) => {
    const signed = `${b64({ alg: 'ES256', typ: 'at+jwt', kid: 'k' })}.${b64(claims)}`;
    return `${signed}.${crypto.sign('sha256', Buffer.from(signed), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  };
  const now = Math.floor(Date.now() / 1000);
  const expired = sign({ iss: ISSUER, aud: RESOURCE, sub: 'ada', exp: now - 3600, iat: now - 7200 });
  const forged = `${expired.slice(0, expired.lastIndexOf('.'))}.${'A'.repeat(86)}`;
  await withHttp(APP, ['--access-log', log, '--instance', 'east-1',
    '--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', jwks], async (srv) => {
    const statuses = [];
    for (const extra of [{}, { Authorization: 'Basic YWRhOnNlY3JldA==' }, { Authorization: `Bearer ${expired}` },
      { Authorization: `Bearer ${forged}` }])
      statuses.push((await post(srv, INIT(), { version: null, extra })).status);
    assert.deepEqual(statuses, [401, 401, 401, 401]);
    await until(() => lines(log).length >= 4, 'the access log lines of the refusals');
    const got = lines(log);
    assert.deepEqual(got.map((l) => [l.outcome, l.status, l.instance, l.peer]),
      Array(4).fill(['refused', 401, 'east-1', '127.0.0.1']), JSON.stringify(got));
    assert.deepEqual(got.map((l) => l.refused).slice(0, 2), ['no_token', 'not_bearer']);
    assert.ok(got.slice(2).every((l) => /^[a-z_]+$/.test(l.refused)), JSON.stringify(got));
    const text = readFileSync(log, 'utf8');
    for (const secret of [expired.split('.')[2], 'YWRhOnNlY3JldA', 'A'.repeat(86)])
      assert.ok(!text.includes(secret), 'a token reached the access log');
  });
});

test('SIGUSR1 reopens the file: a rotation under load loses no line', opts, async () => {
  const log = path.join(dir, 'rotate.log');
  await withHttp(APP, ['--access-log', log], async (srv) => {
    const REV = '2026-07-28';
    const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
    const N = 600;
    let sent = 0;
    const load = (async () => {
      for (let i = 0; i < N; i += 20) {
        await Promise.all(Array.from({ length: 20 }, (_, k) => post(srv, rpc('tools/call', { name: 'fine', arguments: {}, _meta: meta }, `r${i + k}`),
          { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'fine' } })));
        sent += 20;
      }
    })();
    await until(() => sent >= N / 3, 'a third of the load');
    renameSync(log, `${log}.1`); // what logrotate does, then the signal
    process.kill(srv.child.pid, 'SIGUSR1');
    await load;
    await until(() => lines(log).length + lines(`${log}.1`).length >= N, 'every line');
    const ids = [...lines(`${log}.1`), ...lines(log)].map((l) => l.id);
    assert.equal(ids.length, N);
    assert.equal(new Set(ids).size, N);
    assert.ok(lines(log).length > 0 && lines(`${log}.1`).length > 0, 'both files have lines');
    assert.match(srv.stderr, /access log: reopened/);
  });
});
