// jwt_vectors.mjs — writes jwt_vectors.h, the JWT/JWKS test vectors for the
// access-token verifier (core/auth/jwt.h). Only node:crypto, no npm packages.
//
//   node tests/unit/jwt_vectors.mjs            (writes tests/unit/jwt_vectors.h)
//   node tests/unit/jwt_vectors.mjs OUT.h      (writes OUT.h)
//
// Keys are generated afresh on every run, so the output differs each time;
// one generated header is committed. Every token meant to verify is checked
// here against the public JWK as published (re-imported from the JWKS), and
// every token meant to fail its signature is checked to fail, so a wrong
// vector is caught before it reaches the C test.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const outPath = process.argv[2] || path.join(here, 'jwt_vectors.h');

const ISSUER = 'https://as.test.example';
const ISSUER2 = 'https://other-as.test.example';
const AUDIENCE = 'https://mcp.test.example/mcp';
const NOW = 1800000000;
const SKEW = 60; // the C test passes skew 60 and require_typ true

// ---- keys -----------------------------------------------------------------

const rsa = (bits) => crypto.generateKeyPairSync('rsa', { modulusLength: bits });
const ec = (namedCurve) => crypto.generateKeyPairSync('ec', { namedCurve });

const K = {
  rsa1: rsa(2048),     // kid rsa-1, alg RS256, use sig
  rsaPs: rsa(2048),    // kid rsa-ps, no alg (PS256, PS384, RS512)
  ec1: ec('P-256'),    // kid ec-1
  ec384: ec('P-384'),  // kid ec-384
  ed1: crypto.generateKeyPairSync('ed25519'), // kid ed-1
  weak: rsa(1024),     // kid rsa-weak: under 2048 bits, to be skipped
  enc: rsa(2048),      // kid rsa-enc: "use":"enc", to be skipped
  rsaNew: rsa(2048),   // kid rsa-new: only in JV_JWKS_ROTATED
  as2: rsa(2048),      // kid as2-rsa-1: JV_ISSUER2's only key
  rogue: rsa(2048),    // in no JWKS; signs tokens claiming kid rsa-1
};
const hmacSecret = crypto.randomBytes(32); // the oct key hmac-1

const b64u = (buf) => Buffer.from(buf).toString('base64url');

function jwk(pair, extra) {
  const j = pair.publicKey.export({ format: 'jwk' });
  return { ...extra, ...j };
}

const J = {
  rsa1: jwk(K.rsa1, { kid: 'rsa-1', alg: 'RS256', use: 'sig' }),
  rsaPs: jwk(K.rsaPs, { kid: 'rsa-ps' }),
  ec1: jwk(K.ec1, { kid: 'ec-1', use: 'sig', alg: 'ES256' }),
  ec384: jwk(K.ec384, { kid: 'ec-384' }),
  ed1: jwk(K.ed1, { kid: 'ed-1', alg: 'EdDSA', use: 'sig' }),
  oct: { kid: 'hmac-1', alg: 'HS256', use: 'sig', kty: 'oct', k: b64u(hmacSecret) },
  weak: jwk(K.weak, { kid: 'rsa-weak', alg: 'RS256', use: 'sig' }),
  enc: jwk(K.enc, { kid: 'rsa-enc', alg: 'RSA-OAEP-256', use: 'enc' }),
  rsaNew: jwk(K.rsaNew, { kid: 'rsa-new', alg: 'RS256', use: 'sig' }),
  as2: jwk(K.as2, { kid: 'as2-rsa-1', alg: 'RS256', use: 'sig' }),
};

const JWKS = { keys: [J.rsa1, J.rsaPs, J.ec1, J.ec384, J.ed1, J.oct, J.weak, J.enc] };
const JWKS2 = { keys: [J.as2] };
const JWKS_ROTATED = { keys: [J.rsa1, J.rsaNew] };

// ---- signing --------------------------------------------------------------

