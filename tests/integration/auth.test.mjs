// auth.test.mjs — `serve --http --auth-resource … --auth-issuer … --auth-jwks FILE`:
// luamcp as an OAuth 2.1 resource server with its issuer's keys in a file.
// The tokens are JWTs signed here with node:crypto as an issuer would sign
// them (the refusals need tokens no real issuer would make); the flow with a
// real authorization server comes with discovery of its keys.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';

import { APPS, FEATURES_APP, TEST_TIMEOUT, WAIT, removeTemp, run, tempApp } from './helpers.mjs';
import { exchange, mcpHeaders, post, rpc, withHttp } from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const ISSUER = 'https://as.test.example';
const RESOURCE = 'https://mcp.test.example/mcp';
const PRM_URL = 'https://mcp.test.example/.well-known/oauth-protected-resource/mcp';

const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const stranger = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const dir = mkdtempSync(path.join(tmpdir(), 'luamcp-auth-'));
const JWKS = path.join(dir, 'jwks.json');
writeFileSync(JWKS, JSON.stringify({ keys: [
  { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa-1', use: 'sig', alg: 'RS256' },
  { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec-1', use: 'sig' },
] }));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);
const issued = [];
function jwt(claims = {}, { alg = 'RS256', kid = 'rsa-1', key = rsa.privateKey, header = {}, sign } = {}) {
  const c = { iss: ISSUER, aud: RESOURCE, sub: 'user-1', client_id: 'c1', scope: 'files:read', iat: now(), exp: now() + 600, ...claims };
  for (const k of Object.keys(c)) if (c[k] === undefined) delete c[k];
  const signed = `${b64({ alg, typ: 'at+jwt', kid, ...header })}.${b64(c)}`;
  const sig = sign ? sign(signed)
    : alg === 'ES256' ? crypto.sign('sha256', Buffer.from(signed), { key, dsaEncoding: 'ieee-p1363' })
    : crypto.sign('sha256', Buffer.from(signed), key);
  const t = `${signed}.${Buffer.from(sig).toString('base64url')}`;
  issued.push(t);
  return t;
}
const bearer = (t) => ({ Authorization: `Bearer ${t}` });
const ARGS = ['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', JWKS, '--auth-scopes', 'files:read,files:write'];

function challengeOf(ex) {
  const h = ex.headers['www-authenticate'] || '';
  assert.match(h, /^Bearer /, `no Bearer challenge: ${ex.status} ${JSON.stringify(ex.headers)}`);
  assert.ok(h.includes(`resource_metadata="${PRM_URL}"`), h);
  return h;
}

test('the Protected Resource Metadata is served without a token, at the well-known path and its /mcp form', opts, () =>
  withHttp(FEATURES_APP, ARGS, async (srv) => {
    for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const ex = await exchange(srv, { method: 'GET', path: p });
      await ex.finished();
      assert.equal(ex.status, 200, `${p}: ${ex.body}`);
      assert.deepEqual(JSON.parse(ex.body), {
        resource: RESOURCE, authorization_servers: [ISSUER], scopes_supported: ['files:read', 'files:write'],
        bearer_methods_supported: ['header'], resource_name: 'luamcp-test-features',
      });
    }
    const other = await exchange(srv, { method: 'GET', path: '/.well-known/oauth-protected-resource/elsewhere' });
    await other.finished();
    assert.equal(other.status, 404);
  }));

