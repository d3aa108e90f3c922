// middleware.test.mjs — mcp.use(function(req, next) ... end): order, what
// req holds for each method, rewriting arguments, answering without next(),
// errors at the middleware's line, next() twice, a handler that waits behind
// middleware, reloading it; and the two recipes of examples/middleware/ run
// as they are: the audit log (sensitive arguments redacted) and the rate
// limit on mcp.store, across two instances behind nginx sharing Redis.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, TEST_TIMEOUT, removeTemp, run, tempApp, withRaw } from './helpers.mjs';
import { HttpServer, post, rpc } from './http-helpers.mjs';
import { NGINX, REDIS, startNginx, startRedis, stopChild, until } from './services.mjs';

const opts = { timeout: TEST_TIMEOUT };
const textOf = (r) => r.result?.content?.[0]?.text ?? r.result?.contents?.[0]?.text ?? r.result?.messages?.[0]?.content?.text;

const MIDDLEWARE = `
local mcp = require "mcp"
mcp.use(function(req, next)              -- first registered: outermost
  mcp.state.seen = (mcp.state.seen or "") .. "A>"
  local r = next()
  mcp.state.seen = mcp.state.seen .. "<A"
  return r
end)
mcp.use(function(req, next)
  mcp.state.seen = mcp.state.seen .. "B(" .. req.method .. " " .. tostring(req.name) .. ")"
  if req.method == "tools/call" then
    if req.arguments.text == "stop" then return "answered by middleware" end
    if req.arguments.text == "boom" then error("middleware refuses boom") end
    if req.arguments.text == "twice" then next() return next() end
    if type(req.arguments.text) == "string" then req.arguments.text = req.arguments.text:upper() end
  end
  assert(req.ctx, "req.ctx")
  return next()
end)
`;
const TOOLS = `
local mcp = require "mcp"
mcp.tool { name = "echo", input = { text = mcp.string {} }, handler = function(a) return a.text end }
mcp.tool { name = "nap", handler = function(_, ctx) ctx:sleep(0.05) return "rested" end }
mcp.tool { name = "seen", handler = function() local s = mcp.state.seen mcp.state.seen = "" return s end }
mcp.resource { uri = "x://r", read = function(uri) return "read " .. uri end }
mcp.template { uri = "x://t/{id}", read = function(v) return "t " .. v.id end }
mcp.prompt { name = "hi", args = { who = mcp.string {} }, get = function(a) return "hi " .. a.who end }
`;

test('mcp.use: order, req for each method, rewriting, short-circuit, errors at the middleware line, next() twice, waits; reloads with the app', opts, async () => {
  const app = await tempApp({ 'scripts/a_middleware.lua': MIDDLEWARE, 'scripts/tools.lua': TOOLS });
  try {
    await withRaw([app], async (srv) => {
      await srv.initialize();
      let id = 1;
      const tool = async (name, args = {}) => srv.call(id++, 'tools/call', { name, arguments: args });
      const seen = async () => textOf(await tool('seen'));
      // seen() returns the trace and empties it; its own A's "<A" comes after
      await seen();
      assert.equal(textOf(await tool('echo', { text: 'hi' })), 'HI');
      assert.equal(await seen(), '<AA>B(tools/call echo)<AA>B(tools/call seen)');
      assert.equal(textOf(await tool('echo', { text: 'stop' })), 'answered by middleware');
      const boom = await tool('echo', { text: 'boom' });
      assert.equal(boom.result.isError, true);
      assert.match(textOf(boom), /a_middleware\.lua:13: middleware refuses boom/);
      const twice = await tool('echo', { text: 'twice' });
      assert.equal(twice.result.isError, true);
      assert.match(textOf(twice), /a_middleware\.lua:9: mcp\.use: next\(\) called twice by the middleware defined here/);
      assert.equal(textOf(await tool('nap')), 'rested'); // the handler parked behind both
      await seen();
      assert.equal(textOf(await srv.call(id++, 'resources/read', { uri: 'x://r' })), 'read x://r');
      assert.equal(textOf(await srv.call(id++, 'resources/read', { uri: 'x://t/7' })), 't 7');
      assert.equal(textOf(await srv.call(id++, 'prompts/get', { name: 'hi', arguments: { who: 'ada' } })), 'hi ada');
      assert.equal(await seen(), '<AA>B(resources/read x://r)<AA>B(resources/read x://t/{id})<AA>B(prompts/get hi)<AA>B(tools/call seen)');
      // the middleware changes: the next call goes through the new one
      await writeFile(path.join(app, 'scripts', 'a_middleware.lua'),
        'require("mcp").use(function(req, next) return "v2 " .. tostring(next()) end)\n');
      await until(async () => textOf(await tool('echo', { text: 'x' })) === 'v2 x', 'the reloaded middleware');
    });
  } finally {
    await removeTemp(app);
  }
});