const PSS = crypto.constants.RSA_PKCS1_PSS_PADDING;
const signers = {
  RS256: (d, k) => crypto.sign('sha256', d, k),
  RS384: (d, k) => crypto.sign('sha384', d, k),
  RS512: (d, k) => crypto.sign('sha512', d, k),
  PS256: (d, k) => crypto.sign('sha256', d, { key: k, padding: PSS, saltLength: 32 }),
  PS384: (d, k) => crypto.sign('sha384', d, { key: k, padding: PSS, saltLength: 48 }),
  PS512: (d, k) => crypto.sign('sha512', d, { key: k, padding: PSS, saltLength: 64 }),
  ES256: (d, k) => crypto.sign('sha256', d, { key: k, dsaEncoding: 'ieee-p1363' }),
  ES384: (d, k) => crypto.sign('sha384', d, { key: k, dsaEncoding: 'ieee-p1363' }),
  EdDSA: (d, k) => crypto.sign(null, d, k),
  HS256: (d, secret) => crypto.createHmac('sha256', secret).update(d).digest(),
};
const verifiers = {
  RS256: (d, k, s) => crypto.verify('sha256', d, k, s),
  RS512: (d, k, s) => crypto.verify('sha512', d, k, s),
  PS256: (d, k, s) => crypto.verify('sha256', d, { key: k, padding: PSS, saltLength: 32 }, s),
  PS384: (d, k, s) => crypto.verify('sha384', d, { key: k, padding: PSS, saltLength: 48 }, s),
  ES256: (d, k, s) => crypto.verify('sha256', d, { key: k, dsaEncoding: 'ieee-p1363' }, s),
  ES384: (d, k, s) => crypto.verify('sha384', d, { key: k, dsaEncoding: 'ieee-p1363' }, s),
  EdDSA: (d, k, s) => crypto.verify(null, d, k, s),
};

let jtiCounter = 0;
function payload(over = {}, drop = []) {
  const p = {
    iss: ISSUER, sub: 'user-42', aud: AUDIENCE, client_id: 'client-7',
    scope: 'files:read files:write', iat: NOW - 60, exp: NOW + 3600,
    jti: `jv-${String(++jtiCounter).padStart(3, '0')}`,
  };
  for (const k of drop) delete p[k];
  return { ...p, ...over };
}
function header(alg, kid, over = {}, drop = []) {
  const h = { alg, typ: 'at+jwt' };
  if (kid !== undefined) h.kid = kid;
  for (const k of drop) delete h[k];
  return { ...h, ...over };
}

// Sign the exact text "h64.p64" with signAlg (defaults to the header's alg).
function signRaw(h64, p64, signAlg, key) {
  const input = Buffer.from(`${h64}.${p64}`, 'ascii');
  return `${h64}.${p64}.${b64u(signers[signAlg](input, key))}`;
}
function token(h, p, key, signAlg = h.alg) {
  const h64 = b64u(JSON.stringify(h));
  const p64 = b64u(typeof p === 'string' ? p : JSON.stringify(p));
  return signRaw(h64, p64, signAlg, key);
}

// Flip one bit in the middle of the signature's bytes (re-encoded, so the
// token stays well-formed base64url).
function flipSig(tok) {
  const [h, p, s] = tok.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[sig.length >> 1] ^= 0x01;
  return `${h}.${p}.${b64u(sig)}`;
}

// ---- cases ----------------------------------------------------------------

const cases = [];
// expect: 'verify' (the signature must verify with pubKey), 'noverify' (must not)
function add(name, tok, want, opts = {}) {
  cases.push({ name, token: tok, want, jwks: opts.jwks || null, comment: opts.comment });
  if (opts.check) {
    const [alg, pub, shouldVerify] = opts.check;
    const [h, p, s] = tok.split('.');
    const ok = verifiers[alg](Buffer.from(`${h}.${p}`, 'ascii'), pub, Buffer.from(s, 'base64url'));
    if (ok !== shouldVerify) throw new Error(`${name}: signature self-check gave ${ok}`);
  }
}
const pubOf = (j) => crypto.createPublicKey({ key: j, format: 'jwk' }); // as published
const P = Object.fromEntries(Object.entries(J).filter(([k]) => k !== 'oct').map(([k, v]) => [k, pubOf(v)]));
const priv = Object.fromEntries(Object.entries(K).map(([k, v]) => [k, v.privateKey]));

