// ship.test.mjs — shipping a folder as an app: luamcp new (scaffold -> check
// -> call -> serve with the SDK client), luamcp pack (the .mcpb validated by
// the official @anthropic-ai/mcpb CLI, unpacked by it and served from the
// unpacked folder to the SDK client) and pack --server-json (validated
// against the MCP Registry's published 2025-12-11 schema, vendored in
// tests/vendor with its source named in tests/vendor/README.md).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

import { REPO_ROOT, TEST_TIMEOUT, WAIT, removeTemp, run, withSdk } from './helpers.mjs';
// pack copies the shared libraries in too (about 10 MB to compress, with patchelf)
const pack = (args, opts = {}) => run(args, { limit: 4 * WAIT, ...opts });

const opts = { timeout: TEST_TIMEOUT };
const sh = promisify(execFile);
const MCPB = path.join(REPO_ROOT, 'tests', 'node_modules', '.bin', 'mcpb');
const SCHEMA_FILE = path.join(REPO_ROOT, 'tests', 'vendor', 'server.schema.2025-12-11.json');
const SCHEMA_SHA256 = '3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0';

function exits(r, code) {
  assert.equal(r.signal, null, `killed by ${r.signal}\n${r.stderr}`);
  assert.equal(r.code, code, `exit ${r.code}, expected ${code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`);
}

async function tmp() {
  return mkdtemp(path.join(tmpdir(), 'luamcp-ship-'));
}