test('no token, a bad one, or one in the URL: 401/400 with the challenge, on POST, GET and DELETE; a good one passes', opts, () =>
  withHttp(FEATURES_APP, ARGS, async (srv) => {
    const init = rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } });
    for (const method of ['POST', 'GET', 'DELETE']) {
      const ex = await exchange(srv, { method, headers: mcpHeaders({ method, session: method === 'POST' ? undefined : 'x' }), body: method === 'POST' ? init : undefined });
      await ex.finished();
      assert.equal(ex.status, 401, `${method} without a token: ${ex.status}`);
      assert.doesNotMatch(challengeOf(ex), /error=/, 'no error code when no token was sent (RFC 6750 3.1)');
      // the scopes to ask for first (--auth-scopes): without them a client asks for every scope the metadata lists
      assert.match(challengeOf(ex), /scope="files:read files:write"/, 'the 401 names the scopes (2025-11-25, Scope Selection)');
    }
    const refused = {
      'another audience': jwt({ aud: 'https://other.example/mcp' }),
      'an audience list without ours': jwt({ aud: ['https://other.example/mcp', 'https://mcp.test.example'] }),
      'another issuer': jwt({ iss: 'https://evil.example' }),
      'expired': jwt({ exp: now() - 3600, iat: now() - 7200 }),
      'not valid yet': jwt({ nbf: now() + 3600 }),
      'no exp': jwt({ exp: undefined }),
      'alg none': `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64({ iss: ISSUER, aud: RESOURCE, exp: now() + 600 })}.`,
      'HS256 keyed with the public key': jwt({}, { alg: 'HS256', sign: (s) => crypto.createHmac('sha256', rsa.publicKey.export({ type: 'spki', format: 'pem' })).update(s).digest() }),
      'a key the issuer does not publish': jwt({}, { key: stranger.privateKey }),
      'an unknown kid': jwt({}, { kid: 'rsa-9' }),
      'malformed': 'not.a.jwt',
      'an id token, not an access token': jwt({}, { header: { typ: 'JWT' } }),
      // RFC 9068 2.2: sub is required; without it every such caller would be the same no one
      'no sub': jwt({ sub: undefined }),
      'an empty sub': jwt({ sub: '' }),
      'a sub that is no string': jwt({ sub: 42 }),
    };
    for (const [what, t] of Object.entries(refused)) {
      const ex = await post(srv, init, { version: null, extra: bearer(t) });
      assert.equal(ex.status, 401, `${what}: ${ex.status} ${ex.body}`);
      assert.match(challengeOf(ex), /error="invalid_token"/, what);
      assert.ok(!ex.body.includes(t) && !JSON.stringify(ex.headers).includes(t), `${what}: the token is echoed`);
      if (what.includes('sub')) assert.match(challengeOf(ex), /error_description="the token names no subject \(sub\)"/, what);
      // not "expired": it never had an expiry (RFC 9068 2.2 requires exp)
      if (what === 'no exp') assert.match(challengeOf(ex), /error_description="the token has no expiry \(exp\)"/, what);
    }
    const inUrl = await exchange(srv, { method: 'POST', path: `/mcp?access_token=${jwt()}`, headers: mcpHeaders({ version: null }), body: init });
    await inUrl.finished();
    assert.equal(inUrl.status, 400);
    assert.match(challengeOf(inUrl), /error="invalid_request"/);
    const huge = await exchange(srv, { method: 'POST', headers: mcpHeaders({ version: null, extra: { Authorization: `Bearer ${'a'.repeat(65536)}` } }), body: init });
    await huge.finished();
    assert.ok(huge.status >= 400 && huge.status < 500, `a 64 KiB Authorization header: ${huge.status}`);

    for (const t of [jwt(), jwt({}, { alg: 'ES256', kid: 'ec-1', key: ec.privateKey }), jwt({}, { kid: undefined })]) {
      const ok = await post(srv, init, { version: null, extra: bearer(t) });
      assert.equal(ok.status, 200, `a good token: ${ok.status} ${ok.body}`);
    }
    for (const t of issued) assert.ok(!srv.stderr.includes(t), 'a token reached the log');
  }));

test('the official client with a valid token: tools listed and called over a 2025-11-25 session', opts, () =>
  withHttp(FEATURES_APP, ARGS, async (srv) => {
    const token = jwt({ scope: 'files:read files:write' });
    const transport = new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: bearer(token) } });
    const client = new Client({ name: 'auth-test', version: '0.0.0' });
    await client.connect(transport, { timeout: WAIT });
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'echo'), tools.map((t) => t.name).join());
      const r = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      assert.ok(!r.isError, JSON.stringify(r));
    } finally {
      await client.close();
    }
    assert.ok(!srv.stderr.includes(token), 'the token reached the log');
  }));