// -- accepted
add('valid_rs256', token(header('RS256', 'rsa-1'), payload(), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true] });
add('valid_ps256', token(header('PS256', 'rsa-ps'), payload(), priv.rsaPs), 'JWT_OK',
  { check: ['PS256', P.rsaPs, true], comment: 'PSS, MGF1 with the same hash, salt length = hash length' });
add('valid_ps384', token(header('PS384', 'rsa-ps'), payload(), priv.rsaPs), 'JWT_OK',
  { check: ['PS384', P.rsaPs, true] });
add('valid_rs512', token(header('RS512', 'rsa-ps'), payload(), priv.rsaPs), 'JWT_OK',
  { check: ['RS512', P.rsaPs, true] });
add('valid_es256', token(header('ES256', 'ec-1'), payload(), priv.ec1), 'JWT_OK',
  { check: ['ES256', P.ec1, true], comment: 'signature is raw r||s, 64 bytes' });
add('valid_es384', token(header('ES384', 'ec-384'), payload(), priv.ec384), 'JWT_OK',
  { check: ['ES384', P.ec384, true], comment: 'signature is raw r||s, 96 bytes' });
add('valid_eddsa', token(header('EdDSA', 'ed-1'), payload(), priv.ed1), 'JWT_OK',
  { check: ['EdDSA', P.ed1, true] });
add('valid_aud_array', token(header('RS256', 'rsa-1'),
  payload({ aud: ['https://x.example', AUDIENCE] }), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true] });
add('valid_typ_application_at_jwt', token(header('RS256', 'rsa-1', { typ: 'application/at+jwt' }),
  payload(), priv.rsa1), 'JWT_OK', { check: ['RS256', P.rsa1, true] });
add('valid_scp_array', token(header('RS256', 'rsa-1'),
  payload({ scp: ['a', 'b'] }, ['scope']), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true], comment: 'no "scope"; claims.scope should read "a b"' });
add('valid_azp', token(header('RS256', 'rsa-1'),
  payload({ azp: 'client-7' }, ['client_id']), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true], comment: 'no "client_id"; claims.client_id should read "client-7"' });
add('valid_issuer2', token(header('RS256', 'as2-rsa-1'), payload({ iss: ISSUER2 }), priv.as2), 'JWT_OK',
  { check: ['RS256', P.as2, true], comment: 'JV_ISSUER2 with its own key (JV_JWKS2)' });
add('valid_no_kid', token(header('RS256', undefined), payload(), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true], comment: 'no kid: the verifier tries the keys that fit RS256' });
add('valid_exp_within_skew', token(header('RS256', 'rsa-1'),
  payload({ iat: NOW - 600, exp: NOW - 30 }), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true], comment: 'exp = JV_NOW-30: OK only because the test uses skew 60' });
add('valid_nbf_within_skew', token(header('RS256', 'rsa-1'),
  payload({ nbf: NOW + 30 }), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true], comment: 'nbf = JV_NOW+30: OK only because the test uses skew 60' });

// -- algorithm confusion and key fit
{
  const h64 = b64u(JSON.stringify(header('none', 'rsa-1')));
  const p64 = b64u(JSON.stringify(payload()));
  add('alg_none', `${h64}.${p64}.`, 'JWT_ALG', { comment: 'alg "none", empty signature' });
}
{
  const pem = K.rsa1.publicKey.export({ type: 'spki', format: 'pem' });
  add('hs256_with_rsa_public_pem', token(header('HS256', 'rsa-1'), payload(), pem), 'JWT_ALG',
    { comment: 'HMAC-SHA256 keyed with rsa-1\'s public key (SPKI PEM text): the classic confusion' });
}
add('hs256_with_oct_key', token(header('HS256', 'hmac-1'), payload(), hmacSecret), 'JWT_ALG',
  { comment: 'HMAC with the JWKS\'s own oct key: symmetric algorithms are never accepted' });
