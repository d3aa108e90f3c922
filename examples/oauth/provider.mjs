// examples/oauth/provider.mjs — an OAuth 2.1 authorization server for a
// luamcp app, on npm's oidc-provider (a certified OpenID provider; 8.8.1, the
// last release that supports Node 20 without an "Unsupported runtime"
// warning), configured as an MCP client needs it: dynamic client
// registration, PKCE, resource indicators (RFC 8707) and JWT access tokens
// (RFC 9068) whose audience is luamcp's --auth-resource. luamcp's own tests
// run this very file (tests/integration/oauth-flow.test.mjs); docs/auth.md
// walks through it.
//
//   cd examples/oauth && npm ci
//   node provider.mjs hash-password < file-with-the-password   # for accounts.json
//   node provider.mjs --port 4000 --resource http://127.0.0.1:8080/mcp \
//        --accounts accounts.json --data ./idp-data [--scopes "every scope the app declares"]
//   luamcp serve --http 127.0.0.1:8080 --auth-resource http://127.0.0.1:8080/mcp \
//        --auth-issuer http://127.0.0.1:4000 ./myapp
//
// accounts.json: { "alice": { "password": "scrypt$...", "scopes": ["files:read", "files:write"] }, ... }
// Each user logs in with the form at /interaction/UID (the client's
// login_hint fills the name in) and gets a token with only the scopes the
// file gives them, of those the client asked for (consent is implied: there
// is no consent page). --data keeps the signing keys, the cookie keys,
// registered clients, grants, sessions and refresh tokens across restarts.
// Without --accounts it is a demo: every login is the account "alice" (or the
// login_hint) with every scope the resource allows.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

// {===================================================== passwords
// scrypt from node:crypto, its parameters stored with the hash so they can
// grow: scrypt$N$r$p$SALT$HASH (base64url).
const SCRYPT = { N: 16384, r: 8, p: 1 };

