// auth-keys.test.mjs — `--auth-issuer URL` without --auth-jwks: luamcp finds
// the issuer's keys through its metadata (RFC 8414, else OpenID discovery),
// fetches them again on an unknown kid (rate-limited), keeps them while the
// issuer is down, and answers 503 — never lets a request in — while it has
// none. The issuer here is a small HTTP server of the test's that publishes
// metadata and a JWKS it can change, break and count; the full flow with a
// real authorization server is oauth-flow.test.mjs.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, TEST_TIMEOUT, WAIT, removeTemp, run } from './helpers.mjs';
import { until } from './services.mjs';
import { post, rpc, withHttp } from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const APP = path.join(APPS, 'auth');
const RESOURCE = 'http://127.0.0.1/mcp';

const key = (kid) => {
  const k = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, privateKey: k.privateKey, jwk: { ...k.publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'ES256' } };
};
const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);
function jwt(issuer, k, claims = {}) {
  const body = { iss: issuer, aud: RESOURCE, sub: 'user-1', client_id: 'c1', scope: 'files:read', iat: now(), exp: now() + 600, jti: crypto.randomUUID(), ...claims };
  const signed = `${b64({ alg: 'ES256', typ: 'at+jwt', kid: k.kid })}.${b64(body)}`;
  const sig = crypto.sign('sha256', Buffer.from(signed), { key: k.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${signed}.${sig.toString('base64url')}`;
}

// An issuer: metadata at the RFC 8414 path (or only the OpenID one), a JWKS
// of `keys`, an introspection endpoint answering `answers[token]` to the
// client `rs`:`secret`; `broken` answers 500 everywhere; hits counts each path.
async function startIssuer({ tenant = '', oidcOnly = false, claimIssuer } = {}) {
  const as = { keys: [], broken: false, hits: {}, answers: {}, hold: null, held: 0, holdJwks: null, jwksHeld: 0 };
  const server = http.createServer(async (req, res) => {
    as.hits[req.url] = (as.hits[req.url] || 0) + 1;
    if (as.broken) return res.writeHead(500).end();
    if (req.url === `${tenant}/introspect` && req.method === 'POST') {
      let form = '';
      for await (const d of req) form += d;
      const basic = `Basic ${Buffer.from('rs:s%C3%A9cret').toString('base64')}`; // form-encoded first
      if (req.headers.authorization !== basic) return res.writeHead(401).end('{"error":"invalid_client"}');
      const token = new URLSearchParams(form).get('token');
      if (as.hold) { // answered when the test lets go: how many wait here at once is what it counts
        as.held++;
        await as.hold;
      }
      return res.writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify(as.answers[token] ?? { active: false }));
    }
    const meta = () => res.writeHead(200, { 'Content-Type': 'application/json' })
      .end(JSON.stringify({ issuer: claimIssuer ?? as.issuer, jwks_uri: `${as.issuer}/jwks`,
        introspection_endpoint: `${as.issuer}/introspect` }));
    if (req.url === `/.well-known/oauth-authorization-server${tenant}` && !oidcOnly) return meta();
    if (req.url === `${tenant}/.well-known/openid-configuration` && oidcOnly) return meta();
    if (req.url === `${tenant}/jwks`) {
      if (as.holdJwks) { // answered when the test lets go
        as.jwksHeld++;
        await as.holdJwks;
      }
      return res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=600' })
        .end(JSON.stringify({ keys: as.keys.map((k) => k.jwk) }));
    }
    res.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  as.issuer = `http://127.0.0.1:${server.address().port}${tenant}`;
  as.close = () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); });
  return as;
}