add('rs256_kid_ec_key', token(header('RS256', 'ec-1'), payload(), priv.rsa1), 'JWT_NO_KEY',
  { comment: 'kid names the P-256 key, which cannot verify RS256' });
add('es256_kid_rsa_key', token(header('ES256', 'rsa-1'), payload(), priv.ec1), 'JWT_NO_KEY',
  { check: ['ES256', P.ec1, true], comment: 'signed by ec-1, but kid names an RSA key' });
add('rs256_header_ps256_signature', token(header('RS256', 'rsa-1'), payload(), priv.rsa1, 'PS256'),
  'JWT_SIGNATURE', { check: ['RS256', P.rsa1, false],
    comment: 'a PSS signature by rsa-1 under an RS256 header: the header\'s alg decides, so it fails' });
add('es256_kid_p384_key', token(header('ES256', 'ec-384'), payload(), priv.ec384, 'ES384'), 'JWT_NO_KEY',
  { comment: 'ES256 needs P-256; ec-384 is P-384 (signed by ec-384 with ES384)' });

// -- bad signatures
{
  const good = token(header('RS256', 'rsa-1'), payload(), priv.rsa1);
  add('rs256_signature_flipped', flipSig(good), 'JWT_SIGNATURE', { check: ['RS256', P.rsa1, false] });
  const [h, , s] = good.split('.');
  const altered = b64u(JSON.stringify(payload({ sub: 'admin' })));
  add('rs256_payload_altered', `${h}.${altered}.${s}`, 'JWT_SIGNATURE',
    { check: ['RS256', P.rsa1, false], comment: 'payload replaced after signing (sub "admin")' });
}
add('eddsa_signature_flipped', flipSig(token(header('EdDSA', 'ed-1'), payload(), priv.ed1)),
  'JWT_SIGNATURE', { check: ['EdDSA', P.ed1, false] });
add('es256_signature_flipped', flipSig(token(header('ES256', 'ec-1'), payload(), priv.ec1)),
  'JWT_SIGNATURE', { check: ['ES256', P.ec1, false] });
add('rs256_rogue_key_kid_rsa1', token(header('RS256', 'rsa-1'), payload(), priv.rogue), 'JWT_SIGNATURE',
  { check: ['RS256', P.rsa1, false], comment: 'signed by a key in no JWKS, claiming kid rsa-1' });

// -- keys the verifier skips, and rotation
add('kid_rsa_weak_skipped', token(header('RS256', 'rsa-weak'), payload(), priv.weak), 'JWT_UNKNOWN_KID',
  { check: ['RS256', P.weak, true],
    comment: 'validly signed by the 1024-bit key, but that key is skipped when the JWKS is parsed, so its kid is unknown' });
add('kid_rsa_enc_skipped', token(header('RS256', 'rsa-enc'), payload(), priv.enc), 'JWT_UNKNOWN_KID',
  { check: ['RS256', P.enc, true],
    comment: 'validly signed by the "use":"enc" key, which is skipped when the JWKS is parsed, so its kid is unknown' });
{
  const t = token(header('RS256', 'rsa-new'), payload(), priv.rsaNew);
  add('kid_rsa_new_before_rotation', t, 'JWT_UNKNOWN_KID',
    { check: ['RS256', P.rsaNew, true], comment: 'rsa-new is not in JV_JWKS (refetch the keys)' });
  add('kid_rsa_new_after_rotation', t, 'JWT_OK',
    { jwks: 'JV_JWKS_ROTATED', comment: 'the same token, with the rotated key set' });
}
add('old_rsa1_after_rotation', token(header('RS256', 'rsa-1'), payload(), priv.rsa1), 'JWT_OK',
  { jwks: 'JV_JWKS_ROTATED', check: ['RS256', P.rsa1, true], comment: 'the old key is still published' });