test('2026-07-28 requests carry their token each time: without it 401, with it answered', opts, () =>
  withHttp(path.join(APPS, 'modern'), ARGS, async (srv) => {
    const REV = '2026-07-28';
    const list = rpc('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} } });
    const h = (extra) => ({ version: REV, extra: { 'Mcp-Method': 'tools/list', ...extra } });
    const without = await post(srv, list, h({}));
    assert.equal(without.status, 401);
    challengeOf(without);
    const withToken = await post(srv, list, h(bearer(jwt())));
    assert.equal(withToken.status, 200, withToken.body);
    assert.ok(JSON.parse(withToken.body).result.tools.length > 0);
  }));

test('a verified token is remembered only until it expires', opts, () =>
  withHttp(FEATURES_APP, [...ARGS, '--auth-skew', '0'], async (srv) => {
    const init = rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } });
    const exp = now() + 2;
    const t = jwt({ exp });
    for (let i = 0; i < 2; i++) {  // the second is answered from the cache
      const ex = await post(srv, init, { version: null, extra: bearer(t) });
      assert.equal(ex.status, 200, ex.body);
    }
    while (now() < exp) await new Promise((r) => setTimeout(r, 100));
    const late = await post(srv, init, { version: null, extra: bearer(t) });
    assert.equal(late.status, 401, 'an expired token was still let in');
    assert.match(challengeOf(late), /expired/);
  }));

const AUTH_APP = path.join(APPS, 'auth');
const INIT = () => rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } });

// a 2025-11-25 session opened with token t: its id
async function openSession(srv, t) {
  const ex = await post(srv, INIT(), { version: null, extra: bearer(t) });
  assert.equal(ex.status, 200, ex.body);
  const session = ex.headers['mcp-session-id'];
  assert.ok(session);
  const ack = await post(srv, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session, extra: bearer(t) });
  assert.equal(ack.status, 202);
  return session;
}
const resultOf = (ex) => {
  assert.equal(ex.status, 200, ex.body);
  const m = JSON.parse(ex.body.startsWith('{') ? ex.body : ex.body.split('\n').find((l) => l.startsWith('data: {')).slice(6));
  return m.result ?? m.error;
};

test('ctx.auth: the subject, client, scopes, expiry and claims of the token, read-only; never the token itself', opts, () =>
  withHttp(AUTH_APP, ARGS, async (srv) => {
    const exp = now() + 600;
    const t = jwt({ sub: 'alice', client_id: 'app-7', scope: 'files:read openid', exp, tenant: 'acme' });
    const session = await openSession(srv, t);
    const r = resultOf(await post(srv, rpc('tools/call', { name: 'whoami', arguments: {} }), { session, extra: bearer(t) }));
    const text = r.content[0].text;
    assert.ok(!text.includes(t.split('.')[2]), 'the token reached the script');
    const who = JSON.parse(text);
    assert.equal(who.subject, 'alice');
    assert.equal(who.client_id, 'app-7');
    assert.equal(who.issuer, ISSUER);
    assert.equal(who.expires, exp);
    assert.equal(who.scopes, 'files:read openid');
    assert.equal(who.claims.tenant, 'acme');
    assert.equal(who.claims.sub, 'alice');
    assert.equal(who.key, 'alice@https%3A%2F%2Fas.test.example', 'ctx.auth.key: subject and issuer');
    assert.equal(who.subject_is_client, undefined);
    assert.equal(who.can_read, true);
    assert.equal(who.can_both, false);
    assert.match(who.write_error, /ctx\.auth is read-only/);
  }));

