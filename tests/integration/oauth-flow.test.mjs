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
// through nginx (deploy/nginx/luamcp.conf) before two instances.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import * as v1client from '@modelcontextprotocol/sdk/client/index.js';
import * as v1http from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as v1auth from '@modelcontextprotocol/sdk/client/auth.js';
import * as v2 from '@modelcontextprotocol/client';

import * as oidc from 'oidc-provider';

import { startProvider } from '../../examples/oauth/provider.mjs';
import { APPS, TEST_TIMEOUT, WAIT, within } from './helpers.mjs';
import { HttpServer, freePort, post, rpc, withHttp } from './http-helpers.mjs';
import { NGINX, startNginx, stopChild } from './services.mjs';

const opts = { timeout: TEST_TIMEOUT };
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

const newProvider = () => startProvider({ oidc, resourceScopes: 'files:read', knownScopes: 'files:read files:write admin' });

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
  const as = await startProvider({ oidc, resourceScopes: 'files:read', knownScopes: 'files:read files:write admin',
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