// -- issuer
add('iss_wrong', token(header('RS256', 'rsa-1'), payload({ iss: 'https://evil.example' }), priv.rsa1),
  'JWT_ISSUER', { check: ['RS256', P.rsa1, true] });
add('iss_missing', token(header('RS256', 'rsa-1'), payload({}, ['iss']), priv.rsa1), 'JWT_ISSUER',
  { check: ['RS256', P.rsa1, true] });
add('iss2_signed_by_issuer1_key', token(header('RS256', 'rsa-1'), payload({ iss: ISSUER2 }), priv.rsa1),
  'JWT_UNKNOWN_KID', { check: ['RS256', P.rsa1, true],
    comment: 'claims JV_ISSUER2, whose keys (JV_JWKS2) have no kid rsa-1: keys are per issuer' });

// -- audience
add('aud_other_resource', token(header('RS256', 'rsa-1'), payload({ aud: 'https://other.example/mcp' }),
  priv.rsa1), 'JWT_AUDIENCE', { check: ['RS256', P.rsa1, true] });
add('aud_missing', token(header('RS256', 'rsa-1'), payload({}, ['aud']), priv.rsa1), 'JWT_AUDIENCE',
  { check: ['RS256', P.rsa1, true] });
add('aud_array_without_ours', token(header('RS256', 'rsa-1'),
  payload({ aud: ['https://x.example', 'https://other.example/mcp'] }), priv.rsa1), 'JWT_AUDIENCE',
  { check: ['RS256', P.rsa1, true] });
add('aud_prefix_extension', token(header('RS256', 'rsa-1'),
  payload({ aud: `${AUDIENCE}/evil` }), priv.rsa1), 'JWT_AUDIENCE',
  { check: ['RS256', P.rsa1, true], comment: 'our audience is a prefix of it: exact match only' });

// -- time
add('exp_past', token(header('RS256', 'rsa-1'), payload({ iat: NOW - 7200, exp: NOW - 3600 }), priv.rsa1),
  'JWT_EXPIRED', { check: ['RS256', P.rsa1, true] });
add('exp_missing', token(header('RS256', 'rsa-1'), payload({}, ['exp']), priv.rsa1), 'JWT_NO_EXPIRY',
  { check: ['RS256', P.rsa1, true], comment: 'RFC 9068 requires exp' });
add('exp_string', token(header('RS256', 'rsa-1'), payload({ exp: '1900000000' }), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true],
    comment: 'exp is a string, not a NumericDate: malformed, as nbf and iat that are no dates' });
add('nbf_future', token(header('RS256', 'rsa-1'), payload({ nbf: NOW + 3600, exp: NOW + 7200 }), priv.rsa1),
  'JWT_NOT_YET', { check: ['RS256', P.rsa1, true] });
add('iat_future', token(header('RS256', 'rsa-1'), payload({ iat: NOW + 3600, exp: NOW + 7200 }), priv.rsa1),
  'JWT_NOT_YET', { check: ['RS256', P.rsa1, true] });

// -- claims that must not be read loosely (a review's findings)
add('nbf_string', token(header('RS256', 'rsa-1'), payload({ nbf: '2100000000' }), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true], comment: 'present but no NumericDate: fails closed' });
add('nbf_huge', token(header('RS256', 'rsa-1'), payload({ nbf: 1e300 }), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true], comment: 'an exponent, and past any date: fails closed' });
add('iat_huge', token(header('RS256', 'rsa-1'), payload({ iat: 10000000000000000000 }), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true] });
add('sub_with_nul', token(header('RS256', 'rsa-1'), payload({ sub: 'admin\u0000-mallory' }), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true], comment: 'read as a C string it would be "admin"' });
add('iss_with_nul', token(header('RS256', 'rsa-1'), payload({ iss: `${ISSUER}\u0000.evil.example` }), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true] });
add('exp_fraction', token(header('RS256', 'rsa-1'), payload({ exp: NOW + 3600.5 }), priv.rsa1), 'JWT_OK',
  { check: ['RS256', P.rsa1, true], comment: 'a NumericDate may have a fraction' });

