// annotations.test.mjs — lua/mcp.d.lua (the LuaLS annotations) against what
// the runtime accepts, both ways. No Lua language server can be installed
// here (Debian 12 has no lua-language-server package, and the npm registry
// has none that runs without downloading a binary), so instead of running
// one in --check mode this compares every documented field and function
// with the sets lua/mcp.lua and the C modules check against: a field the
// runtime refuses must not be offered by the editor, and a field the runtime
// takes must be documented. Then a deliberately wrong script: the field it
// misspells is absent from its class, and `luamcp check` reports it at its line.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, TEST_TIMEOUT, removeTemp, run, tempApp } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const read = (rel) => readFileSync(path.join(REPO_ROOT, rel), 'utf8');
const DLUA = read('lua/mcp.d.lua');
// the runtime's two chunks: the author's API and its machinery (app.lua's checks)
const MCP = read('lua/mcp.lua') + '\n' + read('lua/internal.lua') + '\n' + read('lua/client.lua') + '\n' + read('lua/mount.lua');

/** ---@class NAME followed by ---@field lines (and `function NAME:method`). */
function classes(text) {
  const out = new Map();
  let current = null;
  for (const line of text.split('\n')) {
    const c = line.match(/^---@class ([\w.]+)/);
    if (c) {
      current = { fields: new Set(), methods: new Set() };
      out.set(c[1], current);
      continue;
    }
    const f = line.match(/^---@field (\w+)\??\s/);
    if (f && current) current.fields.add(f[1]);
    else if (!line.startsWith('---')) current = null;
  }
  // methods: `local Context = {}` after the class, then function Context:x
  for (const [, cls, local] of text.matchAll(/---@class ([\w.]+)[^\n]*\n(?:---[^\n]*\n)*local (\w+) = \{\}/g)) {
    for (const [, m] of text.matchAll(new RegExp(`^function ${local}:(\\w+)\\(`, 'gm'))) out.get(cls).methods.add(m);
  }
  return out;
}
const CLASSES = classes(DLUA);

