// oauth-flow.test.mjs — the whole OAuth flow of the official clients against
// luamcp and a real authorization server: npm's oidc-provider (resource
// indicators, dynamic client registration, PKCE, JWT access tokens for
// luamcp's resource URI), configured as examples/oauth/provider.mjs is.
// Each client (the v1 SDK over 2025-11-25, the v2 client over 2026-07-28)
// starts without a token: 401 → Protected Resource Metadata → the server's
// metadata → registration → authorization code + PKCE with `resource` (the
// login and consent completed here, as a browser would, through the
// provider's interaction API) → token → tools listed and called; then a tool
// that needs a scope the token lacks → 403 insufficient_scope → the client
// asks again with the wider scope (step-up) → the call succeeds. The same
// through nginx (deploy/nginx/luamcp.conf) before two instances. Then the
// provider as a team runs it: its own process, installed from its own
// lockfile, accounts from a file (two users with different scopes see
// different tools), a data folder that keeps keys, clients and grants
// across a restart.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import * as v1client from '@modelcontextprotocol/sdk/client/index.js';
import * as v1http from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as v1auth from '@modelcontextprotocol/sdk/client/auth.js';
import * as v2 from '@modelcontextprotocol/client';

import { hashPassword, startProvider } from '../../examples/oauth/provider.mjs';
import { APPS, REPO_ROOT, TEST_TIMEOUT, WAIT, watchLines, within } from './helpers.mjs';
import { HttpServer, freePort, post, rpc, withHttp } from './http-helpers.mjs';
import { NGINX, startNginx, stopChild } from './services.mjs';

const opts = { timeout: TEST_TIMEOUT };
if (!existsSync(path.join(REPO_ROOT, 'examples', 'oauth', 'node_modules', 'oidc-provider'))) {
  throw new Error('examples/oauth is not installed: run `make npm` (it installs it from its own lockfile)');
}
const APP = path.join(APPS, 'auth');
const REDIRECT = 'http://127.0.0.1:9/callback'; // never fetched: the code is read from the redirect

const SDKS = {
  'v1 SDK 1.32.2 (2025-11-25)': {
    Client: v1client.Client, Transport: v1http.StreamableHTTPClientTransport,
    Unauthorized: v1auth.UnauthorizedError, options: {},
    finish: (transport, params) => transport.finishAuth(params.get('code')),
  },
  'v2 client 2.4.0 (2026-07-28)': {
    Client: v2.Client, Transport: v2.StreamableHTTPClientTransport, Unauthorized: v2.UnauthorizedError,
    options: { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    // the callback's parameters: code, and iss (RFC 9207), which it checks
    finish: (transport, params) => transport.finishAuth(params),
  },
};

// What a client keeps between runs (in memory here), and where the
// authorization URL it would open in a browser goes.
function memoryProvider() {
  const p = {
    opened: [],
    issued: [],
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
      return { client_name: 'luamcp oauth test', redirect_uris: [REDIRECT], application_type: 'native',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        token_endpoint_auth_method: 'none' };
    },
    clientInformation() { return p.client; },
    saveClientInformation(info) { p.client = info; },
    tokens() { return p.tokens_; },
    saveTokens(t) { p.tokens_ = t; p.issued.push(t.access_token); },
    redirectToAuthorization(url) { p.opened.push(new URL(url)); },
    saveCodeVerifier(v) { p.verifier = v; },
    codeVerifier() { return p.verifier; },
  };
  return p;
}

// The browser: follow the authorization URL through the provider's login
// and consent (finished by its interaction handler) to the redirect, with
// the provider's cookies; the redirect's parameters (code, iss).
async function browse(url) {
  const jar = new Map();
  for (let hops = 0; hops < 12; hops++) {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const c of res.headers.getSetCookie()) {
      const [kv] = c.split(';');
      const eq = kv.indexOf('=');
      jar.set(kv.slice(0, eq), kv.slice(eq + 1));
    }
    const loc = res.headers.get('location');
    assert.ok(loc, `no redirect from ${url}: ${res.status} ${await res.text()}`);
    const next = new URL(loc, url);
    if (next.href.startsWith(REDIRECT)) {
      assert.equal(next.searchParams.get('error'), null, next.href);
      return next.searchParams;
    }
    url = next.href;
  }
  throw new Error('too many redirects');
}