test('declared scopes: each caller lists what its token allows; a call without the scope is 403 insufficient_scope naming what to ask for', opts, () =>
  withHttp(AUTH_APP, ARGS, async (srv) => {
    const reader = jwt({ sub: 'r', scope: 'files:read' });
    const nobody = jwt({ sub: 'n', scope: 'openid' });
    const names = async (t, method, key, field) => {
      const session = await openSession(srv, t);
      const r = resultOf(await post(srv, rpc(method, {}), { session, extra: bearer(t) }));
      return [session, r[key].map((x) => x[field]).sort()];
    };
    // the metadata names every scope an item declares, after the configured ones
    const prm = await exchange(srv, { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp' });
    await prm.finished();
    assert.deepEqual(JSON.parse(prm.body).scopes_supported, ['files:read', 'files:write', 'admin']);
    assert.equal(JSON.parse(prm.body).resource_name, 'auth-test');
    const [rs, readerTools] = await names(reader, 'tools/list', 'tools', 'name');
    assert.deepEqual(readerTools, ['ask_name', 'read_file', 'slow', 'whoami']);
    assert.deepEqual((await names(nobody, 'tools/list', 'tools', 'name'))[1], ['ask_name', 'slow', 'whoami']);
    assert.deepEqual((await names(reader, 'resources/list', 'resources', 'uri'))[1], ['file:///secret.txt']);
    assert.deepEqual((await names(nobody, 'resources/list', 'resources', 'uri'))[1], []);
    assert.deepEqual((await names(nobody, 'resources/templates/list', 'resourceTemplates', 'uriTemplate'))[1], []);
    assert.deepEqual((await names(reader, 'prompts/list', 'prompts', 'name'))[1], []);
    // allowed
    const ok = resultOf(await post(srv, rpc('tools/call', { name: 'read_file', arguments: {} }), { session: rs, extra: bearer(reader) }));
    assert.equal(ok.content[0].text, 'read');
    // not allowed: 403, the scopes held and the one missing
    for (const [method, params] of [['tools/call', { name: 'write_file', arguments: {} }],
      ['resources/read', { uri: 'file:///secret.txt' }], ['resources/read', { uri: 'file:///docs/a' }],
      ['prompts/get', { name: 'admin_prompt' }]]) {
      const t = method === 'tools/call' ? reader : method === 'prompts/get' ? reader : nobody;
      const session = await openSession(srv, t);
      const ex = await post(srv, rpc(method, params), { session, extra: bearer(t) });
      assert.equal(ex.status, 403, `${method} ${JSON.stringify(params)}: ${ex.status} ${ex.body}`);
      const h = ex.headers['www-authenticate'];
      assert.match(h, /^Bearer error="insufficient_scope", scope="[^"]+", resource_metadata="/, h);
      const want = h.match(/scope="([^"]+)"/)[1];
      const expected = method === 'tools/call' ? 'files:read files:write' : method === 'prompts/get' ? 'files:read admin' : 'openid files:read';
      assert.equal(want, expected, h);
      assert.equal(JSON.parse(ex.body).error.code, -32043);
    }
    // subscribing is reading's business: a caller without the resource's scope is refused (it would hear of updates)
    const nobodySession = await openSession(srv, nobody);
    const sub = await post(srv, rpc('resources/subscribe', { uri: 'file:///secret.txt' }), { session: nobodySession, extra: bearer(nobody) });
    assert.equal(sub.status, 403, sub.body);
    assert.equal(JSON.parse(sub.body).error.code, -32043);
    const readerSub = await post(srv, rpc('resources/subscribe', { uri: 'file:///secret.txt' }), { session: rs, extra: bearer(reader) });
    assert.deepEqual(resultOf(readerSub), {});
    // a granted scope a header cannot carry (a quote): still a 403 to step up from, without it
    const odd = jwt({ sub: 'o', scope: 'files:read we"ird' });
    const oddSession = await openSession(srv, odd);
    const oddEx = await post(srv, rpc('tools/call', { name: 'write_file', arguments: {} }), { session: oddSession, extra: bearer(odd) });
    assert.equal(oddEx.status, 403, oddEx.body);
    assert.match(oddEx.headers['www-authenticate'], /scope="files:read files:write"/);
    // the wider token: the call succeeds on the same session (step-up)
    const both = jwt({ sub: 'r', scope: 'files:read files:write' });
    const done = resultOf(await post(srv, rpc('tools/call', { name: 'write_file', arguments: {} }), { session: rs, extra: bearer(both) }));
    assert.equal(done.content[0].text, 'written');
    // 2026-07-28: a list cut for one caller is not for a shared cache
    const REV = '2026-07-28';
    const list = rpc('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} } });
    const modern = await post(srv, list, { version: REV, extra: { 'Mcp-Method': 'tools/list', ...bearer(reader) } });
    const mr = resultOf(modern);
    assert.deepEqual(mr.tools.map((x) => x.name).sort(), ['ask_name', 'read_file', 'slow', 'whoami']);
    assert.equal(mr.cacheScope, 'private');
  }));

test('a session belongs to whoever opened it: another subject\'s token finds no session (POST, GET, DELETE); a refreshed token of the same one goes on', opts, () =>
  withHttp(AUTH_APP, ARGS, async (srv) => {
    const alice = jwt({ sub: 'alice' });
    const session = await openSession(srv, alice);
    const mallory = jwt({ sub: 'mallory' });
    const other = jwt({ sub: 'alice', client_id: 'another-client' });
    for (const t of [mallory, other]) {
      const p = await post(srv, rpc('tools/list', {}), { session, extra: bearer(t) });
      assert.equal(p.status, 404, p.body);
      for (const method of ['GET', 'DELETE']) {
        const ex = await exchange(srv, { method, headers: mcpHeaders({ method, session, extra: bearer(t) }) });
        await ex.finished();
        assert.equal(ex.status, 404, `${method}: ${ex.status}`);
      }
    }
    const refreshed = jwt({ sub: 'alice', exp: now() + 1200 });
    const r = resultOf(await post(srv, rpc('tools/call', { name: 'whoami', arguments: {} }), { session, extra: bearer(refreshed) }));
    assert.equal(JSON.parse(r.content[0].text).subject, 'alice');
  }));

test('a task and an MRTR requestState belong to the user whose token made them: another user\'s tasks/get or retry is refused', opts, () =>
  withHttp(AUTH_APP, ARGS, async (srv) => {
    const REV = '2026-07-28';
    const meta = { 'io.modelcontextprotocol/protocolVersion': REV,
      'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const ask = (t, method, params, name) => post(srv, rpc(method, { ...params, _meta: meta }),
      { version: REV, extra: { 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}), ...bearer(t) } });
    const alice = jwt({ sub: 'alice' }), bob = jwt({ sub: 'bob' });
    const created = resultOf(await ask(alice, 'tools/call', { name: 'slow', arguments: {} }, 'slow'));
    assert.equal(created.resultType, 'task', JSON.stringify(created));
    const theirs = await ask(bob, 'tasks/get', { taskId: created.taskId }, created.taskId);
    assert.match(JSON.stringify(JSON.parse(theirs.body).error), /Unknown task/, theirs.body);
    const mine = resultOf(await ask(alice, 'tasks/get', { taskId: created.taskId }, created.taskId));
    assert.ok(['working', 'completed'].includes(mine.status), JSON.stringify(mine));
    // a multi round-trip: alice's requestState does not fit bob's retry
    const round = resultOf(await ask(alice, 'tools/call', { name: 'ask_name', arguments: {} }, 'ask_name'));
    assert.equal(round.resultType, 'input_required', JSON.stringify(round));
    const [key] = Object.keys(round.inputRequests);
    const retry = { name: 'ask_name', arguments: {}, requestState: round.requestState,
      inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } } };
    const stolen = await ask(bob, 'tools/call', retry, 'ask_name');
    assert.match(JSON.parse(stolen.body).error?.message ?? '', /requestState \(made for another request\)/, stolen.body);
    const answered = resultOf(await ask(alice, 'tools/call', retry, 'ask_name'));
    assert.equal(answered.content[0].text, 'hello Ada');
  }));

