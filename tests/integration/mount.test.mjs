// mount.test.mjs — mcp.mount (lua/mount.lua, core/mcp/mount.c): the tools of
// the official server-everything (stdio) and of a luamcp upstream (HTTP)
// served as the gateway's own (tests/apps/mount-gateway): listed once the
// refresh after the load has listed them (our client is told
// list_changed), renamed, filtered, reshaped, given scopes, called through,
// and wrapped by the gateway's middleware like its local tool; and luamcp
// proxy (a generated app of one mount) both ways with the official SDK client.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { cp, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { APPS, REPO_ROOT, TEST_TIMEOUT, WAIT, command, removeTemp, within, withRaw } from './helpers.mjs';
import { HttpServer, freePort, withHttp } from './http-helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const GW = path.join(APPS, 'mount-gateway');
const UP = path.join(APPS, 'client-upstream');
const EVERYTHING = path.join(REPO_ROOT, 'tests', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

let up, marks;
before(async () => {
  marks = await mkdtemp(path.join(tmpdir(), 'luamcp-mount-'));
  up = await new HttpServer(UP, [], { env: { CLIENT_MARKS: marks } }).start();
});
after(async () => {
  await up?.kill();
  await removeTemp(marks);
});
const gwEnv = () => ({ EVERYTHING, UP_URL: up.url });

/** What the gateway must list once both upstreams are mounted. */
function checkTools(tools, { admin = true } = {}) {
  const names = tools.map((t) => t.name).sort();
  const ev = names.filter((n) => n.startsWith('ev_'));
  // include echo and get-*, exclude get-env; get-sum renamed by transform
  assert.ok(ev.includes('ev_echo') && ev.includes('ev_sum'), `${names}`);
  assert.ok(ev.length > 2, `more get-* tools: ${ev}`);
  for (const n of ev) assert.match(n, /^ev_(echo|sum|get-.+)$/);
  assert.ok(!ev.includes('ev_get-env') && !ev.includes('ev_get-sum'), `${ev}`);
  for (const t of tools.filter((x) => x.name.startsWith('ev_'))) assert.match(t.description, /^\[everything\] /);
  // the luamcp upstream: all but fail and big (exclude) and slow (transform -> nil)
  assert.deepEqual(names.filter((n) => n.startsWith('up_')), admin ? ['up_echo', 'up_steps', 'up_whoami'] : ['up_echo', 'up_steps']);
  assert.ok(names.includes('local_echo'));
  // the upstream's schema and annotations come along
  const echo = tools.find((t) => t.name === 'ev_echo');
  assert.equal(echo.inputSchema.properties.message.type, 'string');
  assert.equal(echo.annotations.readOnlyHint, true);
}

test('over stdio: the upstreams\' tools, resources, templates and prompts appear after the refresh (list_changed), renamed, filtered, reshaped; calls, reads, gets and completions go through; middleware wraps them', opts, () =>
  withRaw([GW], async (gw) => {
    await gw.initialize();
    // the first list: the load did not wait on the upstreams (not listed yet)
    const first = await gw.call(2, 'tools/list', {});
    assert.deepEqual(first.result.tools.map((t) => t.name), ['local_echo']);
    await gw.take((l) => l.includes('notifications/tools/list_changed'), 'tools/list_changed');
    const r = await gw.call(3, 'tools/list', {});
    checkTools(r.result.tools);
    const echo = await gw.call(4, 'tools/call', { name: 'ev_echo', arguments: { message: 'hi' } });
    assert.deepEqual(echo.result.content, [{ type: 'text', text: 'Echo: hi' }]);
    assert.equal(echo.result._meta.wrapped, 'ev_echo', 'the middleware ran around the mounted call');
    const sum = await gw.call(5, 'tools/call', { name: 'ev_sum', arguments: { a: 2, b: 40 } });
    assert.match(sum.result.content[0].text, /42/);
    const upEcho = await gw.call(6, 'tools/call', { name: 'up_echo', arguments: { text: 'hello' } });
    assert.deepEqual(upEcho.result.content, [{ type: 'text', text: 'hello' }]);
    assert.equal(upEcho.result._meta.wrapped, 'up_echo');
    const local = await gw.call(7, 'tools/call', { name: 'local_echo', arguments: { text: 'x' } });
    assert.equal(local.result._meta.wrapped, 'local_echo');
    // the upstream's schema is checked here, before forwarding
    const bad = await gw.call(8, 'tools/call', { name: 'up_echo', arguments: { text: 5 } });
    assert.equal(bad.result.isError, true);
    // resources (URIs kept, names prefixed, filtered), templates, prompts and completion, forwarded
    const res = (await gw.call(10, 'resources/list', {})).result.resources;
    const resNames = res.map((x) => x.name);
    assert.ok(resNames.includes('ev_architecture.md') && !resNames.includes('ev_features.md'), `${resNames}`);
    for (const n of resNames.filter((x) => x.startsWith('ev_'))) assert.match(n, /^ev_.+\.md$/);
    // the luamcp upstream's resource, its prompt too (every kind of a mount)
    assert.ok(resNames.includes('up_a'), `${resNames}`);
    const arch = res.find((x) => x.name === 'ev_architecture.md');
    const read = (await gw.call(11, 'resources/read', { uri: arch.uri })).result;
    assert.equal(read.contents[0].uri, arch.uri);
    assert.match(read.contents[0].text, /Architecture/);
    const templates = (await gw.call(12, 'resources/templates/list', {})).result.resourceTemplates;
    assert.deepEqual(templates.map((t) => t.name).sort(), ['ev_Dynamic Blob Resource', 'ev_Dynamic Text Resource', 'up_item']);
    const blob = (await gw.call(13, 'resources/read', { uri: 'demo://resource/dynamic/blob/3' })).result;
    assert.equal(blob.contents[0].uri, 'demo://resource/dynamic/blob/3');
    assert.match(Buffer.from(blob.contents[0].blob, 'base64').toString(), /^Resource 3:/, 'a blob arrives as the same bytes');
    const prompts = (await gw.call(14, 'prompts/list', {})).result.prompts.map((x) => x.name).sort();
    assert.deepEqual(prompts, ['ev_args-prompt', 'ev_completable-prompt', 'ev_resource-prompt', 'ev_simple-prompt', 'up_greet']);
    const got = (await gw.call(15, 'prompts/get', { name: 'ev_args-prompt', arguments: { city: 'Lyon' } })).result;
    assert.match(JSON.stringify(got.messages), /Lyon/);
    const done = (await gw.call(16, 'completion/complete', { ref: { type: 'ref/prompt', name: 'ev_completable-prompt' }, argument: { name: 'department', value: 'S' } })).result;
    assert.deepEqual(done.completion.values.sort(), ['Sales', 'Support']);
    // the refresh is the server's own request: a client is told it does not exist
    const refresh = await gw.call(9, 'luamcp/mount/refresh', {});
    assert.equal(refresh.error.code, -32601);
  }, { env: { ...process.env, ...gwEnv() } }));

test('an upstream whose tools change: SIGHUP lists it again and our client is told tools/list_changed', opts, async () => {
  // an upstream of its own (a copy of the luamcp one), so the others are not changed
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-mount-up-'));
  await cp(UP, dir, { recursive: true });
  const own = await new HttpServer(dir, [], { env: { CLIENT_MARKS: marks } }).start();
  try {
    await withRaw([GW], async (gw) => {
      await gw.initialize();
      await gw.take((l) => l.includes('notifications/tools/list_changed'), 'the first tools/list_changed');
      const names = async (id) => (await gw.call(id, 'tools/list', {})).result.tools.map((t) => t.name);
      assert.ok(!(await names(2)).includes('up_added'));
      // the upstream gains a tool (its own hot reload), then the gateway is asked to list again
      const reloaded = new Promise((resolve) => own.child.stderr.on('data', () => { if (/reloaded .*7 tools/.test(own.stderr)) resolve(); }));
      await writeFile(path.join(dir, 'scripts', 'added.lua'),
        'local mcp = require "mcp"\nmcp.tool { name = "added", description = "New", input = {}, handler = function() return "added here" end }\n');
      await within(reloaded, WAIT, 'the upstream to reload');
      gw.child.kill('SIGHUP');
      await gw.take((l) => l.includes('notifications/tools/list_changed'), 'tools/list_changed after SIGHUP');
      assert.ok((await names(3)).includes('up_added'));
      const r = await gw.call(4, 'tools/call', { name: 'up_added', arguments: {} });
      assert.deepEqual(r.result.content, [{ type: 'text', text: 'added here' }]);
    }, { env: { ...process.env, EVERYTHING, UP_URL: own.url } });
  } finally {
    await own.kill();
    await removeTemp(dir);
  }
});

// {====== over HTTP with tokens: scopes of a mount for our users
const ISSUER = 'https://as.test.example';
const RESOURCE = 'https://mcp.test.example/mcp';
const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
function jwt(scope) {
  const now = Math.floor(Date.now() / 1000);
  const signed = `${b64({ alg: 'RS256', typ: 'at+jwt', kid: 'k1' })}.${b64({ iss: ISSUER, aud: RESOURCE, sub: 'u', client_id: 'c', scope, iat: now, exp: now + 600 })}`;
  return `${signed}.${crypto.sign('sha256', Buffer.from(signed), rsa.privateKey).toString('base64url')}`;
}

test('over HTTP with tokens: a mount\'s scopes and a transform\'s own decide who lists and calls a mounted tool; the official SDK client calls through', opts, async () => {
  const jwks = path.join(marks, 'jwks.json');
  await writeFile(jwks, JSON.stringify({ keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' }] }));
  const args = ['--auth-resource', RESOURCE, '--auth-issuer', ISSUER, '--auth-jwks', jwks];
  await withHttp(GW, args, async (srv) => {
    // the refresh after the load published the mounted tools
    await within((async () => { while (!srv.stderr.includes('reloaded')) await new Promise((r) => srv.child.stderr.once('data', r)); })(), WAIT, 'the reload after the refresh');
    const connect = async (scope) => {
      const client = new Client({ name: 'mount-test', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: { Authorization: `Bearer ${jwt(scope)}` } } }));
      return client;
    };
    const admin = await connect('tools:up admin');
    checkTools((await admin.listTools()).tools);
    const who = await admin.callTool({ name: 'up_whoami', arguments: {} });
    assert.ok(!who.isError, JSON.stringify(who));
    const reader = await connect('tools:up');
    checkTools((await reader.listTools()).tools, { admin: false });
    const nobody = await connect('openid');
    const names = (await nobody.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('ev_echo') && !names.some((n) => n.startsWith('up_')), `${names}`);
    // a call without the scope is refused (403 insufficient_scope)
    await assert.rejects(nobody.callTool({ name: 'up_echo', arguments: { text: 'x' } }), /403|insufficient_scope|scope/i);
    const echo = await reader.callTool({ name: 'up_echo', arguments: { text: 'through' } });
    assert.deepEqual(echo.content, [{ type: 'text', text: 'through' }]);
    const ev = await nobody.callTool({ name: 'ev_echo', arguments: { message: 'sdk' } });
    assert.deepEqual(ev.content, [{ type: 'text', text: 'Echo: sdk' }]);
    for (const c of [admin, reader, nobody]) await c.close();
  }, { env: gwEnv() });
});
// }======

// {====== luamcp proxy: a generated app with one mcp.mount, served as serve serves

/** The tools of client once the proxy has listed its upstream: the first
    list, else the one after tools/list_changed (registered before connect). */
async function toolsOnceListed(client, changed, want) {
  let tools = (await client.listTools()).tools;
  if (!tools.some((t) => t.name === want)) {
    await within(changed, WAIT, 'tools/list_changed');
    tools = (await client.listTools()).tools;
  }
  return tools;
}
function listChanged(client) {
  return new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
}

test('luamcp proxy --http -- COMMAND: server-everything over stdio served over Streamable HTTP to the official SDK client', opts, async () => {
  const port = await freePort();
  const { command: cmd, args } = command(['proxy', '--http', `127.0.0.1:${port}`, '--', 'node', EVERYTHING, 'stdio']);
  const child = spawn(cmd, args, { cwd: REPO_ROOT, env: { ...process.env, LUAMCP_LOG_LEVEL: 'info' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    await within(new Promise((resolve, reject) => {
      child.stderr.setEncoding('utf8').on('data', (d) => {
        stderr += d;
        if (stderr.includes(`listening on http://127.0.0.1:${port}/mcp`)) resolve();
      });
      exited.then((e) => reject(new Error(`proxy exited ${JSON.stringify(e)}: ${stderr}`)));
    }), WAIT, 'the proxy to listen');
    const client = new Client({ name: 'proxy-test', version: '1' });
    const changed = listChanged(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const tools = await toolsOnceListed(client, changed, 'echo');
    assert.ok(tools.some((t) => t.name === 'get-sum'), tools.map((t) => t.name).join());
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'over http' } });
    assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: over http' }]);
    const prompt = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Oslo' } });
    assert.match(JSON.stringify(prompt.messages), /Oslo/);
    await client.close();
  } catch (err) {
    err.message += `\n--- proxy stderr ---\n${stderr}`;
    throw err;
  } finally {
    child.kill('SIGTERM');
    const { code } = await exited;
    assert.equal(code, 0, stderr);
  }
});

test('luamcp proxy URL: a luamcp upstream over HTTP served over stdio to the official SDK client; its temp app is gone after', opts, async () => {
  const { command: cmd, args } = command(['proxy', up.url]);
  const transport = new StdioClientTransport({ command: cmd, args, env: { ...process.env, TMPDIR: marks }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.setEncoding('utf8').on('data', (d) => (stderr += d));
  const client = new Client({ name: 'proxy-test', version: '1' });
  const changed = listChanged(client);
  try {
    await client.connect(transport);
    const tools = await toolsOnceListed(client, changed, 'echo');
    assert.deepEqual(tools.map((t) => t.name).sort(), ['big', 'echo', 'fail', 'slow', 'steps', 'whoami']);
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } });
    assert.deepEqual(echo.content, [{ type: 'text', text: 'over stdio' }]);
    const read = await client.readResource({ uri: 'test://up/a' });
    assert.equal(read.contents[0].text, 'resource a');
    // the generated app lives in a private temp folder while it serves
    assert.ok((await readdir(marks)).some((n) => n.startsWith('luamcp-proxy-')));
  } catch (err) {
    err.message += `\n--- proxy stderr ---\n${stderr}`;
    throw err;
  } finally {
    await client.close();
  }
  await within((async () => {
    while ((await readdir(marks)).some((n) => n.startsWith('luamcp-proxy-'))) await new Promise((r) => setTimeout(r, 20));
  })(), WAIT, 'the temp app to be removed');
});
// }======