// Connect, completing the authorization whenever the client asks for it.
async function authorized(t, fn) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof t.Unauthorized) || attempt > 1) throw err;
      const url = t.provider.opened.at(-1);
      assert.ok(url, 'the client asked for authorization without an URL');
      await t.finish(t.transport, await browse(url.href));
    }
  }
}

// The flow against url (one luamcp, or nginx before two); logs: the
// servers' stderr, read after it to prove no token was logged.
async function flow(sdk, url, as, logs) {
  as.resource = url;
  const provider = memoryProvider();
  let transport, client;
  const connect = async () => { // a new transport each time, as the SDKs' examples do
    transport = new sdk.Transport(new URL(url), { authProvider: provider });
    client = new sdk.Client({ name: 'oauth-test', version: '0.0.0' }, sdk.options);
    await client.connect(transport);
  };
  await within((async () => {
    try {
      await connect();
      assert.fail('connected without authorization');
    } catch (err) {
      if (!(err instanceof sdk.Unauthorized)) throw err;
    }
    await sdk.finish(transport, await browse(provider.opened.at(-1).href));
    await connect();
  })(), WAIT, 'the first connection');
  const t = { ...sdk, provider, get transport() { return transport; } };
  try {
    const first = provider.opened[0];
    assert.equal(first.searchParams.get('resource'), url, 'the authorization request names the resource');
    assert.equal(first.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(provider.client?.client_id, 'the client registered itself');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((x) => x.name).sort(), ['ask_name', 'read_file', 'slow', 'whoami'], 'a files:read token lists what it may call');
    for (let i = 0; i < 3; i++) { // through nginx: more than one instance answers
      const me = JSON.parse((await client.callTool({ name: 'whoami', arguments: {} })).content[0].text);
      assert.equal(me.subject, 'alice');
      assert.equal(me.issuer, as.issuer);
      assert.equal(me.client_id, provider.client.client_id);
      assert.equal(me.scopes, 'files:read');
    }
    // the user allows writing now; the call needs it: 403 → step-up
    as.resourceScopes = 'files:read files:write';
    const before = provider.opened.length;
    const written = await authorized(t, () => client.callTool({ name: 'write_file', arguments: {} }));
    assert.equal(written.content[0].text, 'written', JSON.stringify(written));
    assert.equal(provider.opened.length, before + 1, 'the client did not ask for the wider scope');
    assert.match(provider.opened.at(-1).searchParams.get('scope'), /files:write/);
    const again = JSON.parse((await client.callTool({ name: 'whoami', arguments: {} })).content[0].text);
    assert.equal(again.scopes.split(' ').sort().join(' '), 'files:read files:write');
  } finally {
    await client.close();
  }
  for (const tok of provider.issued) for (const log of logs()) assert.ok(!log.includes(tok), 'a token reached the log');
  return provider;
}

const newProvider = () => startProvider({ resourceScopes: 'files:read', knownScopes: 'files:read files:write admin' });

for (const [name, sdk] of Object.entries(SDKS)) {
  test(`${name}: 401 → metadata → registration → code + PKCE → tools called; 403 insufficient_scope → step-up → called`, opts, async () => {
    const as = await newProvider();
    try {
      const provider = await withHttp(APP, (port) => ['--auth-resource', `http://127.0.0.1:${port}/mcp`, '--auth-issuer', as.issuer],
        (srv) => flow(sdk, srv.url, as, () => [srv.stderr]));
      // a token the provider issued for that server is refused by another one (aud)
      await withHttp(APP, (port) => ['--auth-resource', `http://127.0.0.1:${port}/mcp`, '--auth-issuer', as.issuer], async (other) => {
        const ex = await post(other, rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } }),
          { version: null, extra: { Authorization: `Bearer ${provider.issued.at(-1)}` } });
        assert.equal(ex.status, 401, ex.body);
        assert.match(ex.headers['www-authenticate'], /error="invalid_token"/);
        assert.match(ex.headers['www-authenticate'], /not issued for this resource/);
      });
    } finally {
      await as.close();
    }
  });
}

