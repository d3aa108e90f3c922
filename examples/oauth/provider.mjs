// examples/oauth/provider.mjs — an OAuth 2.1 authorization server for a
// luamcp app, on npm's oidc-provider 9.13 (a certified OpenID provider),
// configured as an MCP client needs it: dynamic client registration, PKCE,
// resource indicators (RFC 8707) and JWT access tokens (RFC 9068) whose
// audience is luamcp's --auth-resource. luamcp's own tests run this very
// configuration (tests/integration/oauth-flow.test.mjs); docs/auth.md walks
// through it.
//
// Run it (a demo: every login is the account "alice", and consent grants
// what the resource allows — put your own login and consent pages in
// `interaction` before real users meet it):
//
//   cd examples/oauth && npm install oidc-provider@9.13.3
//   node provider.mjs --port 4000 --resource http://127.0.0.1:8080/mcp \
//        --scopes "files:read files:write" [--known-scopes "every scope the app declares"]
//   luamcp serve --http 127.0.0.1:8080 --auth-resource http://127.0.0.1:8080/mcp \
//        --auth-issuer http://127.0.0.1:4000 ./myapp
import crypto from 'node:crypto';
import http from 'node:http';

/**
 * Start the authorization server. oidc: the oidc-provider module (given, so
 * that this file runs wherever that package is installed). resource: the
 * MCP server's URI (a string, or a function returning it). resourceScopes:
 * the scopes tokens for it may carry (space-separated; the returned object's
 * `resourceScopes` may be changed later). knownScopes: every scope a client
 * may register or ask for (default: resourceScopes). format: 'jwt' (luamcp
 * verifies them itself) or 'opaque' (luamcp asks the introspection endpoint,
 * as the client `introspector`, whose secret is given). Returns { issuer,
 * close(), resourceScopes, resource }.
 */
export async function startProvider({ oidc, port = 0, host = '127.0.0.1', resource, resourceScopes = '',
  knownScopes = resourceScopes, account = 'alice', format = 'jwt', introspector } = {}) {
  oidc ??= await import('oidc-provider');
  const state = { resource, resourceScopes };
  const current = () => (typeof state.resource === 'function' ? state.resource() : state.resource);
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey; /* ID tokens: RS256 */
  let provider;
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interaction(provider, req, res, account).catch((err) => {
        res.writeHead(500).end(String(err?.message ?? err));
      });
      return;
    }
    provider.callback()(req, res);
  });
  await new Promise((resolve) => server.listen(port, host, resolve));
  const issuer = `http://${host}:${server.address().port}`;
  provider = new oidc.Provider(issuer, {
    // luamcp's own client, for introspection only (no grants of its own)
    clients: introspector ? [{ client_id: introspector.id, client_secret: introspector.secret,
      grant_types: [], response_types: [], redirect_uris: [] }] : [],
    jwks: { keys: [
      { ...rsa.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256' },
      { ...ec.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'ES256' },
    ] },
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
    findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
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
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, Interaction: 600, Session: 3600,
      RefreshToken: 86400 },
  });
  return Object.assign(state, {
    issuer,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  });
}

// The login and consent pages' work, done at once: the user is `account`
// and consents to every scope the resource allows.
async function interaction(provider, req, res, account) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: account } };
  } else {
    const grant = grantId ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : dflt;
  };
  if (!arg('resource')) {
    console.error('usage: node provider.mjs --resource URL (luamcp\'s --auth-resource) [--port 4000] ' +
      '[--scopes "a b"] [--known-scopes "a b c"]');
    process.exit(2);
  }
  const as = await startProvider({ port: Number(arg('port', 4000)), resource: arg('resource'),
    resourceScopes: arg('scopes', ''), knownScopes: arg('known-scopes', arg('scopes', '')) });
  console.log(`authorization server ${as.issuer} for ${as.resource} (scopes: ${as.resourceScopes})`);
}