// Issue 33, item 10: which middleware called next() is kept in 64 bits, and past
// 64 next() could run twice; a 65th mcp.use is now a load error at its line.
test('mcp.use: at most 64 middlewares; a 65th is an error at its line', opts, async () => {
  const app = await tempApp({
    'scripts/many.lua': `local mcp = require "mcp"
for i = 1, 64 do mcp.use(function(req, next) return next() end) end
mcp.use(function(req, next) return next() end)
mcp.tool { name = "t", handler = function() return "ok" end }
`,
  });
  try {
    const r = await run(['check', app]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /many\.lua:3: mcp\.use: at most 64 middlewares/);
  } finally {
    await removeTemp(app);
  }
});

test('the audit recipe: one line per call through the client log, sensitive arguments redacted', opts, async () => {
  const app = await tempApp({
    'scripts/audit.lua': await readFile(path.join(REPO_ROOT, 'examples', 'middleware', 'audit.lua'), 'utf8'),
    'scripts/tools.lua': `require("mcp").tool { name = "login", input = { user = require("mcp").string {}, password = require("mcp").string {} },
      handler = function(a) return "welcome " .. a.user end }`,
  });
  try {
    await withRaw([app], async (srv) => {
      await srv.initialize();
      await srv.call(0, 'logging/setLevel', { level: 'info' });
      const r = await srv.call(1, 'tools/call', { name: 'login', arguments: { user: 'ada', password: 'hunter2' } });
      assert.equal(textOf(r), 'welcome ada');
      const log = srv.lines.find((l) => l.includes('notifications/message') && l.includes('audit:'));
      assert.ok(log, srv.lines.join('\n'));
      assert.match(log, /audit: \(no identity\) called login \{[^}]*\\"password\\":\\"\[redacted\]\\"[^}]*\}: ok in/);
      assert.ok(!srv.lines.join('\n').includes('hunter2'), 'the password reached the log');
    });
  } finally {
    await removeTemp(app);
  }
});

const haveServices = existsSync(NGINX) && existsSync(REDIS);
test('the rate-limit recipe counts across two instances behind nginx sharing Redis', { ...opts, skip: !haveServices && 'nginx or redis-server is not installed' }, async () => {
  // the recipe's window is a minute of the clock: not across its turn
  while (Math.floor(Date.now() / 1000) % 60 > 52) await new Promise((r) => setTimeout(r, 500));
  const app = await tempApp({
    'scripts/ratelimit.lua': await readFile(path.join(REPO_ROOT, 'examples', 'middleware', 'ratelimit.lua'), 'utf8'),
    'scripts/tools.lua': 'require("mcp").tool { name = "work", handler = function() return "done" end }',
  });
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-ratelimit-'));
  await chmod(dir, 0o755);
  const instances = [];
  let redis, nginx;
  try {
    redis = await startRedis();
    const store = `redis://127.0.0.1:${redis.port}/5`;
    for (const name of ['a', 'b']) {
      instances.push(await new HttpServer(app, ['--instance', name, '--trust-proxy', '127.0.0.2', '--store', store, '--no-watch']).start());
    }
    await mkdir(path.join(dir, 'nginx'));
    nginx = await startNginx(path.join(dir, 'nginx'), instances.map((s) => s.port).concat(instances[1].port));
    const REV = '2026-07-28';
    const meta = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };
    const front = { url: nginx.url, host: `127.0.0.1:${nginx.port}`, port: nginx.port };
    const answers = [];
    for (let i = 0; i < 8; i++) {
      const ex = await post(front, rpc('tools/call', { name: 'work', arguments: {}, _meta: meta }),
        { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'work' } });
      assert.equal(ex.status, 200, ex.body);
      answers.push({ text: JSON.parse(ex.body).result.content[0].text, upstream: ex.headers['x-luamcp-upstream'] });
    }
    assert.deepEqual(answers.slice(0, 5).map((a) => a.text), Array(5).fill('done'));
    for (const a of answers.slice(5)) assert.match(a.text, /^rate limit: 5 calls a minute/);
    assert.ok(new Set(answers.map((a) => a.upstream)).size >= 2, `one instance answered all: ${JSON.stringify(answers)}`);
  } finally {
    await stopChild(nginx?.child, nginx?.exited, 'SIGQUIT');
    for (const s of instances) await s.stop().catch(() => {});
    await stopChild(redis?.child, redis?.exited);
    await rm(dir, { recursive: true, force: true });
    await removeTemp(app);
  }
});