test('luamcp new: a scaffold that checks, calls, lists, reads, prompts and serves', opts, async () => {
  const root = await tmp();
  const dir = path.join(root, 'My App');
  try {
    const made = await run(['new', dir]);
    exits(made, 0);
    assert.match(made.stdout, /made .*app\.lua, scripts\/hello\.lua, tests\/hello_test\.lua, README\.md, \.luarc\.json/);
    for (const f of ['app.lua', 'scripts/hello.lua', 'tests/hello_test.lua', 'README.md', '.luarc.json']) assert.ok(existsSync(path.join(dir, f)), f);
    assert.ok(!existsSync(path.join(dir, 'widgets')), 'no widgets without --widget');
    // the hints paste into a shell: the folder's space is quoted
    assert.match(made.stdout, new RegExp(`\n  \\S*luamcp test '${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'\n`));
    // and the scaffold's own test passes
    const tested = await run(['test', dir]);
    exits(tested, 0);
    assert.match(tested.stdout, /\n3 passed, 0 failed \(/);
    // .luarc.json points at a folder holding the annotations
    const rc = JSON.parse(readFileSync(path.join(dir, '.luarc.json'), 'utf8'));
    assert.equal(rc['runtime.version'], 'Lua 5.4');
    assert.equal(rc['workspace.library'].length, 1);
    assert.match(readFileSync(path.join(rc['workspace.library'][0], 'mcp.d.lua'), 'utf8'), /^---@meta mcp/);
    // the name comes from the folder
    assert.match(readFileSync(path.join(dir, 'app.lua'), 'utf8'), /name = "my-app"/);

    const check = await run(['check', dir]);
    exits(check, 0);
    assert.match(check.stdout, /ok — 1 tools, 1 resources, 0 templates, 1 prompts, 0 widgets/);
    assert.equal(check.stderr, '', 'no warnings');
    const call = await run(['call', dir, 'greet', '{"name":"Ada"}']);
    exits(call, 0);
    assert.deepEqual(JSON.parse(call.stdout), { content: [{ type: 'text', text: 'Hello, Ada!' }] });
    const list = await run(['list', dir]);
    exits(list, 0);
    assert.match(list.stdout, /^tools \(1\)\n {2}greet +Greet — Greets someone by name\.\n/);
    assert.match(list.stdout, /prompts \(1\)\n {2}welcome\(tone\?, who\)/);
    const read = await run(['read', dir, 'mcp://my-app/about']);
    exits(read, 0);
    assert.match(JSON.parse(read.stdout).contents[0].text, /^# my-app/);
    const prompt = await run(['prompt', dir, 'welcome', '{"who":"Ada","tone":"formal"}']);
    exits(prompt, 0);
    assert.equal(JSON.parse(prompt.stdout).messages[0].content.text, 'Write a formal welcome note for Ada.');

    await withSdk([dir], async ({ client }) => {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['greet']);
      const r = await client.callTool({ name: 'greet', arguments: { name: 'Grace' } });
      assert.equal(r.content[0].text, 'Hello, Grace!');
      assert.equal((await client.listPrompts()).prompts[0].name, 'welcome');
    });
  } finally {
    await removeTemp(root);
  }
});

test('luamcp new --auth: per-user notes behind scopes, tried as made-up callers', opts, async () => {
  const root = await tmp();
  const dir = path.join(root, 'notes');
  try {
    const made = await run(['new', '--auth', dir]);
    exits(made, 0);
    assert.match(made.stdout, /scripts\/notes\.lua/);
    assert.match(made.stdout, /luamcp call --as ada --scopes notes:read,notes:write/);
    assert.match(made.stdout, /migrations\/001_notes\.sql/);
    const check = await run(['check', dir]);
    exits(check, 0);
    assert.match(check.stderr, /items declare scopes \(notes:read notes:write\)/);
    const data = ['--data', path.join(root, 'data')]; // mcp.db's file: never the user's own folder
    const add = await run(['call', ...data, '--as', 'ada', '--scopes', 'notes:read,notes:write', dir, 'add_note', '{"text":"hi"}']);
    exits(add, 0);
    assert.equal(JSON.parse(add.stdout).content[0].text, '1 note(s)');
    const again = await run(['call', ...data, '--as', 'ada', '--scopes', 'notes:read', dir, 'list_notes']);
    exits(again, 0);
    assert.equal(JSON.parse(again.stdout).content[0].text, 'hi', 'kept in the database (migrations/001_notes.sql)');
    const denied = await run(['call', ...data, '--as', 'ada', '--scopes', 'notes:read', dir, 'add_note', '{"text":"hi"}']);
    exits(denied, 1);
    assert.match(denied.stderr, /Insufficient scope: tool 'add_note' needs the scope notes:write/);
    // a caller that names no one (no --as; --scopes alone) shares no pile of notes: refused
    for (const as of [[], ['--scopes', 'notes:read']]) {
      const nobody = await run(['call', ...data, ...as, dir, 'list_notes']);
      exits(nobody, 1);
      assert.match(JSON.parse(nobody.stdout).content[0].text, /notes are kept per user and this request names no one/);
    }
    // the scaffold's own tests: two users' notes apart, no identity no notes, test.db
    const tests = await run(['test', dir]);
    exits(tests, 0);
    assert.match(tests.stdout, /tests\/notes_test\.lua\n {2}ok {4}two users' notes stay apart/);
    assert.match(tests.stdout, /ok {4}no identity, no notes/);
    assert.match(tests.stdout, /ok {4}each row is its owner's \(test\.db seeds and reads the table\)/);
    assert.match(readFileSync(path.join(dir, 'README.md'), 'utf8'), /docs\/auth\.md/);
  } finally {
    await removeTemp(root);
  }
});

test('luamcp new refuses a folder that is not empty, and writes nothing there', opts, async () => {
  const root = await tmp();
  try {
    await writeFile(path.join(root, 'keep.txt'), 'mine');
    const r = await run(['new', root]);
    exits(r, 1);
    assert.match(r.stderr, /not empty: nothing written/);
    assert.equal(readFileSync(path.join(root, 'keep.txt'), 'utf8'), 'mine');
    assert.ok(!existsSync(path.join(root, 'app.lua')));
    exits(await run(['new']), 2);
  } finally {
    await removeTemp(root);
  }
});

test('luamcp new --widget: a view with the helper, listed and served as an MCP Apps resource', opts, async () => {
  const root = await tmp();
  const dir = path.join(root, 'cards');
  try {
    exits(await run(['new', '--widget', dir]), 0);
    const html = readFileSync(path.join(dir, 'widgets', 'card.html'), 'utf8');
    assert.match(html, /<script src="luamcp:view\.js"><\/script>/);
    exits(await run(['check', dir]), 0);
    const list = await run(['list', dir]);
    assert.match(list.stdout, /greeting_card +\[view ui:\/\/cards\/card\.html\]/);
    assert.match(list.stdout, /widgets \(1\)\n {2}ui:\/\/cards\/card\.html/);
    const page = await run(['read', dir, 'ui://cards/card.html']);
    exits(page, 0);
    const item = JSON.parse(page.stdout).contents[0];
    assert.equal(item.mimeType, 'text/html;profile=mcp-app');
    assert.match(item.text, /window\.mcpView/, 'the view helper is put inline');
    const call = await run(['call', dir, 'greeting_card', '{"name":"Ada"}']);
    exits(call, 0);
    assert.deepEqual(JSON.parse(call.stdout).structuredContent, { greeting: 'Hello, Ada!', name: 'Ada' });
  } finally {
    await removeTemp(root);
  }
});

/** A scaffold with what pack reads from app.lua filled in. */
async function packableApp(root, extra = '') {
  const dir = path.join(root, 'weather');
  exits(await run(['new', dir]), 0);
  await writeFile(path.join(dir, 'app.lua'), `return {
  name = "weather", version = "1.2.3", title = "Weather",
  description = "Forecasts for a city, from a Lua app.",
  author = "Ada Lovelace <ada@example.com>", license = "MIT",
  user_config = {
    api_key = { type = "string", title = "API key", description = "The service's key", sensitive = true, env = "WEATHER_KEY" },
    units = { type = "string", title = "Units", description = "metric or imperial", default = "metric", required = false },
  },
  registry = { name = "io.github.ada/weather", url = "https://github.com/ada/weather/releases/download/v{version}/{file}",
               repository = "https://github.com/ada/weather" },${extra}
}
`);
  // a tool that shows the user_config value it got through the environment
  await writeFile(path.join(dir, 'scripts', 'env.lua'), `local mcp = require "mcp"
mcp.tool { name = "units", description = "The configured units.", handler = function() return os.getenv("UNITS") or "unset" end }
mcp.tool { name = "secret", description = "For views.", visibility = { "app" }, handler = function() return "s" end }
`);
  return dir;
}

test('luamcp pack: the .mcpb passes mcpb validate, unpacks, and serves the SDK client', opts, async () => {
  const root = await tmp();
  try {
    const dir = await packableApp(root);
    await mkdir(path.join(dir, 'migrations'));
    await writeFile(path.join(dir, 'migrations', '001_cities.sql'), 'CREATE TABLE cities(name TEXT);\n');
    // ... which apply, as check says, or nothing is packed
    await writeFile(path.join(dir, 'migrations', '002_broken.sql'), '\nCREATE TABL towns(name TEXT);\n');
    const broken = await pack(['pack', '--out', path.join(root, 'nope'), dir]);
    exits(broken, 1);
    assert.match(broken.stderr, /migrations\/002_broken\.sql:2: near "TABL": syntax error/);
    assert.ok(!existsSync(path.join(root, 'nope')));
    await unlink(path.join(dir, 'migrations', '002_broken.sql'));
    // --out is made with its parents, as mkdir -p would (issue 24 rough edge 3)...
    const out = path.join(root, 'dist', 'new');
    await writeFile(path.join(root, 'afile'), 'x');
    const notDir = await pack(['pack', '--out', path.join(root, 'afile', 'x'), dir]);
    exits(notDir, 1); // ...and a path through a file is named, not libzip's temp-file message
    assert.match(notDir.stderr, /pack: --out .*afile\/x: .*afile is not a folder/);
    assert.doesNotMatch(notDir.stderr, /temporary file/);
    const ok = await pack(['pack', '--out', out, dir]);
    exits(ok, 0);
    const file = path.join(out, 'weather-1.2.3.mcpb');
    assert.match(ok.stdout, /weather-1\.2\.3\.mcpb: \d+ files, \d+ bytes/);
    assert.equal(ok.stderr, '', 'author and description given: no warnings');

    const info = await sh(MCPB, ['info', file], { timeout: WAIT });
    assert.match(info.stdout, /weather/);
    const unpacked = path.join(root, 'unpacked');
    await sh(MCPB, ['unpack', file, unpacked], { timeout: WAIT });
    // as docs/shipping.md says (issue 24 rough edge 7): validate reads the unpacked manifest
    const v = await sh(MCPB, ['validate', path.join(unpacked, 'manifest.json')], { timeout: WAIT });
    assert.match(v.stdout, /Manifest schema validation passes/);

    const m = JSON.parse(await readFile(path.join(unpacked, 'manifest.json'), 'utf8'));
    assert.equal(m.manifest_version, '0.3');
    assert.equal(m.server.type, 'binary');
    assert.equal(m.server.entry_point, 'bin/luamcp');
    assert.equal(m.server.mcp_config.command, '${__dirname}/bin/luamcp');
    assert.deepEqual(m.server.mcp_config.args, ['serve', '${__dirname}/app']);
    assert.deepEqual(m.server.mcp_config.env, { WEATHER_KEY: '${user_config.api_key}', UNITS: '${user_config.units}' });
    assert.deepEqual(m.user_config.api_key, { type: 'string', title: 'API key', description: "The service's key", sensitive: true });
    assert.equal(m.user_config.units.default, 'metric');
    assert.deepEqual(m.compatibility.platforms, ['linux']);
    assert.equal(m.tools_generated, true);
    assert.deepEqual(m.tools.map((t) => t.name).sort(), ['greet', 'units'], 'app-only tools are not listed');
    assert.deepEqual(m.prompts.map((p) => [p.name, p.arguments]), [['welcome', ['tone', 'who']]]);
    assert.deepEqual(m.author, { name: 'Ada Lovelace', email: 'ada@example.com' });
    assert.equal(m.version, '1.2.3');
    assert.ok(statSync(path.join(unpacked, 'bin', 'luamcp')).mode & 0o100, 'the binary stays executable');
    assert.ok(existsSync(path.join(unpacked, 'app', 'scripts', 'hello.lua')));
    assert.ok(existsSync(path.join(unpacked, 'app', 'migrations', '001_cities.sql')), 'migrations/ is part of the app');
    assert.ok(!existsSync(path.join(unpacked, 'app', '.luarc.json')), 'dot files stay out');

    // run it as Claude Desktop would: ${__dirname} is the unpacked folder,
    // user_config values reach the app through mcp_config.env
    const sub = (s) => s.replaceAll('${__dirname}', unpacked);
    const transport = new StdioClientTransport({
      command: sub(m.server.mcp_config.command), args: m.server.mcp_config.args.map(sub),
      env: { ...process.env, UNITS: 'imperial' }, stderr: 'pipe',
    });
    const client = new Client({ name: 'bundle-test', version: '0' });
    await client.connect(transport, { timeout: WAIT });
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, ['greet', 'units']);
      assert.equal((await client.callTool({ name: 'greet', arguments: { name: 'Ada' } })).content[0].text, 'Hello, Ada!');
      assert.equal((await client.callTool({ name: 'units', arguments: {} })).content[0].text, 'imperial');
      assert.equal(client.getServerVersion().name, 'weather');
    } finally {
      await client.close();
    }
  } finally {
    await removeTemp(root);
  }
});

test('luamcp pack --server-json: valid against the registry schema 2025-12-11, with the bundle\'s sha256', opts, async () => {
  const schemaBytes = readFileSync(SCHEMA_FILE);
  assert.equal(createHash('sha256').update(schemaBytes).digest('hex'), SCHEMA_SHA256, 'the vendored schema is the published file');
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(JSON.parse(schemaBytes));
  const root = await tmp();
  try {
    const dir = await packableApp(root);
    const r = await pack(['pack', '--server-json', '--out', root, dir]);
    exits(r, 0);
    const file = path.join(root, 'weather-1.2.3.mcpb');
    const sha = createHash('sha256').update(readFileSync(file)).digest('hex');
    const doc = JSON.parse(readFileSync(path.join(root, 'server.json'), 'utf8'));
    assert.ok(validate(doc), JSON.stringify(validate.errors, null, 2));
    assert.equal(doc.$schema, 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json');
    assert.equal(doc.name, 'io.github.ada/weather');
    assert.equal(doc.version, '1.2.3');
    assert.deepEqual(doc.packages, [{
      registryType: 'mcpb', identifier: 'https://github.com/ada/weather/releases/download/v1.2.3/weather-1.2.3.mcpb',
      version: '1.2.3', fileSha256: sha, transport: { type: 'stdio' },
    }]);
    assert.deepEqual(doc.repository, { url: 'https://github.com/ada/weather', source: 'github' });
    // the schema would catch what pack refuses: a description past 100 characters
    assert.ok(!validate({ ...doc, description: 'x'.repeat(101) }));
    // --url overrides app.lua's
    const r2 = await pack(['pack', '--server-json', '--url', 'https://example.com/w.mcpb', '--out', root, dir]);
    exits(r2, 0);
    assert.equal(JSON.parse(readFileSync(path.join(root, 'server.json'), 'utf8')).packages[0].identifier, 'https://example.com/w.mcpb');
  } finally {
    await removeTemp(root);
  }
});

test('luamcp pack --server-json refuses what the registry would: long description, no reverse-DNS name', opts, async () => {
  const root = await tmp();
  try {
    const dir = await packableApp(root);
    const text = readFileSync(path.join(dir, 'app.lua'), 'utf8')
      .replace('Forecasts for a city, from a Lua app.', 'y'.repeat(101))
      .replace('io.github.ada/weather', 'weather');
    await writeFile(path.join(dir, 'app.lua'), text);
    const r = await pack(['pack', '--server-json', '--out', root, dir]);
    exits(r, 1);
    assert.match(r.stderr, /description has 101 characters; the registry takes at most 100/);
    assert.match(r.stderr, /registry\.name 'weather' must be reverse-DNS/);
    assert.ok(!existsSync(path.join(root, 'server.json')));
    // app.lua's new fields are checked like the others, at their line
    await writeFile(path.join(dir, 'app.lua'), 'return {\n  name = "w",\n  user_config = { k = { type = "colour", title = "t", description = "d" } },\n}\n');
    const bad = await run(['check', dir]);
    exits(bad, 1);
    assert.match(bad.stderr, /app\.lua:3: app\.lua's user_config\.k\.type must be one of boolean, directory, file, number, string, got colour/);
  } finally {
    await removeTemp(root);
  }
});

test('luamcp pack packs nothing from outside the app folder: links out refused, link cycles packed once, names an unzip elsewhere would misread refused', opts, async () => {
  const root = await tmp();
  try {
    const dir = await packableApp(root);
    const out = path.join(root, 'dist');
    await sh('mkdir', ['-p', out, path.join(dir, 'lib', 'sub')]);
    await writeFile(path.join(dir, 'lib', 'sub', 'kept.txt'), 'kept\n');
    // cycles: three links back to folders already packed
    for (const [link, to] of [['lib/up', '.'], ['lib/sub/root', '..'], ['lib/sub/self', '.']]) await symlink(to, path.join(dir, link));
    const cyc = await pack(['pack', '--out', out, dir], { limit: WAIT });
    exits(cyc, 0);
    const listing = await sh('python3', ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))',
      path.join(out, 'weather-1.2.3.mcpb')]);
    assert.equal(listing.stdout.split('\n').filter((l) => l.endsWith('kept.txt')).length, 1, listing.stdout);
    // a link out of the folder: refused, its target never read
    await symlink('/etc/passwd', path.join(dir, 'lib', 'secret'));
    const out1 = await pack(['pack', '--out', out, dir]);
    exits(out1, 1);
    assert.match(out1.stderr, /lib\/secret: leads out of the app folder \(to \/etc\/passwd\): not packed/);
    await unlink(path.join(dir, 'lib', 'secret'));
    // a Windows separator in a name: a\..\..\evil.txt would land outside the bundle there
    await writeFile(path.join(dir, 'lib', 'a\\..\\..\\evil.txt'), 'x');
    const out2 = await pack(['pack', '--out', out, dir]);
    exits(out2, 1);
    assert.match(out2.stderr, /a name an unzip elsewhere would not take as one file name/);
  } finally {
    await removeTemp(root);
  }
});