export function hashPassword(password) {
  const salt = crypto.randomBytes(16);
  const hash = crypto.scryptSync(password.normalize('NFC'), salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

let dummy;
const dummyHash = () => (dummy ??= hashPassword(crypto.randomBytes(16).toString('hex')));

export function verifyPassword(password, stored) {
  const [kind, N, r, p, salt, hash] = String(stored).split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const want = Buffer.from(hash, 'base64url');
  const got = crypto.scryptSync(String(password).normalize('NFC'), Buffer.from(salt, 'base64url'), want.length,
    { N: Number(N), r: Number(r), p: Number(p), maxmem: 256 * Number(N) * Number(r) });
  return want.length > 0 && crypto.timingSafeEqual(want, got);
}
// }=====================================================

// {===================================================== accounts
// The accounts file, read again at each use: an account added or removed
// counts at the next login. A scope list is an array or a space-separated string.
function readAccounts(file) {
  const raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  const out = new Map();
  for (const [name, a] of Object.entries(raw)) {
    if (!a || typeof a.password !== 'string') throw new Error(`${file}: account "${name}" has no password hash`);
    const scopes = Array.isArray(a.scopes) ? a.scopes : String(a.scopes ?? '').split(' ');
    out.set(name, { password: a.password, scopes: new Set(scopes.filter(Boolean)) });
  }
  return out;
}
// }=====================================================

// {===================================================== data folder
// oidc-provider's storage (its Adapter interface) as one JSON file per
// object under DIR/MODEL/: clients, grants, sessions, refresh tokens survive
// a restart. Writes go to a temporary file renamed over the old one.
function fileAdapter(dir) {
  return class FileAdapter {
    constructor(model) {
      this.dir = path.join(dir, model);
      fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    }

    file(id) { return path.join(this.dir, `${crypto.createHash('sha256').update(String(id)).digest('base64url')}.json`); }

    read(file) {
      try {
        const entry = JSON.parse(fs.readFileSync(file, 'utf8'));
        if (entry.expiresAt && entry.expiresAt < Date.now()) {
          fs.rmSync(file, { force: true });
          return undefined;
        }
        return entry;
      } catch (err) {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      }
    }

    write(id, entry) {
      const file = this.file(id);
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
      fs.renameSync(tmp, file);
    }

    each(fn) {
      for (const name of fs.readdirSync(this.dir)) {
        if (!name.endsWith('.json')) continue;
        const file = path.join(this.dir, name);
        const entry = this.read(file);
        if (entry) fn(entry, file);
      }
    }

    async upsert(id, payload, expiresIn) {
      this.write(id, { payload, ...(expiresIn ? { expiresAt: Date.now() + expiresIn * 1000 } : {}) });
    }

    async find(id) { return this.read(this.file(id))?.payload; }

    async findByUid(uid) {
      let found;
      this.each((e) => { if (e.payload.uid === uid) found = e.payload; });
      return found;
    }

    async findByUserCode(userCode) {
      let found;
      this.each((e) => { if (e.payload.userCode === userCode) found = e.payload; });
      return found;
    }

    async consume(id) {
      const entry = this.read(this.file(id));
      if (!entry) return;
      entry.payload.consumed = Math.floor(Date.now() / 1000);
      this.write(id, entry);
    }

    async destroy(id) { fs.rmSync(this.file(id), { force: true }); }

    async revokeByGrantId(grantId) {
      this.each((e, file) => { if (e.payload.grantId === grantId) fs.rmSync(file, { force: true }); });
    }
  };
}

// The keys: made at the first start, read at every later one (mode 0600).
function loadKeys(dir) {
  const file = dir && path.join(dir, 'keys.json');
  if (file && fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8'));
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey; /* ID tokens: RS256 */
  const keys = {
    jwks: { keys: [
      { ...rsa.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256' },
      { ...ec.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'ES256' },
    ] },
    cookies: [crypto.randomBytes(32).toString('base64url')],
  };
  if (file) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, JSON.stringify(keys), { mode: 0o600, flag: 'wx' });
  }
  return keys;
}
// }=====================================================

/**
 * Start the authorization server. oidc: the oidc-provider module (default:
 * this folder's). resource: the MCP server's URI (a string, or a function
 * returning it). resourceScopes: the scopes tokens for it may carry
 * (space-separated; the returned object's `resourceScopes` may be changed
 * later; default with accounts: every scope an account has). knownScopes:
 * every scope a client may register or ask for (default: resourceScopes).
 * accounts: the accounts file (else the demo: every login is `account` or
 * the login_hint, with every scope). data: the folder that keeps keys and
 * grants (else they live in memory). format: 'jwt' (luamcp verifies them
 * itself) or 'opaque' (luamcp asks the introspection endpoint, as the client
 * `introspector`, whose secret is given). Returns { issuer, close(),
 * resourceScopes, resource }.
 */
export async function startProvider({ oidc, port = 0, host = '127.0.0.1', resource, resourceScopes,
  knownScopes, account = 'alice', accounts, data, format = 'jwt', introspector } = {}) {
  oidc ??= await import('oidc-provider');
  if (accounts) readAccounts(accounts); // a broken file stops the start, not a login
  resourceScopes ??= accounts ? [...new Set([...readAccounts(accounts).values()].flatMap((a) => [...a.scopes]))].join(' ') : '';
  knownScopes ??= resourceScopes;
  const state = { resource, resourceScopes };
  const current = () => (typeof state.resource === 'function' ? state.resource() : state.resource);
  const keys = loadKeys(data);
  let provider;
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interaction(provider, req, res, { account, accounts }).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err?.message ?? err));
      });
      return;
    }
    provider.callback()(req, res);
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const issuer = `http://${host}:${server.address().port}`;
  provider = new oidc.Provider(issuer, {
    ...(data ? { adapter: fileAdapter(path.join(data, 'store')) } : {}),
    // luamcp's own client, for introspection only (no grants of its own)
    clients: introspector ? [{ client_id: introspector.id, client_secret: introspector.secret,
      grant_types: [], response_types: [], redirect_uris: [] }] : [],
    jwks: keys.jwks,
    cookies: { keys: keys.cookies },
    findAccount: async (ctx, sub) => {
      if (accounts && !readAccounts(accounts).has(sub)) return undefined; // removed since
      return { accountId: sub, claims: async () => ({ sub }) };
    },
    interactions: { url: (ctx, i) => `/interaction/${i.uid}` },
    pkce: { required: () => true },
    scopes: ['openid', 'offline_access', ...knownScopes.split(' ').filter(Boolean)],
    features: {
      devInteractions: { enabled: false },
      // only luamcp's own client may ask what a token is
      introspection: { enabled: !!introspector,
        allowedPolicy: (ctx, client) => client.clientId === introspector?.id },
      registration: { enabled: true }, // MCP clients register themselves
      resourceIndicators: {
        enabled: true,
        defaultResource: () => current(),
        useGrantedResource: () => true,
        // the one resource this server issues tokens for: JWTs luamcp verifies
        getResourceServerInfo: (ctx, indicator) => {
          if (indicator !== current()) throw new oidc.errors.InvalidTarget();
          return { scope: state.resourceScopes, audience: indicator, accessTokenTTL: 600,
            accessTokenFormat: format, ...(format === 'jwt' ? { jwt: { sign: { alg: 'ES256' } } } : {}) };
        },
      },
    },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 14 * 86400, Interaction: 600, Session: 86400,
      RefreshToken: 14 * 86400 },
  });
  return Object.assign(state, {
    issuer,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  });
}