test('list_changed after a reload reaches whoever can see a change: a change to a scoped tool is not told to a caller without its scope', opts, async () => {
  const files = Object.fromEntries(['app.lua', 'scripts/files.lua'].map((f) => [f, readFileSync(path.join(AUTH_APP, f), 'utf8')]));
  const app = await tempApp(files);
  try {
    await withHttp(app, ARGS, async (srv) => {
      const reader = jwt({ sub: 'r', scope: 'files:read' }), nobody = jwt({ sub: 'n', scope: 'openid' });
      const streams = [];
      for (const t of [reader, nobody]) {
        const session = await openSession(srv, t);
        await post(srv, rpc('tools/list', {}), { session, extra: bearer(t) }); // the session's caller is known
        const get = await exchange(srv, { method: 'GET', headers: mcpHeaders({ method: 'GET', session, extra: bearer(t) }) });
        assert.equal(get.status, 200);
        streams.push(get);
      }
      const changes = (ex) => ex.events.filter((e) => e.message?.method === 'notifications/tools/list_changed').length;
      const script = path.join(app, 'scripts', 'files.lua');
      // only read_file (files:read) changes: the reader is told, nobody is not
      writeFileSync(script, files['scripts/files.lua'].replace('"Needs files:read."', '"Needs files:read (v2)."'));
      await streams[0].waitEvent((e) => e.message?.method === 'notifications/tools/list_changed', 'the reader told');
      // then whoami (no scopes) changes: both are told, in order
      writeFileSync(script, readFileSync(script, 'utf8').replace('ctx.auth as JSON', 'ctx.auth, as JSON'));
      await streams[1].waitEvent((e) => e.message?.method === 'notifications/tools/list_changed', 'nobody told');
      await streams[0].until(() => changes(streams[0]) === 2, 'the reader told twice');
      assert.equal(changes(streams[1]), 1, 'a change nobody could see was told to nobody');
      for (const ex of streams) ex.abort();
    });
  } finally {
    await removeTemp(app);
  }
});