// nginx running deploy/nginx/luamcp.conf before two instances: the metadata
// is routed, the resource is nginx's URL, either instance verifies the token
const haveNginx = existsSync(NGINX);
for (const [name, sdk] of Object.entries(SDKS)) {
  test(`${name}, through nginx before two instances: the same flow`, { ...opts, skip: !haveNginx && `${NGINX} is not installed` }, async () => {
    const as = await newProvider();
    const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-oauth-'));
    await chmod(dir, 0o755); // nginx's workers (nobody, when started as root) use its temp folders
    const instances = [];
    let nginx;
    try {
      const front = await freePort();
      const resource = `http://127.0.0.1:${front}/mcp`;
      for (const instance of ['a', 'b']) {
        instances.push(await new HttpServer(APP, ['--instance', instance, '--trust-proxy', '127.0.0.2',
          '--auth-resource', resource, '--auth-issuer', as.issuer]).start());
      }
      const [pa, pb] = instances.map((s) => s.port);
      nginx = await startNginx(dir, [pa, pb, pb], front); // the conf names three: c is b again
      await flow(sdk, nginx.url, as, () => instances.map((s) => s.stderr));
      for (const s of instances) assert.match(s.stderr, /authorization: \d key\(s\) of/, 'an instance never fetched the keys');
    } finally {
      await stopChild(nginx?.child, nginx?.exited, 'SIGQUIT');
      for (const s of instances) await s.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
      await as.close();
    }
  });
}

// opaque tokens: luamcp cannot read them and asks the provider's
// introspection endpoint (found in its metadata) as its own client
test('opaque access tokens: luamcp asks the authorization server (RFC 7662 introspection) with its own client credentials', opts, async () => {
  const secret = 'introspector-secret-' + Date.now();
  const as = await startProvider({ resourceScopes: 'files:read', knownScopes: 'files:read files:write admin',
    format: 'opaque', introspector: { id: 'luamcp-rs', secret } });
  try {
    await withHttp(APP, (port) => ['--auth-resource', `http://127.0.0.1:${port}/mcp`, '--auth-issuer', as.issuer,
      '--auth-client-id', 'luamcp-rs'],
    async (srv) => {
      const provider = await flow(SDKS['v1 SDK 1.32.2 (2025-11-25)'], srv.url, as, () => [srv.stderr]);
      assert.ok(provider.issued.length >= 2 && provider.issued.every((t) => t.split('.').length !== 3),
        'the provider issued JWTs, not opaque tokens');
      assert.ok(!srv.stderr.includes(secret), 'the client secret reached the log');
    }, { env: { LUAMCP_AUTH_CLIENT_SECRET: secret } });
  } finally {
    await as.close();
  }
});

// {===================================================== a team's provider
// examples/oauth/provider.mjs run as docs/auth.md says: `npm ci` in its
// folder (the Makefile's npm target), `--accounts`, `--data`.
const IDP = path.join(REPO_ROOT, 'examples', 'oauth', 'provider.mjs');