/** The keys of `local NAME = set { "a", "b", ... }` in lua/mcp.lua or lua/internal.lua. */
function luaSet(name) {
  const m = MCP.match(new RegExp(`local ${name} = set \\{([^}]*)\\}`));
  assert.ok(m, `lua/mcp.lua has local ${name} = set {...}`);
  return new Set([...m[1].matchAll(/"([^"]+)"/g)].map((x) => x[1]));
}
/** The keys of a table constructor `local NAME = { k = ..., ... }` (one level). */
function luaTableKeys(name) {
  const m = MCP.match(new RegExp(`local ${name} = \\{\\n([\\s\\S]*?)\\n\\}`));
  assert.ok(m, `lua/mcp.lua has local ${name} = {...}`);
  return m[1];
}
const keysOf = (body) => new Set([...body.replace(/--[^\n]*/g, '').matchAll(/(?:^|[,{\s])(\w+) = /g)].map((x) => x[1]));
/** app_sub's entry for one app.lua table: `name = { a = ..., b = ... },` */
function appSub(name) {
  const body = luaTableKeys('app_sub');
  const line = body.split('\n').find((l) => l.trim().startsWith(`${name} = {`));
  assert.ok(line, `app_sub has ${name}`);
  const inner = line.slice(line.indexOf('{') + 1);
  // the top-level keys of the inner table only
  let depth = 0;
  let top = '';
  for (const ch of inner) {
    if (ch === '{') depth++;
    else if (ch === '}') depth--;
    else if (depth === 0) top += ch;
    if (depth < 0) break;
  }
  return keysOf(` ${top}`);
}
/** A C string list: static const char *const NAME[...] = {"a", "b", ...}; */
function cList(file, name) {
  const text = read(file);
  const m = text.match(new RegExp(`${name}\\[[^\\]]*\\] = \\{([^}]*)\\}`));
  assert.ok(m, `${file} has ${name}`);
  return new Set([...m[1].matchAll(/"([^"]+)"/g)].map((x) => x[1]));
}
/** The names of a luaL_Reg list: {"name", fn}, ... */
function cReg(file, name) {
  const text = read(file);
  const m = text.match(new RegExp(`${name}\\[\\] = \\{([\\s\\S]*?)\\{NULL, NULL\\}`));
  assert.ok(m, `${file} has luaL_Reg ${name}`);
  return new Set([...m[1].matchAll(/\{"(\w+)",/g)].map((x) => x[1]));
}

function sameSet(documented, accepted, what) {
  const missing = [...accepted].filter((k) => !documented.has(k)).sort();
  const extra = [...documented].filter((k) => !accepted.has(k)).sort();
  assert.deepEqual({ undocumented: missing, not_accepted: extra }, { undocumented: [], not_accepted: [] }, what);
}

const fieldChecks = {
  'mcp.ToolDef': () => luaSet('tool_keys'),
  'mcp.ResourceDef': () => luaSet('resource_keys'),
  'mcp.TemplateDef': () => luaSet('template_keys'),
  'mcp.PromptDef': () => luaSet('prompt_keys'),
  'mcp.WidgetDef': () => luaSet('widget_keys'),
  'mcp.Csp': () => luaSet('csp_keys'),
  'mcp.SchemaOptions': () => luaSet('builder_keys'),
  'mcp.AppInfo': () => keysOf(luaTableKeys('app_fields')),
  'mcp.CacheHint': () => appSub('cache'),
  'mcp.SchemaPolicy': () => appSub('schema'),
  'mcp.RegistryInfo': () => appSub('registry'),
  'mcp.UserConfigEntry': () => keysOf(luaTableKeys('user_config_fields').replace(/\{[^}]*\}/g, '0')),
  'mcp.HttpRequest': () => cList('core/io/io_http.c', 'option_names'),
  'mcp.ExecOptions': () => cList('core/io/io_exec.c', 'option_names'),
  'mcp.UpstreamDef': () => luaSet('upstream_keys'),
  'mcp.ClientDef': () => luaSet('adhoc_keys'),
};

for (const [cls, accepted] of Object.entries(fieldChecks)) {
  test(`mcp.d.lua ${cls}: the fields the runtime accepts, no more, no fewer`, opts, () => {
    assert.ok(CLASSES.has(cls), `mcp.d.lua has ---@class ${cls}`);
    sameSet(CLASSES.get(cls).fields, accepted(), cls);
  });
}

test('every alias of the docs/lua-api.md table is annotated beside its luamcp name', opts, () => {
  const pairs = [['mcp.ToolDef', 'input', 'inputSchema'], ['mcp.ToolDef', 'output', 'outputSchema'],
    ['mcp.PromptDef', 'args', 'arguments'], ['mcp.ResourceDef', 'mime', 'mimeType'],
    ['mcp.TemplateDef', 'mime', 'mimeType'], ['mcp.TemplateDef', 'uri', 'uriTemplate'],
    ['mcp.LinkDef', 'mime', 'mimeType'], ['mcp.EmbedDef', 'mime', 'mimeType'],
    ['mcp.Result', 'structured', 'structuredContent'], ['mcp.SchemaOptions', 'min', 'minimum'],
    ['mcp.SchemaOptions', 'max', 'maximum']];
  for (const [cls, ours, theirs] of pairs) {
    for (const f of [ours, theirs]) assert.ok(CLASSES.get(cls)?.fields.has(f), `${cls} documents ${f}`);
  }
});

test('mcp.Context: the methods and fields of ctx (core/app/lua_api.c)', opts, () => {
  const ctx = CLASSES.get('mcp.Context');
  sameSet(ctx.methods, cReg('core/app/lua_api.c', 'ctx_methods'), 'ctx methods');
  const text = read('core/app/lua_api.c');
  const index = text.slice(text.indexOf('ctx_methods'));
  const fields = new Set([...index.matchAll(/strcmp\(key, "(\w+)"\) == 0/g)].map((x) => x[1]));
  assert.ok(fields.has('uri') && fields.has('cancelled'), 'found the ctx fields in lua_api.c');
  sameSet(ctx.fields, fields, 'ctx fields');
});

test('mcp.redis: callable, and the fields of io_redis.c\'s table', opts, () => {
  const text = read('core/io/io_redis.c');
  const push = text.slice(text.indexOf('void io_redis_push'));
  const fields = new Set([...push.matchAll(/lua_setfield\(L, -2, "(\w+)"\)/g)].map((m) => m[1]));
  assert.ok(fields.has('__call'), 'mcp.redis is callable');
  const tableFields = new Set([...fields].filter((f) => !['__call', 'check'].includes(f))); // check: test.lua's
  const documented = new Set([...DLUA.matchAll(/^function mcp\.redis\.(\w+)\(/gm)].map((m) => m[1]));
  sameSet(documented, tableFields, 'mcp.redis functions');
  assert.match(DLUA, /---@class mcp\.redis\n---@overload fun\(cmd: string/, 'the call is annotated');
});

test('mcp.socket and its sockets, mcp.http: the C modules\' functions', opts, () => {
  sameSet(CLASSES.get('mcp.Socket').methods, cReg('core/io/io_socket.c', 'methods'), 'socket methods');
  const socketFns = new Set([...DLUA.matchAll(/^(?:function mcp\.socket\.(\w+)\(|mcp\.socket\.(\w+) = )/gm)].map((m) => m[1] || m[2]));
  sameSet(socketFns, new Set([...cReg('core/io/io_socket.c', 'funcs'), 'unix']), 'mcp.socket functions');
  const httpFns = new Set([...DLUA.matchAll(/^function mcp\.http\.(\w+)\(/gm)].map((m) => m[1]));
  sameSet(httpFns, cReg('core/io/io_http.c', 'funcs'), 'mcp.http functions');
  // mcp.db: the C module's, but begin/commit/rollback, which lua/mcp.lua makes tx of
  const dbFns = new Set([...DLUA.matchAll(/^function mcp\.db\.(\w+)\(/gm)].map((m) => m[1]));
  const dbC = new Set([...cReg('core/io/db.c', 'funcs')].filter((f) => !['begin', 'commit', 'rollback'].includes(f)));
  assert.match(MCP, /^M\.db = \{[^\n]*tx = db_tx \}/m, 'lua/mcp.lua makes mcp.db.tx');
  sameSet(dbFns, new Set([...dbC, 'tx']), 'mcp.db functions');
});

test('every mcp.* a script can use is annotated, and nothing else', opts, () => {
  const runtime = new Set([...MCP.matchAll(/^(?:function M\.(\w+)\(|M\.(\w+) = )/gm)].map((m) => m[1] || m[2]).filter((n) => !n.startsWith('_')));
  const documented = new Set([...DLUA.matchAll(/^(?:function mcp\.(\w+)\(|mcp\.(\w+) = )/gm)].map((m) => m[1] || m[2]));
  sameSet(documented, runtime, 'mcp.* functions and fields');
  // the sub-tables' functions too
  for (const [sub, fns] of [['json', ['encode', 'decode']], ['base64', ['encode', 'decode']], ['path', ['join', 'app']]]) {
    for (const f of fns) assert.match(DLUA, new RegExp(`^function mcp\\.${sub}\\.${f}\\(`, 'm'), `mcp.${sub}.${f}`);
  }
});

test('the callbacks take their inputs first and ctx last', opts, () => {
  assert.match(DLUA, /---@field handler fun\(args: table, ctx: mcp\.Context\)/);
  assert.match(DLUA, /---@field read\? fun\(uri: string, ctx: mcp\.Context\)/);
  assert.match(DLUA, /---@field read fun\(vars: table<string, string>, ctx: mcp\.Context\)/);
  assert.match(DLUA, /---@field get fun\(args: table<string, string>, ctx: mcp\.Context\)/);
  assert.match(DLUA, /fun\(value: string, args: table<string, string>, ctx: mcp\.Context\): string\[\]/);
  assert.match(DLUA, /^---@meta mcp$/m, 'require "mcp" resolves to this file');
  assert.match(DLUA, /\nreturn mcp\n$/);
});

test('a deliberately wrong script: args = on mcp.tool is not a ToolDef field, and check reports its line', opts, async () => {
  assert.ok(!CLASSES.get('mcp.ToolDef').fields.has('args'), 'args is not a ToolDef field: the editor does not complete it');
  // LuaLS does not flag an unknown field in a table literal (LuaLS#3040): README must
  // not promise it does (issue 24 rough edge 8), and must say who flags it
  const readme = read('README.md');
  assert.doesNotMatch(readme, /flagged as you type/);
  assert.match(readme, /LuaLS#3040[^]*luamcp check`, at its line \(`unknown field 'args'`\)/);
  const dir = await tempApp({
    'scripts/wrong.lua': 'local mcp = require "mcp"\n\nmcp.tool {\n  name = "wrong",\n  args = { x = mcp.string() },\n  handler = function() return 1 end,\n}\n',
  });
  try {
    const r = await run(['check', dir]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /scripts\/wrong\.lua:3: mcp\.tool: unknown field 'args'/);
  } finally {
    await removeTemp(dir);
  }
});

// lua/mcp.test.d.lua (require "mcp.test" for luamcp test) against lua/test.lua: the
// same functions of the module, the client's methods, the fakes' declarations.
test('mcp.test.d.lua names exactly what lua/test.lua offers', () => {
  const dts = read('lua/mcp.test.d.lua');
  const code = read('lua/test.lua');
  assert.match(dts, /^---@meta mcp\.test$/m, 'require "mcp.test" resolves to it');
  const names = (re, text) => new Set([...text.matchAll(re)].map((m) => m[1]).filter((n) => !n.startsWith('_')));
  const fnRe = /^function (?:test|T)\.([\w.]+)\(/gm;
  const containers = ['http', 'exec', 'socket', 'store', 'redis', 'clock', 'db'];
  const ours = new Set([...names(fnRe, code), ...names(/^T\.(\w+) = /gm, code)].filter((n) => !containers.includes(n)));
  // members of the tables T.clock and T.store
  for (const [table, member] of [['clock', 'now'], ['clock', 'advance'], ['store', 'dump']]) {
    assert.match(code, new RegExp(`^T\\.${table} = \\{[^]*?^  ${member} = function`, 'm'), `lua/test.lua has T.${table}.${member}`);
    ours.add(`${table}.${member}`);
  }
  sameSet(names(fnRe, dts), ours, 'mcp.test functions');
  sameSet(names(/^function Client:(\w+)\(/gm, dts), names(/^function client_mt:(\w+)\(/gm, code), 'test.app() client methods');
  // the fakes the code declares are those the annotations name
  assert.match(code, /^function T\.http\.route\(/m);
  assert.match(code, /^function T\.exec\.route\(/m);
  assert.match(code, /^function T\.socket\.peer\(/m);
  assert.match(code, /^function T\.redis\.fake\(/m);
  assert.match(code, /T\.redis\.commands[^\n]* = [^\n]*state\.redis_commands/);
  assert.match(dts, /^  commands = \{\},$/m);
});