// ctx.auth.key's escaping: every byte but letters, digits, '-', '.', '_' as %XX
const keyPart = (s) => s.replace(/[^A-Za-z0-9._-]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
const args = (issuer) => ['--auth-resource', RESOURCE, '--auth-issuer', issuer];
function post2026(srv, t) {
  return post(srv, rpc('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } }),
    { version: '2026-07-28', extra: { 'Mcp-Method': 'tools/list', Authorization: `Bearer ${t}` } });
}
const waitFor = async (cond, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('keys found through the metadata; a rotated key is fetched once on its unknown kid; made-up kids cost no more fetches; cached keys outlive the issuer', opts, async () => {
  const as = await startIssuer();
  const a = key('a1'), b = key('b1');
  as.keys = [a];
  try {
    await withHttp(APP, args(as.issuer), async (srv) => {
      assert.equal((await post2026(srv, jwt(as.issuer, a))).status, 200);
      assert.equal(as.hits['/.well-known/oauth-authorization-server'], 1);
      assert.equal(as.hits['/jwks'], 1);
      // rotation: the issuer publishes b1 beside a1; a token of b1 makes one refetch
      as.keys = [a, b];
      assert.equal((await post2026(srv, jwt(as.issuer, b))).status, 200);
      assert.equal(as.hits['/jwks'], 2);
      assert.equal((await post2026(srv, jwt(as.issuer, a))).status, 200, 'a token of the old key still valid');
      // tokens naming keys nobody published: refused, and no fetch within 30 s
      for (let i = 0; i < 5; i++) {
        const ex = await post2026(srv, jwt(as.issuer, key(`forged-${i}`)));
        assert.equal(ex.status, 401);
        assert.match(ex.headers['www-authenticate'], /error="invalid_token"/);
      }
      assert.equal(as.hits['/jwks'], 2, 'unknown kids made the server fetch again within 30 s');
      // the issuer goes away: fresh tokens of known keys still verify
      await as.close();
      assert.equal((await post2026(srv, jwt(as.issuer, b))).status, 200);
      assert.ok(!/Bearer ey/.test(srv.stderr), 'a token reached the log');
    });
  } finally {
    await as.close();
  }
});

// issue 33, item 4: while a refetch for an unknown kid is on its way (a slow
// issuer), every request naming an unknown kid waited for it, each holding a
// worker; now a few wait (one per address) and the rest are answered 503 at once
test('unknown kids while a refetch is on its way: one waits per address, the others are 503 at once; known keys pass meanwhile', opts, async () => {
  const as = await startIssuer();
  const a = key('a1'), r = key('r1');
  as.keys = [a];
  let release;
  try {
    await withHttp(APP, args(as.issuer), async (srv) => {
      assert.equal((await post2026(srv, jwt(as.issuer, a))).status, 200);
      as.holdJwks = new Promise((resolve) => { release = resolve; });
      as.keys = [a, r]; // the rotation the held refetch will find
      const waiting = post2026(srv, jwt(as.issuer, r));
      await until(() => as.jwksHeld === 1, 'the refetch the rotated key asked for');
      const others = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => post2026(srv, jwt(as.issuer, key(`made-up-${i}`)))));
      assert.deepEqual(others.map((ex) => ex.status), [503, 503, 503, 503, 503, 503]);
      assert.ok(others.every((ex) => ex.headers['retry-after']), 'a 503 without Retry-After');
      assert.equal((await post2026(srv, jwt(as.issuer, a))).status, 200, 'a known key waited for the refetch');
      release();
      assert.equal((await waiting).status, 200, 'the rotated key after its refetch');
    });
  } finally {
    release?.();
    await as.close();
  }
});

test('no keys yet (the issuer answers 500): 503 with Retry-After, never a request let in; once the issuer is back, tokens pass', opts, async () => {
  const as = await startIssuer({ tenant: '/tenant-1' });
  const a = key('a1');
  as.keys = [a];
  as.broken = true;
  try {
    await withHttp(APP, args(as.issuer), async (srv) => {
      await waitFor(() => srv.stderr.includes('cannot be fetched'));
      assert.match(srv.stderr, /the keys of http:\/\/127\.0\.0\.1:\d+\/tenant-1 cannot be fetched/);
      const ex = await post2026(srv, jwt(as.issuer, a));
      assert.equal(ex.status, 503, ex.body);
      assert.ok(ex.headers['retry-after']);
      as.broken = false;
      // a request asks for the keys again (2 s after the last try at most)
      await new Promise((r) => setTimeout(r, 2100));
      const ok = await post2026(srv, jwt(as.issuer, a));
      assert.equal(ok.status, 200, ok.body);
      // RFC 8414's path for an issuer with a path: /.well-known/... then the path
      assert.ok(as.hits['/.well-known/oauth-authorization-server/tenant-1'] >= 1, JSON.stringify(as.hits));
    });
  } finally {
    await as.close();
  }
});

test('OpenID discovery when the issuer has no RFC 8414 document; metadata naming another issuer is refused', opts, async () => {
  const oidc = await startIssuer({ oidcOnly: true });
  const liar = await startIssuer({ claimIssuer: 'https://evil.example' });
  const a = key('a1');
  oidc.keys = [a];
  liar.keys = [a];
  try {
    await withHttp(APP, [...args(oidc.issuer), '--auth-issuer', liar.issuer], async (srv) => {
      assert.equal((await post2026(srv, jwt(oidc.issuer, a))).status, 200);
      assert.equal(oidc.hits['/.well-known/openid-configuration'], 1);
      await waitFor(() => srv.stderr.includes('names another issuer'));
      const ex = await post2026(srv, jwt(liar.issuer, a));
      assert.equal(ex.status, 503);
      assert.equal(liar.hits['/jwks'], undefined, 'the keys of a mismatched metadata were fetched');
    });
  } finally {
    await oidc.close();
    await liar.close();
  }
});

test('opaque tokens through the introspection endpoint the metadata names: active, for this server, from a trusted issuer, not expired; cached; a server that refuses luamcp is 503', opts, async () => {
  const as = await startIssuer();
  as.keys = [key('a1')];
  const good = { active: true, aud: [RESOURCE, 'https://other.example'], sub: 'ada', client_id: 'c9', scope: 'files:read', exp: now() + 600 };
  as.answers = {
    'tok-good': { ...good, iss: undefined },
    'tok-inactive': { active: false },
    'tok-other-aud': { ...good, aud: 'https://other.example/mcp' },
    'tok-no-aud': { ...good, aud: undefined },
    'tok-evil-iss': { ...good, iss: 'https://evil.example' },
    'tok-expired': { ...good, exp: now() - 1000 },
    // no sub (a client-credentials token: oidc-provider writes none): the client is the subject
    'tok-client': { ...good, sub: undefined, client_id: 'svc-a' },
    'tok-no-one': { ...good, sub: undefined, client_id: undefined },
    'tok-bad-sub': { ...good, sub: 42 },
    'tok-empty-client': { ...good, sub: undefined, client_id: '' },
    // 20 digits: read as a JWT's dates are (at most 15), never an overflow (UBSan aborted here)
    'tok-huge-exp': { ...good, exp: 1e19 },
  };
  try {
    await withHttp(APP, [...args(as.issuer), '--auth-client-id', 'rs', '--auth-skew', '0'], async (srv) => {
      const call = (t) => post(srv, rpc('tools/call', { name: 'whoami', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } }),
        { version: '2026-07-28', extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'whoami', Authorization: `Bearer ${t}` } });
      const ok = await call('tok-good');
      assert.equal(ok.status, 200, ok.body);
      const me = JSON.parse(JSON.parse(ok.body).result.content[0].text);
      assert.deepEqual([me.subject, me.client_id, me.scopes, me.issuer], ['ada', 'c9', 'files:read', as.issuer]);
      assert.deepEqual([me.key, me.subject_is_client], [`ada@${keyPart(as.issuer)}`, undefined]);
      assert.equal((await call('tok-good')).status, 200);
      assert.equal(as.hits['/introspect'], 1, 'an active token was asked about twice');
      const svc = JSON.parse(JSON.parse((await call('tok-client')).body).result.content[0].text);
      assert.deepEqual([svc.subject, svc.client_id, svc.subject_is_client, svc.key],
        ['svc-a', 'svc-a', true, `client:svc-a@${keyPart(as.issuer)}`]);
      for (const [t, why] of [['tok-inactive', /not active/], ['tok-other-aud', /not meant for this server/],
        ['tok-no-aud', /not meant for this server/], ['tok-evil-iss', /issuer is not trusted/], ['tok-expired', /expired/],
        ['tok-no-one', /names no subject and no client/], ['tok-bad-sub', /malformed \(sub\)/],
        ['tok-empty-client', /names no subject and no client/], ['tok-huge-exp', /malformed \(exp\)/]]) {
        const ex = await call(t);
        assert.equal(ex.status, 401, `${t}: ${ex.body}`);
        assert.match(ex.headers['www-authenticate'], why, t);
      }
      assert.ok(!srv.stderr.includes('s\u00e9cret') && !srv.stderr.includes('sécret'), 'the secret reached the log');
    }, { env: { LUAMCP_AUTH_CLIENT_SECRET: 'sécret' } });
    // a flood of made-up tokens (issue 33, item 4): while the authorization server holds
    // its answers, at most 8 introspections wait on it, 2 per address, the rest are 503
    // at once; a cached token is served meanwhile; a refused token is refused again
    // without asking. Decided by events: the server answers only when the test lets go.
    await withHttp(APP, [...args(as.issuer), '--auth-client-id', 'rs', '--auth-skew', '0'], async (srv) => {
      assert.equal((await post2026(srv, 'tok-good')).status, 200);
      let release;
      as.hold = new Promise((resolve) => (release = resolve));
      const list = (a, t) => post(srv, rpc('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } }),
        { version: '2026-07-28', localAddress: `127.0.0.${a}`, extra: { 'Mcp-Method': 'tools/list', Authorization: `Bearer ${t}` } });
      const statuses = [], refused = [];
      const settled = [];
      for (let a = 2; a <= 5; a++) {
        for (let i = 0; i < 4; i++) {
          const t = `made-up-${a}-${i}`;
          settled.push(list(a, t).then((ex) => {
            statuses.push(ex.status);
            if (ex.status === 401) refused.push([a, t]);
          }));
        }
      }
      await until(() => as.held === 8 && statuses.length === 8, '8 introspections held and 8 answered', WAIT);
      assert.deepEqual(statuses, Array(8).fill(503), 'the rest were answered at once, 503');
      assert.equal((await post2026(srv, 'tok-good')).status, 200, 'a cached token is served during the flood');
      as.hold = null;
      release();
      await Promise.all(settled);
      assert.equal(statuses.filter((x) => x === 401).length, 8);
      const asked = as.hits['/introspect'];
      const again = await list(...refused[0]); // one the authorization server refused
      assert.equal(again.status, 401);
      assert.equal(as.hits['/introspect'], asked, 'a token refused moments ago is not asked about again');
    }, { env: { LUAMCP_AUTH_CLIENT_SECRET: 'sécret' } });
    // the wrong secret: the server cannot ask, so nobody is let in
    await withHttp(APP, [...args(as.issuer), '--auth-client-id', 'rs'], async (srv) => {
      const ex = await post2026(srv, 'tok-good');
      assert.equal(ex.status, 503, ex.body);
      assert.match(srv.stderr, /introspection at .* failed: HTTP status 401/);
    }, { env: { LUAMCP_AUTH_CLIENT_SECRET: 'wrong' } });
  } finally {
    await as.close();
  }
});