// -- typ (the test sets require_typ)
add('typ_jwt', token(header('RS256', 'rsa-1', { typ: 'JWT' }), payload(), priv.rsa1), 'JWT_TYPE',
  { check: ['RS256', P.rsa1, true], comment: 'JWT_TYPE because the test sets require_typ' });
add('typ_missing', token(header('RS256', 'rsa-1', {}, ['typ']), payload(), priv.rsa1), 'JWT_TYPE',
  { check: ['RS256', P.rsa1, true], comment: 'JWT_TYPE because the test sets require_typ' });
add('typ_dpop', token(header('RS256', 'rsa-1', { typ: 'dpop+jwt' }), payload(), priv.rsa1), 'JWT_TYPE',
  { check: ['RS256', P.rsa1, true], comment: 'another kind of JWT: refused without require_typ too' });

// -- malformed
{
  const good = token(header('RS256', 'rsa-1'), payload(), priv.rsa1);
  const [h, p, s] = good.split('.');
  add('two_parts', `${h}.${p}`, 'JWT_MALFORMED');
  add('four_parts', `${good}.${s}`, 'JWT_MALFORMED');
}
{
  // A header whose base64url has a '-', written in the standard alphabet
  // ('+'), and signed over that exact text so only the alphabet is wrong.
  let h, h64;
  for (let i = 0; ; i++) {
    h = header('RS256', 'rsa-1', { x: 'a'.repeat(i) + '>' });
    h64 = b64u(JSON.stringify(h));
    if (h64.includes('-')) break;
  }
  const std = h64.replace(/-/g, '+').replace(/_/g, '/');
  add('header_std_base64_plus', signRaw(std, b64u(JSON.stringify(payload())), 'RS256', priv.rsa1),
    'JWT_MALFORMED', { comment: 'header in the standard base64 alphabet (has \'+\'), signed over that text' });
  // A header whose JSON length is not a multiple of 3, with '=' padding,
  // signed over the padded text.
  let hp;
  for (let i = 0; ; i++) {
    const j = JSON.stringify(header('RS256', 'rsa-1', { x: 'a'.repeat(i) }));
    if (j.length % 3 !== 0) { hp = Buffer.from(j).toString('base64'); if (hp.endsWith('=')) break; }
  }
  add('header_padded', signRaw(hp.replace(/\+/g, '-').replace(/\//g, '_'), b64u(JSON.stringify(payload())),
    'RS256', priv.rsa1), 'JWT_MALFORMED', { comment: 'header base64url with \'=\' padding, signed over that text' });
}
add('header_not_json', signRaw(b64u('not json'), b64u(JSON.stringify(payload())), 'RS256', priv.rsa1),
  'JWT_MALFORMED');
add('payload_json_array', signRaw(b64u(JSON.stringify(header('RS256', 'rsa-1'))),
  b64u(JSON.stringify([payload()])), 'RS256', priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true], comment: 'validly signed, but the claims are an array' });
add('empty', '', 'JWT_MALFORMED');
add('crit_exp', token(header('RS256', 'rsa-1', { crit: ['exp'] }), payload(), priv.rsa1), 'JWT_MALFORMED',
  { check: ['RS256', P.rsa1, true],
    comment: 'a critical header parameter the verifier does not understand must be refused (RFC 7515 4.1.11)' });

// ---- output ---------------------------------------------------------------