async function startIdp(args) {
  const child = spawn(process.execPath, [IDP, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
  const out = watchLines(child.stdout.setEncoding('utf8'));
  try {
    const [line] = await out.until((l) => l.some((x) => x.startsWith('authorization server ')), 'the provider to listen');
    return { child, exited, line, issuer: line.split(' ')[2], get stderr() { return stderr; } };
  } catch (err) {
    child.kill('SIGKILL');
    err.message += `\n--- provider stderr ---\n${stderr}`;
    throw err;
  }
}

// A browser that signs in: follows the redirects, fills in the login form
// (name and password) when the provider shows it; the cookie jar is the
// caller's, so a second visit finds the session. Returns the redirect's
// parameters and the login forms it met.
async function signIn(url, { jar, login, password }) {
  const forms = [];
  const cookies = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  let res = null;
  for (let hops = 0; hops < 16; hops++) {
    res = await fetch(url, { redirect: 'manual', headers: { cookie: cookies() } });
    for (;;) {
      for (const c of res.headers.getSetCookie()) {
        const [kv] = c.split(';');
        const eq = kv.indexOf('=');
        jar.set(kv.slice(0, eq), kv.slice(eq + 1));
      }
      if (res.status !== 200 && res.status !== 401) break; // 401: the form again, after a wrong password
      const page = await res.text();
      const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1];
      assert.ok(action, `no login form at ${url}: ${page}`);
      forms.push({ prefilled: /name="login"[^>]*value="([^"]*)"/.exec(page)?.[1] });
      assert.ok(forms.length < 3, `the login was refused: ${page}`);
      url = new URL(action, url).href;
      res = await fetch(url, { method: 'POST', redirect: 'manual',
        headers: { cookie: cookies(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ login, password }).toString() });
    }
    const loc = res.headers.get('location');
    assert.ok(loc, `no redirect from ${url}: ${res.status} ${await res.text()}`);
    const next = new URL(loc, url);
    if (next.href.startsWith(REDIRECT)) {
      assert.equal(next.searchParams.get('error'), null, next.href);
      return { params: next.searchParams, forms };
    }
    url = next.href;
  }
  throw new Error('too many redirects');
}

const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());

// One user's client: connect, sign in when asked (login_hint names the
// user, as a client that knows them may), list the tools.
async function userSession(sdk, url, user) {
  const provider = memoryProvider();
  const jar = new Map();
  let transport, client;
  const connect = async () => {
    transport = new sdk.Transport(new URL(url), { authProvider: provider });
    client = new sdk.Client({ name: `oauth-team-${user.login}`, version: '0.0.0' }, sdk.options);
    await client.connect(transport);
  };
  let signed;
  try {
    await connect();
    assert.fail('connected without authorization');
  } catch (err) {
    if (!(err instanceof sdk.Unauthorized)) throw err;
    const at = new URL(provider.opened.at(-1));
    at.searchParams.set('login_hint', user.login);
    signed = await signIn(at.href, { jar, ...user });
    await sdk.finish(transport, signed.params);
    await connect();
  }
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  return { provider, client, jar, tools, signed, asked: provider.opened[0].searchParams.get('scope') };
}