// issue 31, item 8: an installation's data never ships — data/ (where
// scripts write; mcp.db's files when --data points inside the app) goes in
// empty, database files anywhere are left out, and pack says what it left
test('luamcp pack never bundles the data folder or a database file, and says what it left out', opts, async () => {
  const root = await tmp();
  try {
    const dir = await packableApp(root);
    const out = path.join(root, 'dist');
    await sh('mkdir', ['-p', out, path.join(dir, 'data', 'cache'), path.join(dir, 'lib')]);
    await writeFile(path.join(dir, 'data', 'notes.txt'), 'a user\'s notes\n');
    await writeFile(path.join(dir, 'data', 'cache', 'page.html'), 'x');
    for (const f of ['db.sqlite', 'db.sqlite-wal', 'db.sqlite-shm', 'db.sqlite.lock', 'db.sqlite.before-restore']) await writeFile(path.join(dir, 'data', f), 'x');
    for (const f of ['lib/cities.sqlite3', 'lib/cities.sqlite3-journal', 'scripts/state.db', 'scripts/state.db-wal', 'lib/old.db3']) await writeFile(path.join(dir, f), 'x');
    await writeFile(path.join(dir, 'lib', 'db.lua'), 'return {}\n'); // a module named like one: packed
    const r = await pack(['pack', '--out', out, dir], { limit: WAIT });
    exits(r, 0);
    const names = (await sh('python3', ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))',
      path.join(out, 'weather-1.2.3.mcpb')])).stdout.split('\n').filter(Boolean);
    assert.deepEqual(names.filter((n) => n.startsWith('app/data')), ['app/data/'], `data/ packed with files: ${names}`);
    assert.deepEqual(names.filter((n) => /\.(sqlite|db)/.test(n)), [], `a database file packed: ${names}`);
    assert.ok(names.includes('app/lib/db.lua') && names.includes('app/scripts/hello.lua'), names.join(' '));
    const said = r.stderr.split('\n').filter((l) => l.startsWith('luamcp: pack: left out ')).map((l) => l.split(' ')[4]).sort();
    assert.deepEqual(said, ['data/', 'lib/cities.sqlite3', 'lib/cities.sqlite3-journal', 'lib/old.db3', 'scripts/state.db', 'scripts/state.db-wal'], r.stderr);
    // the bundle's app can still write in data/ (the folder is there)
    const unpacked = path.join(root, 'unpacked');
    await sh('python3', ['-c', 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])', path.join(out, 'weather-1.2.3.mcpb'), unpacked]);
    assert.ok(statSync(path.join(unpacked, 'app', 'data')).isDirectory());
  } finally {
    await removeTemp(root);
  }
});