// A C string literal, split into lines of ~100 characters (adjacent literals
// concatenate). '?' is escaped so no trigraph can form under -std=c11.
function cstr(s, indent = '  ') {
  const esc = (ch) => {
    const c = ch.charCodeAt(0);
    if (ch === '"' || ch === '\\') return '\\' + ch;
    if (ch === '?') return '\\?';
    if (c === 10) return '\\n';
    if (c < 32 || c > 126) throw new Error(`unexpected character ${c}`);
    return ch;
  };
  const parts = [];
  let cur = '';
  for (const ch of s) {
    cur += esc(ch);
    if (cur.length >= 100) { parts.push(cur); cur = ''; }
  }
  if (cur || parts.length === 0) parts.push(cur);
  return parts.map((p) => `"${p}"`).join(`\n${indent}`);
}

const names = new Set();
for (const c of cases) {
  if (names.has(c.name)) throw new Error(`duplicate case ${c.name}`);
  names.add(c.name);
}

let out = '';
out += `/* jwt_vectors.h — JWT/JWKS test vectors for core/auth/jwt.h.
 * GENERATED by tests/unit/jwt_vectors.mjs with node:crypto; do not edit.
 * Keys are random per run: regenerate this whole file, never patch a token.
 *
 * Include after jwt.h. The test should give JV_ISSUER the key set each case
 * names in .jwks (NULL = JV_JWKS) and JV_ISSUER2 always JV_JWKS2, with
 *   audience = JV_AUDIENCE, now = JV_NOW, skew = ${SKEW}, require_typ = true.
 * Several expectations depend on that skew and on require_typ (see the
 * comments on the cases).
 *
 * JV_JWKS: rsa-1 (RSA 2048, RS256, sig), rsa-ps (RSA 2048, no alg: PS256,
 * PS384, RS512), ec-1 (P-256), ec-384 (P-384), ed-1 (Ed25519), and keys to
 * be skipped: hmac-1 (oct), rsa-weak (RSA 1024), rsa-enc (RSA 2048, use enc);
 * so ${JWKS.keys.length} keys, ${JWKS.keys.length - 3} usable.
 * JV_JWKS2: as2-rsa-1 (RSA 2048). JV_JWKS_ROTATED: rsa-1 and rsa-new. */
#ifndef LUAMCP_JWT_VECTORS_H
#define LUAMCP_JWT_VECTORS_H

#define JV_ISSUER ${cstr(ISSUER)}
#define JV_ISSUER2 ${cstr(ISSUER2)}
#define JV_AUDIENCE ${cstr(AUDIENCE)}
#define JV_NOW ${NOW}LL
#define JV_SKEW ${SKEW}LL
#define JV_JWKS_USABLE ${JWKS.keys.length - 3}

/* public keys of JV_ISSUER */
static const char JV_JWKS[] =
  ${cstr(JSON.stringify(JWKS))};

/* public keys of JV_ISSUER2 (one RSA key, kid as2-rsa-1) */
static const char JV_JWKS2[] =
  ${cstr(JSON.stringify(JWKS2))};

/* JV_ISSUER's keys after rotation: the old rsa-1 plus the new rsa-new */
static const char JV_JWKS_ROTATED[] =
  ${cstr(JSON.stringify(JWKS_ROTATED))};

struct jv_case { const char *name; const char *token; jwt_status want; const char *jwks; };

static const struct jv_case JV_CASES[] = {
`;
for (const c of cases) {
  if (c.comment) out += `  /* ${c.comment.replace(/\*\//g, '* /')} */\n`;
  out += `  {${cstr(c.name)},\n   ${cstr(c.token, '   ')},\n   ${c.want}, ${c.jwks || 'NULL'}},\n`;
}
out += `};

#define JV_NCASES (sizeof JV_CASES / sizeof JV_CASES[0])

#endif
`;

fs.writeFileSync(outPath, out);
console.log(`wrote ${outPath}: ${cases.length} cases`);