test('a team\'s provider: accounts from a file (scrypt), a login form; two users with different scopes see different tools; a restart keeps keys, clients and grants', opts, async () => {
  const sdk = SDKS['v1 SDK 1.32.2 (2025-11-25)'];
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-idp-'));
  const accounts = path.join(dir, 'accounts.json');
  const users = { alice: { login: 'alice', password: 'alice pw ' + Date.now() }, bob: { login: 'bob', password: 'bob pw ' + Date.now() } };
  await writeFile(accounts, JSON.stringify({
    alice: { password: hashPassword(users.alice.password), scopes: ['files:read', 'files:write'] },
    bob: { password: hashPassword(users.bob.password), scopes: 'files:read' },
  }));
  const port = await freePort();
  const data = path.join(dir, 'idp-data');
  let idp;
  try {
    // the provider first (luamcp fetches its keys at start), for luamcp's URL chosen now
    const mcpPort = await freePort();
    const resource = `http://127.0.0.1:${mcpPort}/mcp`;
    // --scopes: every scope the app declares (`luamcp check` lists them); an account gets its own of those
    const idpArgs = ['--port', String(port), '--resource', resource, '--scopes', 'files:read files:write admin',
      '--accounts', accounts, '--data', data];
    idp = await startIdp(idpArgs);
    assert.equal(idp.stderr, '', 'the provider warned (Node 20 is supported by the pinned oidc-provider)');
    await withHttp(APP, ['--auth-resource', resource, '--auth-issuer', idp.issuer], async (srv) => {
      const alice = await userSession(sdk, srv.url, users.alice);
      const bob = await userSession(sdk, srv.url, users.bob);
      try {
        assert.deepEqual(alice.signed.forms, [{ prefilled: 'alice' }], 'one login form, the name from login_hint');
        assert.deepEqual(alice.tools, ['ask_name', 'read_file', 'slow', 'whoami', 'write_file']);
        assert.deepEqual(bob.tools, ['ask_name', 'read_file', 'slow', 'whoami'], 'bob (files:read) does not see write_file');
        assert.match(bob.asked, /files:write/, 'the client asked for every scope the resource publishes');
        assert.equal(claimsOf(bob.provider.tokens_.access_token).scope, 'files:read', 'bob got only his scope');
        assert.equal(claimsOf(alice.provider.tokens_.access_token).scope.split(' ').sort().join(' '), 'files:read files:write');
        const me = JSON.parse((await bob.client.callTool({ name: 'whoami', arguments: {} })).content[0].text);
        assert.equal(me.subject, 'bob');
        assert.equal(me.scopes, 'files:read');
        assert.equal((await alice.client.callTool({ name: 'write_file', arguments: {} })).content[0].text, 'written');
        await assert.rejects(bob.client.callTool({ name: 'write_file', arguments: {} }), sdk.Unauthorized,
          'bob\'s write_file should be refused (403 insufficient_scope)');
      } finally {
        await alice.client.close();
        await bob.client.close();
      }

      // a wrong password: the form again (401), never a code
      await assert.rejects(userSession(sdk, srv.url, { login: 'alice', password: 'not it' }), /the login was refused/);

      // restart the provider on the same data folder
      const jwks = await fetch(idp.issuer + '/jwks').then((r) => r.json());
      await stopChild(idp.child, idp.exited);
      idp = await startIdp(idpArgs);
      assert.deepEqual(await fetch(idp.issuer + '/jwks').then((r) => r.json()), jwks, 'the keys changed across the restart');
      // a luamcp that never saw the old keys fetches them and takes alice's old token
      await withHttp(APP, ['--auth-resource', srv.url, '--auth-issuer', idp.issuer], async (fresh) => {
        const ex = await post(fresh, rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } }),
          { version: null, extra: { Authorization: `Bearer ${alice.provider.tokens_.access_token}` } });
        assert.equal(ex.status, 200, `a token from before the restart was refused: ${ex.body}`);
      });
      // alice's client (registered before) authorizes again in the same browser: session and grant kept, no login form
      alice.provider.tokens_ = undefined;
      const again = await (async () => {
        const transport = new sdk.Transport(new URL(srv.url), { authProvider: alice.provider });
        const client = new sdk.Client({ name: 'oauth-team-alice', version: '0.0.0' }, sdk.options);
        await assert.rejects(client.connect(transport), sdk.Unauthorized);
        const signed = await signIn(alice.provider.opened.at(-1).href, { jar: alice.jar, ...users.alice });
        await sdk.finish(transport, signed.params);
        const client2 = new sdk.Client({ name: 'oauth-team-alice', version: '0.0.0' }, sdk.options);
        await client2.connect(new sdk.Transport(new URL(srv.url), { authProvider: alice.provider }));
        const me = JSON.parse((await client2.callTool({ name: 'whoami', arguments: {} })).content[0].text);
        await client2.close();
        return { forms: signed.forms, me };
      })();
      assert.deepEqual(again.forms, [], 'the session was lost across the restart');
      assert.equal(again.me.subject, 'alice');
      assert.equal(again.me.scopes.split(' ').sort().join(' '), 'files:read files:write');
      assert.equal(idp.stderr, '');
    }, { port: mcpPort });
  } finally {
    await stopChild(idp?.child, idp?.exited);
    await rm(dir, { recursive: true, force: true });
  }
});
// }=====================================================