const html = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(res, uid, name, error) {
  res.writeHead(error ? 401 : 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'" });
  res.end(`<!doctype html><meta charset="utf-8"><title>Sign in</title>
<style>body{font:16px system-ui;max-width:22em;margin:4em auto}input{display:block;width:100%;margin:.3em 0 1em;padding:.4em}</style>
<h1>Sign in</h1>${error ? `<p role="alert">${html(error)}</p>` : ''}
<form method="post" action="/interaction/${html(uid)}/login">
<label>Name<input name="login" autocomplete="username" value="${html(name ?? '')}" required></label>
<label>Password<input name="password" type="password" autocomplete="current-password" required></label>
<button>Sign in</button></form>`);
}

async function formBody(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 8192) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

// The login and consent pages. With accounts: a form checks the name and
// password; consent grants the asked scopes the account has and rejects the
// rest (so the token carries only those). Without: the demo user is
// `account` (or login_hint) and consents to every scope the resource allows.
async function interaction(provider, req, res, { account, accounts }) {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session, grantId } = details;
  let result;
  if (prompt.name === 'login') {
    if (!accounts) {
      result = { login: { accountId: params.login_hint || account } };
    } else if (req.method !== 'POST') {
      return loginPage(res, uid, params.login_hint);
    } else {
      const form = await formBody(req);
      const who = readAccounts(accounts).get(form.get('login'));
      // a missing account costs the same one hash as a wrong password
      const ok = verifyPassword(form.get('password') ?? '', who?.password ?? dummyHash()) && who;
      if (!ok) return loginPage(res, uid, form.get('login'), 'Wrong name or password.');
      result = { login: { accountId: form.get('login') } };
    }
  } else {
    const allowed = accounts ? readAccounts(accounts).get(session.accountId)?.scopes : null;
    if (accounts && !allowed) {
      result = { error: 'access_denied', error_description: 'the account no longer exists' };
    } else {
      const grant = grantId ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const d = prompt.details;
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
        const yes = scopes.filter((s) => !allowed || allowed.has(s));
        const no = scopes.filter((s) => allowed && !allowed.has(s));
        if (yes.length) grant.addResourceScope(indicator, yes.join(' '));
        if (no.length) grant.rejectResourceScope(indicator, no.join(' '));
      }
      result = { consent: { grantId: await grant.save() } };
    }
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

const USAGE = `usage: node provider.mjs --resource URL (luamcp's --auth-resource) [--port 4000] [--host 127.0.0.1]
         [--accounts FILE] [--data DIR] [--scopes "a b"] [--known-scopes "a b c"]
       node provider.mjs hash-password   (reads the password on stdin, prints its hash for FILE)`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const arg = (name, dflt) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : dflt;
  };
  if (argv[0] === 'hash-password') {
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const password = input.replace(/\r?\n$/, '');
    if (!password) {
      console.error('hash-password: no password on stdin');
      process.exit(2);
    }
    console.log(hashPassword(password));
  } else if (!arg('resource') || argv.includes('--help')) {
    if (argv.includes('--help')) console.log(USAGE);
    else console.error(USAGE);
    process.exit(argv.includes('--help') ? 0 : 2);
  } else {
    const as = await startProvider({ port: Number(arg('port', 4000)), host: arg('host', '127.0.0.1'),
      resource: arg('resource'), resourceScopes: arg('scopes'), knownScopes: arg('known-scopes', arg('scopes')),
      accounts: arg('accounts'), data: arg('data') });
    console.log(`authorization server ${as.issuer} for ${as.resource} (scopes: ${as.resourceScopes}; ` +
      `${arg('accounts') ? `accounts from ${arg('accounts')}` : 'demo: every login is alice'}; ` +
      `${arg('data') ? `keys and grants in ${arg('data')}` : 'keys and grants in memory'})`);
    const stop = () => as.close().then(() => process.exit(0));
    process.on('SIGTERM', stop).on('SIGINT', stop);
  }
}