// issue 31, item 8: a scope the app checks only in code (ctx.auth:has) is
// declared in app.lua, so the metadata publishes it (a client knows to ask
// for it) and check lists it; a scope that is not a scope-token is refused
test("app.lua's scopes = {...}: the metadata's scopes_supported and check list them, ctx.auth:has sees them granted", opts, async () => {
  const app = await tempApp({
    'app.lua': 'return { name = "reports", scopes = { "reports:read", "files:read" } }\n',
    'scripts/r.lua': `local mcp = require "mcp"
mcp.tool { name = "report", description = "Reports, for reports:read.", scopes = { "files:read" },
  handler = function(_, ctx)
    if not ctx.auth:has("reports:read") then return mcp.fail("reports:read is needed") end
    return "the report"
  end }
`,
  });
  try {
    const checked = await run(['check', app]);
    assert.equal(checked.code, 0, checked.stderr);
    assert.match(checked.stderr, /note: items and app\.lua declare scopes \(files:read reports:read\)/);
    const withAuth = await run(['check', '--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', JWKS, app]);
    assert.match(withAuth.stderr, /scopes \(the metadata's scopes_supported, after --auth-scopes\): files:read reports:read/, withAuth.stderr);
    await withHttp(app, ['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', JWKS], async (srv) => {
      const prm = await exchange(srv, { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp' });
      await prm.finished();
      assert.deepEqual(JSON.parse(prm.body).scopes_supported, ['files:read', 'reports:read']);
      const call = async (scope) => {
        const t = jwt({ sub: 'u', scope });
        const session = await openSession(srv, t);
        return resultOf(await post(srv, rpc('tools/call', { name: 'report', arguments: {} }), { session, extra: bearer(t) }));
      };
      assert.equal((await call('files:read reports:read')).content[0].text, 'the report');
      const refused = await call('files:read');
      assert.equal(refused.isError, true);
      assert.match(refused.content[0].text, /reports:read is needed/);
    });
    writeFileSync(path.join(app, 'app.lua'), 'return {\n  name = "reports",\n  scopes = { "reports read", 7 },\n}\n');
    const bad = await run(['check', app]);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /app\.lua:3: app\.lua's scopes\[1\] must be a scope name/);
    assert.match(bad.stderr, /app\.lua:3: app\.lua's scopes\[2\] must be a scope name/);
  } finally {
    await removeTemp(app);
  }
});

test('--auth-plain-jwt: JWTs typed "JWT" or untyped pass too (issuers without RFC 9068), other kinds of JWT never', opts, async () => {
  const REV = '2026-07-28';
  const list = rpc('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} } });
  const ask = (srv, t) => post(srv, list, { version: REV, extra: { 'Mcp-Method': 'tools/list', ...bearer(t) } });
  const typed = (typ) => jwt({}, { header: { typ } });
  await withHttp(FEATURES_APP, ARGS, async (srv) => {
    assert.equal((await ask(srv, typed('JWT'))).status, 401, 'RFC 9068 only by default');
  });
  await withHttp(FEATURES_APP, [...ARGS, '--auth-plain-jwt'], async (srv) => {
    assert.equal((await ask(srv, typed('JWT'))).status, 200);
    assert.equal((await ask(srv, typed('at+jwt'))).status, 200);
    const bad = await ask(srv, typed('dpop+jwt'));
    assert.equal(bad.status, 401);
    assert.match(bad.headers['www-authenticate'], /not an access token \(typ\)/);
  });
});

test('--cors: the metadata and /mcp answer a named origin\'s preflight with 204, the 401 challenge is exposed, the metadata has one Allow-Origin', opts, () =>
  withHttp(FEATURES_APP, [...ARGS, '--cors', 'https://app.test.example'], async (srv) => {
    const origin = 'https://app.test.example';
    for (const p of ['/mcp', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const pre = await exchange(srv, { method: 'OPTIONS', path: p, headers: { Origin: origin, 'Access-Control-Request-Method': p === '/mcp' ? 'POST' : 'GET', 'Access-Control-Request-Headers': 'authorization, mcp-protocol-version' } });
      assert.equal(pre.status, 204, `${p}: ${pre.status}`);
      assert.equal(pre.headers['access-control-allow-origin'], origin, p);
      assert.equal(pre.headers['access-control-allow-headers'], 'authorization, mcp-protocol-version', p);
      assert.equal(pre.headers['access-control-allow-methods'], p === '/mcp' ? 'GET, POST, DELETE, OPTIONS' : 'GET, HEAD, OPTIONS', p);
    }
    const prm = await exchange(srv, { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp', headers: { Origin: origin } });
    assert.equal(prm.status, 200);
    assert.equal(prm.headers['access-control-allow-origin'], origin, 'one Access-Control-Allow-Origin, the origin');
    // without a named Origin the public document keeps its *
    const plain = await exchange(srv, { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp' });
    assert.equal(plain.headers['access-control-allow-origin'], '*');
    const ex = await post(srv, rpc('ping'), { headers: mcpHeaders({ extra: { Origin: origin } }) });
    assert.equal(ex.status, 401);
    challengeOf(ex);
    assert.equal(ex.headers['access-control-allow-origin'], origin);
    assert.match(ex.headers['access-control-expose-headers'] || '', /\bWWW-Authenticate\b/);
    const ok = await post(srv, rpc('ping'), { headers: mcpHeaders({ extra: { Origin: origin, ...bearer(jwt()) } }) });
    assert.notEqual(ok.status, 401, ok.body);
    assert.equal(ok.headers['access-control-allow-origin'], origin);
  }));

test('a configuration that cannot work stops the server at start, naming the option', opts, async () => {
  const oct = path.join(dir, 'oct.json');
  writeFileSync(oct, JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
  const cases = [
    [['--auth-resource', RESOURCE, '--auth-jwks', JWKS], /--auth-issuer/],
    [['--auth-resource', 'http://mcp.example.com/mcp', '--auth-issuer', ISSUER, '--auth-jwks', JWKS], /--auth-resource.*https/],
    [['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', oct], /--auth-jwks.*no key/],
    [['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', path.join(dir, 'missing.json')], /--auth-jwks.*cannot be read/],
    [['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', JWKS, '--token', 'x'], /exclude each other/],
    [['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', JWKS, '--cors', '*'], /--cors '\*'.*--auth-resource/],
  ];
  for (const [args, why] of cases) {
    const r = await run(['serve', '--http', '127.0.0.1:0', ...args, FEATURES_APP]);
    assert.notEqual(r.code, 0, `${args.join(' ')} started`);
    assert.match(r.stderr, why);
  }
  const stdio = await run(['serve', '--auth-resource', RESOURCE, FEATURES_APP]);
  assert.equal(stdio.code, 2);
  assert.match(stdio.stderr, /--auth-resource needs --http/);
});