test('luamcp new --auth over HTTP: each caller reads only their own notes; a JWT without sub is refused; a client without sub keeps its own, never a user\'s of its name', opts, async () => {
  const as = await startIssuer();
  as.keys = [key('n1')];
  const RW = 'notes:read notes:write';
  const opaque = { active: true, aud: RESOURCE, scope: RW, exp: now() + 600 };
  as.answers = {
    'tok-svc-a': { ...opaque, client_id: 'svc-a' },
    'tok-svc-b': { ...opaque, client_id: 'svc-b' },
    'tok-client-bob': { ...opaque, client_id: 'bob' },
  };
  const root = await mkdtemp(path.join(tmpdir(), 'luamcp-notes-'));
  const dir = path.join(root, 'notes');
  try {
    const made = await run(['new', '--auth', dir]);
    assert.equal(made.code, 0, made.stderr);
    await withHttp(dir, [...args(as.issuer), '--auth-client-id', 'rs', '--data', path.join(root, 'data')], async (srv) => {
      const call = async (t, name, args = {}) => {
        const ex = await post(srv, rpc('tools/call', { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } }),
          { version: '2026-07-28', extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': name, Authorization: `Bearer ${t}` } });
        return ex.status === 200 ? JSON.parse(ex.body).result.content[0].text : ex.status;
      };
      const user = (sub) => jwt(as.issuer, as.keys[0], { sub, client_id: 'notes-app', scope: RW });
      const [bob, alice, carol] = [user('bob'), user('alice'), user(undefined)];
      assert.equal(await call(bob, 'add_note', { text: 'bob-private-note' }), '1 note(s)');
      assert.equal(await call(alice, 'list_notes'), 'no notes yet');
      assert.equal(await call(carol, 'list_notes'), 401, 'a JWT without sub');
      assert.equal(await call(bob, 'list_notes'), 'bob-private-note');
      assert.equal(await call('tok-svc-a', 'add_note', { text: 'svc-a-note' }), '1 note(s)');
      assert.equal(await call('tok-svc-b', 'list_notes'), 'no notes yet');
      assert.equal(await call('tok-client-bob', 'list_notes'), 'no notes yet', 'the client "bob" read the user bob\'s notes');
      assert.equal(await call('tok-svc-a', 'list_notes'), 'svc-a-note');
      for (const t of [bob, alice, carol]) assert.ok(!srv.stderr.includes(t), 'a token reached the log');
    }, { env: { LUAMCP_AUTH_CLIENT_SECRET: 'sécret' } });
  } finally {
    await as.close();
    await removeTemp(root);
  }
});

test('luamcp check with the --auth-* options: each issuer\'s keys fetched once; a wrong configuration or an issuer without keys is exit 1', opts, async () => {
  const as = await startIssuer();
  as.keys = [key('a1'), key('b1')];
  try {
    const ok = await run(['check', ...args(as.issuer), APP]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`authorization: ${as.issuer}: 2 key\\(s\\), introspection at ${as.issuer}/introspect`));
    assert.match(ok.stdout, /authorization: ok/);
    as.broken = true;
    const down = await run(['check', ...args(as.issuer), APP]);
    assert.equal(down.code, 1);
    assert.match(down.stderr, /the keys of http:\/\/127\.0\.0\.1:\d+ cannot be fetched: no metadata found/);
    const bad = await run(['check', '--auth-resource', 'http://example.com/mcp', '--auth-issuer', as.issuer, APP]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--auth-resource http:\/\/example\.com\/mcp: an absolute https URL/);
  } finally {
    await as.close();
  }
});
