// cli.test.mjs — the luamcp command line: help, version, check, call, and
// their exit codes (0 ok, 1 a problem with the app or an isError result,
// 2 a usage error).
import assert from 'node:assert/strict';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { EXAMPLE_APP, FEATURES_APP, PAGED_APP, REPO_ROOT, TEST_TIMEOUT, removeTemp, run, tempApp } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };

/** Expect a clean exit with this code (a signal or a sanitizer's code fails). */
function exits(r, code) {
  assert.equal(r.signal, null, `killed by ${r.signal}\n${r.stderr}`);
  assert.equal(r.code, code, `exit ${r.code}, expected ${code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`);
}

test('luamcp --help: exit 0, usage on stdout naming serve, call and check', opts, async () => {
  const r = await run(['--help']);
  exits(r, 0);
  for (const cmd of ['serve', 'call', 'check']) assert.match(r.stdout, new RegExp(`luamcp ${cmd}\\b`));
  assert.match(r.stdout, /--sandbox/);
  assert.match(r.stdout, /--timeout/);
  assert.match(r.stdout, /--memory-limit/);
  assert.match(r.stdout, /--page-size/);
  // issue 31, item 8: the scaffold with OAuth is found from the top-level help
  assert.match(r.stdout, /luamcp new \[--widget\] \[--auth\] DIR/);
  assert.match(r.stdout, /--auth: per-user data behind OAuth/);
});

test("docs/cli.md's command-line block is the --help text: its usage lines, then every option", opts, async () => {
  const r = await run(['--help']);
  exits(r, 0);
  const help = r.stdout;
  const doc = readFileSync(path.join(REPO_ROOT, 'docs', 'cli.md'), 'utf8');
  const block = doc.match(/\n## Command line\n\n```\n([\s\S]*?)```\n/)?.[1];
  assert.ok(block, "docs/cli.md has a ## Command line section with a ``` block");
  const usage = help.match(/\nUsage:\n([\s\S]*?)\n\n/)[1].split('\n').map((l) => l.replace(/^ {2}/, '')).join('\n');
  const options = help.slice(help.indexOf('\nOptions:\n') + 1, help.lastIndexOf('\n\nIn serve mode'));
  assert.equal(block, `${usage}\n\n${options}\n`);
});

// issue 31, item 8: new --help named a widgets/hello.html that --widget never made
test('new --help names every file luamcp new --widget --auth makes; its README agrees with README.md about LuaLS', opts, async () => {
  const help = (await run(['new', '--help'])).stdout.replace(/\s+/g, ' ');
  const dir = path.join(tmpdir(), `luamcp-new-help-${process.pid}`);
  try {
    const made = await run(['new', '--widget', '--auth', dir]);
    const files = made.stdout.match(/^made [^:]+: (.*)$/m)[1].split(', ');
    assert.ok(files.length >= 10, made.stdout);
    for (const f of files) assert.ok(help.includes(f === 'README.md' ? 'README' : f), `new --help does not name ${f}:\n${help}`);
    // its README says of LuaLS what README.md says: a misspelt field in a table literal is check's to find
    const readme = readFileSync(path.join(dir, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    assert.match(readme, /does not flag a misspelt field in a table literal/);
    assert.match(readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' '), /does not flag a misspelt field in a table literal/);
  } finally {
    await removeTemp(dir);
  }
});

test('luamcp --version: exit 0, prints the version', opts, async () => {
  const r = await run(['--version']);
  exits(r, 0);
  assert.match(r.stdout, /^luamcp \d+\.\d+\.\d+/);
});

test('an unknown command or option: exit 2 with a hint on stderr', opts, async () => {
  const cmd = await run(['frobnicate']);
  exits(cmd, 2);
  assert.match(cmd.stderr, /frobnicate/);
  assert.equal(cmd.stdout, '');
  const opt = await run(['check', '--no-such-option', EXAMPLE_APP]);
  exits(opt, 2);
  assert.match(opt.stderr, /--no-such-option/);
});

// Issue 33, items 5 and 11: authorization options that cannot work are usage
// errors (exit 2) before anything is loaded or served, and a URL is parsed,
// not matched by prefix: "http://127.0.0.1.evil.example" is not loopback,
// "http://localhost@evil.example" names evil.example (userinfo is refused).
test('bad authorization options: exit 2 before serving; URLs parsed (loopback host, no userinfo)', opts, async () => {
  const serve = (...args) => run(['serve', '--http', '127.0.0.1:0', ...args, EXAMPLE_APP]);
  const secret = path.join(tmpdir(), `luamcp-cli-secret-${process.pid}`);
  writeFileSync(secret, 's3cret\n', { mode: 0o600 });
  const cases = [
    [['--token', 'x', '--auth-resource', 'http://127.0.0.1:1/mcp', '--auth-issuer', 'http://127.0.0.1:2'], /exclude each other/],
    [['--auth-resource', 'http://example.com/mcp', '--auth-issuer', 'https://as.example'], /--auth-resource http:\/\/example\.com\/mcp: an absolute https URL/],
    [['--auth-resource', 'https://mcp.example/mcp'], /needs --auth-issuer/],
    [['--auth-resource', 'http://127.0.0.1.evil.example/mcp', '--auth-issuer', 'https://as.example'], /--auth-resource/],
    [['--auth-resource', 'https://mcp.example/mcp', '--auth-issuer', 'http://localhost@evil.example'], /--auth-issuer/],
    [['--auth-resource', 'https://mcp.example/mcp', '--auth-issuer', 'http://[::1]@evil.example'], /--auth-issuer/],
    [['--auth-resource', 'https://mcp.example/mcp', '--auth-issuer', 'https://as.example', '--auth-client-id', 'c',
      '--auth-client-secret-file', secret, '--auth-introspect', 'http://localhost:1@127.0.0.2:9/introspect'], /--auth-introspect/],
  ];
  for (const [args, why] of cases) {
    const r = await serve(...args);
    exits(r, 2);
    assert.match(r.stderr, why, args.join(' '));
    assert.doesNotMatch(r.stderr, /serving|listening/, args.join(' '));
  }
  unlinkSync(secret);
  // loopback written other ways is still loopback: these start (and are stopped by check's fetch failing: exit 1, not 2)
  for (const host of ['http://127.0.0.1:9', 'http://localhost:9', 'http://[::1]:9', 'http://127.1.2.3:9']) {
    const r = await run(['check', '--auth-resource', 'https://mcp.example/mcp', '--auth-issuer', host, EXAMPLE_APP]);
    assert.notEqual(r.code, 2, `${host}: ${r.stderr}`);
  }
});

test('luamcp check: the example app and the test apps are fine (exit 0)', opts, async () => {
  const example = await run(['check', '.']);
  exits(example, 0);
  assert.match(example.stdout, /ok/);
  assert.match(example.stdout, /2 tools, 1 resources, 1 templates, 1 prompts, 1 widgets/);
  for (const dir of [FEATURES_APP, PAGED_APP]) exits(await run(['check', dir]), 0);
});

// Each broken app: its one script, and the file:line the report must name.
const broken = {
  'a syntax error': {
    file: 'syntax.lua',
    line: 7,
    text: 'local mcp = require "mcp"\n\nmcp.tool {\n  name = "unfinished",\n  handler = function() return 1 end\n\n',
    message: /'}' expected/,
  },
  'a duplicate tool name': {
    file: 'dupes.lua',
    line: 7,
    text:
      'local mcp = require "mcp"\n\nmcp.tool { name = "twice", handler = function() return 1 end }\n\n' +
      '-- the same name again\n\nmcp.tool { name = "twice", handler = function() return 2 end }\n',
    message: /duplicate tool 'twice'.*dupes\.lua:3/,
  },
  'a missing handler': {
    file: 'nohandler.lua',
    line: 4,
    text: 'local mcp = require "mcp"\n\n-- a tool without a handler\nmcp.tool {\n  name = "lazy",\n  description = "forgot its handler",\n}\n',
    message: /handler/,
  },
  'a bad schema option (min = "x")': {
    file: 'badmin.lua',
    line: 3,
    text: 'local mcp = require "mcp"\n\nmcp.tool {\n  name = "badmin",\n  input = { n = mcp.number { min = "x" } },\n  handler = function() return 1 end,\n}\n',
    message: /minimum/,
  },
  'a resource whose uri is not a URI': {
    file: 'baduri.lua',
    line: 2,
    text: 'local mcp = require "mcp"\nmcp.resource { uri = "not a uri", read = function() return "x" end }\n',
    message: /uri 'not a uri' is not a URI: it needs a scheme/,
  },
  'a template whose uri has no scheme': {
    file: 'badtemplate.lua',
    line: 2,
    text: 'local mcp = require "mcp"\nmcp.template { uri = "items/{id}", read = function() return "x" end }\n',
    message: /uri 'items\/\{id\}' is not a URI/,
  },
  'a bad raw schema type ("strin")': {
    file: 'badtype.lua',
    line: 3,
    text: 'local mcp = require "mcp"\n\nmcp.tool {\n  name = "badtype",\n  input = { s = { type = "strin" } },\n  handler = function() return 1 end,\n}\n',
    message: /strin/,
  },
};

for (const [what, c] of Object.entries(broken)) {
  test(`luamcp check: ${what} -> exit 1, stderr names scripts/${c.file}:${c.line}`, opts, async () => {
    const dir = await tempApp({ [`scripts/${c.file}`]: c.text, 'scripts/fine.lua': 'local mcp = require "mcp"\nmcp.tool { name = "fine", handler = function() return "ok" end }\n' });
    try {
      const r = await run(['check', dir]);
      exits(r, 1);
      assert.ok(r.stderr.includes(`scripts/${c.file}:${c.line}:`), `stderr should name scripts/${c.file}:${c.line}:\n${r.stderr}`);
      assert.match(r.stderr, c.message);
      assert.doesNotMatch(r.stdout, /ok/);
      // serve refuses the app the same way
      const s = await run(['serve', dir]);
      exits(s, 1);
      assert.ok(s.stderr.includes(`scripts/${c.file}:${c.line}:`), s.stderr);
      assert.equal(s.stdout, '', 'nothing on the protocol stream');
    } finally {
      await removeTemp(dir);
    }
  });
}

// issue 24 rough edge 11: check counts as list does, says what a model would miss,
// and an app.lua that returns nothing usable is an error, not "luamcp-app 0.0.0"
test('luamcp check: widgets apart from resources, a tool without a description warned of', opts, async () => {
  const widgets = await run(['check', path.join(REPO_ROOT, 'tests', 'apps', 'widgets')]);
  exits(widgets, 0);
  assert.match(widgets.stdout, /ok — 5 tools, 0 resources, 0 templates, 0 prompts, 3 widgets/);
  const dir = await tempApp({ 'scripts/t.lua': 'local mcp = require "mcp"\nmcp.tool { name = "bare", handler = function() return 1 end }\n' +
    'mcp.tool { name = "said", description = "Says.", handler = function() return 1 end }\n' });
  try {
    const r = await run(['check', dir]);
    exits(r, 0);
    assert.match(r.stderr, /scripts\/t\.lua:2: warning: tool 'bare' has no description: a model sees only its name/);
    assert.doesNotMatch(r.stderr, /'said'/);
  } finally {
    await removeTemp(dir);
  }
});

test('app.lua that returns nothing (a local table) or not a table: a load error, globals still fine', opts, async () => {
  const cases = [
    ['local app = { name = "weather", version = "1.0.0" }\n', 1, /app\.lua: returns nothing and sets no field: end it with return \{/],
    ['return "weather"\n', 1, /app\.lua: returned a string; return a table/],
    ['name = "weather"\nversion = "1.0.0"\n', 0, /^$/],
  ];
  for (const [appLua, code, re] of cases) {
    const dir = await tempApp({ 'app.lua': appLua, 'scripts/t.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", description = "T.", handler = function() return 1 end }\n' });
    try {
      const r = await run(['check', dir]);
      exits(r, code);
      assert.match(r.stderr, re, appLua);
      if (code === 0) assert.match((await run(['list', dir])).stdout, /tools \(1\)/);
    } finally {
      await removeTemp(dir);
    }
  }
});

test('luamcp check: every failing script is reported, not only the first', opts, async () => {
  const dir = await tempApp({
    'scripts/a.lua': 'local mcp = require "mcp"\nmcp.tool { name = "a" }\n',
    'scripts/b.lua': 'this is not lua\n',
  });
  try {
    const r = await run(['check', dir]);
    exits(r, 1);
    assert.ok(r.stderr.includes('scripts/a.lua:2:'), r.stderr);
    assert.ok(r.stderr.includes('scripts/b.lua:1:'), r.stderr);
  } finally {
    await removeTemp(dir);
  }
});

test('luamcp call: suggest_gifts prints the result JSON with structuredContent (exit 0)', opts, async () => {
  const r = await run(['call', '.', 'suggest_gifts', '{"occasion":"birthday","budget":50}']);
  exits(r, 0);
  const result = JSON.parse(r.stdout);
  assert.notEqual(result.isError, true);
  assert.deepEqual(result.structuredContent.gifts.map((g) => g.id).sort(), ['catan', 'dice', 'tea']);
  assert.equal(result.content[0].type, 'text');
  assert.match(result.content[0].text, /3 gift ideas/);
});

test('luamcp call: nothing fits budget 1 -> isError result, exit 1', opts, async () => {
  const r = await run(['call', '.', 'suggest_gifts', '{"occasion":"birthday","budget":1}']);
  exits(r, 1);
  const result = JSON.parse(r.stdout);
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /No birthday gifts fit/);
});

test('luamcp call: invalid JSON arguments -> exit 2', opts, async () => {
  const r = await run(['call', '.', 'suggest_gifts', '{"occasion":"birthday",']);
  exits(r, 2);
  assert.match(r.stderr, /JSON/);
  assert.equal(r.stdout, '');
});

test('luamcp call: an unknown tool -> exit 1 with the error on stderr', opts, async () => {
  const r = await run(['call', '.', 'no_such_tool', '{}']);
  exits(r, 1);
  assert.match(r.stderr, /no_such_tool/);
});

test('luamcp call: a tool with no arguments, and a Lua error naming file:line', opts, async () => {
  const ok = await run(['call', FEATURES_APP, 'no_params']);
  exits(ok, 0);
  assert.deepEqual(JSON.parse(ok.stdout), { content: [{ type: 'text', text: 'no params needed' }] });
  const bad = await run(['call', FEATURES_APP, 'broken', '{}']);
  exits(bad, 1);
  assert.equal(JSON.parse(bad.stdout).isError, true);
  assert.match(JSON.parse(bad.stdout).content[0].text, /scripts\/broken\.lua:7:/);
});

test('--timeout also stops a busy loop inside a coroutine the handler made', opts, async () => {
  const dir = await tempApp({
    'scripts/co.lua': [
      'local mcp = require "mcp"',
      'mcp.tool { name = "spin", description = "spins in a coroutine",',
      '  handler = function()',
      '    local f = coroutine.wrap(function() while true do end end)',
      '    f()',
      '    return "done"',
      '  end }',
    ].join('\n'),
  });
  try {
    const t0 = Date.now();
    const r = await run(['call', '--timeout', '1', dir, 'spin', '{}']);
    exits(r, 1);
    assert.match(JSON.parse(r.stdout).content[0].text, /timed out after 1 s/);
    assert.ok(Date.now() - t0 < 10_000, 'stopped at the timeout, not after');
  } finally {
    await removeTemp(dir);
  }
});

// {====== the commands that reach every method (core/cli/cli_client.c), and help

const COMMANDS = ['serve', 'call', 'read', 'prompt', 'list', 'check', 'new', 'pack', 'test', 'help'];
const CONFORMANCE_APP = path.join(REPO_ROOT, 'tests', 'conformance', 'app');

test('luamcp help COMMAND and COMMAND --help: each command\'s own usage, exit 0', opts, async () => {
  const all = await run(['--help']);
  for (const cmd of COMMANDS) {
    assert.match(all.stdout, new RegExp(`\\n  luamcp ${cmd}\\b`), `--help lists ${cmd}`);
    const h = await run(['help', cmd]);
    exits(h, 0);
    assert.match(h.stdout, new RegExp(`^Usage: luamcp ${cmd}\\b`));
    if (cmd !== 'help') assert.match(h.stdout, /Exit status: 0/, `${cmd} documents its exit codes`);
    const dash = await run([cmd, '--help']);
    exits(dash, 0);
    assert.equal(dash.stdout, h.stdout);
  }
  const serve = await run(['serve', '--http', '127.0.0.1:1', '--help']);
  exits(serve, 0);
  assert.match(serve.stdout, /^Usage: luamcp serve/);
  exits(await run(['help', 'frobnicate']), 2);
  assert.match(all.stdout, /\nExit status:\n {2}0 .*\n {2}1 .*\n[\s\S]* {2}2 {2}a usage error/);
});

test('luamcp list: the example app at a glance', opts, async () => {
  const r = await run(['list', '.']);
  exits(r, 0);
  assert.match(r.stdout, /^tools \(2\)\n/);
  assert.match(r.stdout, /\n {2}suggest_gifts +\[view ui:\/\/gifts\/board\.html\] Gift ideas/);
  assert.match(r.stdout, /\n {2}shortlist_gift +\[app only\]/);
  assert.match(r.stdout, /\nresources \(1\)\n {2}mcp:\/\/gift-server\/resources\/gift_catalog \(application\/json\)/);
  assert.match(r.stdout, /\ntemplates \(1\)\n {2}mcp:\/\/gift-server\/gifts\/\{id\} gift/);
  assert.match(r.stdout, /\nprompts \(1\)\n {2}gift_congrats_style\(tone\?\)/);
  assert.match(r.stdout, /\nwidgets \(1\)\n {2}ui:\/\/gifts\/board\.html/);
  exits(await run(['list']), 2);
});

test('luamcp read: a resource, a template match, a widget; an unknown URI is exit 1', opts, async () => {
  const r = await run(['read', '.', 'mcp://gift-server/resources/gift_catalog']);
  exits(r, 0);
  const catalog = JSON.parse(JSON.parse(r.stdout).contents[0].text);
  assert.ok(catalog.some((g) => g.id === 'catan'));
  const t = await run(['read', '.', 'mcp://gift-server/gifts/tea']);
  exits(t, 0);
  assert.equal(JSON.parse(t.stdout).contents[0].uri, 'mcp://gift-server/gifts/tea');
  const w = await run(['read', '.', 'ui://gifts/board.html']);
  exits(w, 0);
  assert.equal(JSON.parse(w.stdout).contents[0].mimeType, 'text/html;profile=mcp-app');
  const none = await run(['read', '.', 'mcp://gift-server/nothing']);
  exits(none, 1);
  assert.match(none.stderr, /-32002/);
  assert.equal(none.stdout, '');
});

test('luamcp prompt: with and without arguments; a bad argument list is exit 2', opts, async () => {
  const r = await run(['prompt', '.', 'gift_congrats_style', '{"tone":"formal"}']);
  exits(r, 0);
  assert.match(JSON.parse(r.stdout).messages[0].content.text, /formal/);
  exits(await run(['prompt', '.', 'gift_congrats_style']), 0);
  const none = await run(['prompt', '.', 'no_such_prompt']);
  exits(none, 1);
  assert.match(none.stderr, /no_such_prompt/);
  exits(await run(['prompt', '.', 'gift_congrats_style', '[1]']), 2);
});

test('luamcp call --as-app reaches an app-only tool, which a plain call may not', opts, async () => {
  const plain = await run(['call', '.', 'shortlist_gift', '{"id":"tea","on":true}']);
  exits(plain, 1);
  assert.match(plain.stderr, /only callable from an app view/);
  const app = await run(['call', '--as-app', '.', 'shortlist_gift', '{"id":"tea","on":true}']);
  exits(app, 0);
  assert.deepEqual(JSON.parse(app.stdout).structuredContent, { shortlist: ['tea'] });
  exits(await run(['read', '--as-app', '.', 'ui://gifts/board.html']), 2);
});

test('luamcp call --answer-elicit / --answer-sample answer the tools that ask (conformance app)', opts, async () => {
  const e = await run(['call', '--answer-elicit', '{"name":"Ada"}', CONFORMANCE_APP, 'test_input_required_result_multi_round']);
  exits(e, 0);
  const er = JSON.parse(e.stdout);
  assert.equal(er.resultType, 'complete');
  assert.match(er.content[0].text, /Multi-round complete for Ada/);
  const s = await run(['call', '--answer-sample', 'a hint', CONFORMANCE_APP, 'test_input_required_result_sampling']);
  exits(s, 0);
  assert.equal(JSON.parse(s.stdout).content[0].text, 'Sampling result: a hint');
  // a question no option answers: the server says which capability is missing
  const roots = await run(['call', '--answer-sample', 'x', CONFORMANCE_APP, 'test_input_required_result_list_roots']);
  exits(roots, 1);
  assert.match(roots.stderr, /roots/);
  // without an answer option, the tool that asks gets an error result
  const none = await run(['call', CONFORMANCE_APP, 'test_input_required_result_sampling']);
  exits(none, 1);
  assert.equal(JSON.parse(none.stdout).isError, true);
  exits(await run(['call', '--answer-elicit', 'not json', CONFORMANCE_APP, 'x']), 2);
  exits(await run(['list', '--answer-sample', 'x', CONFORMANCE_APP]), 2);
});

test('the conformance app through read and prompt', opts, async () => {
  const l = await run(['list', CONFORMANCE_APP]);
  exits(l, 0);
  assert.match(l.stdout, /test_simple_text/);
  const res = await run(['read', CONFORMANCE_APP, 'test://static-text']);
  exits(res, 0);
  assert.equal(JSON.parse(res.stdout).contents[0].uri, 'test://static-text');
  const p = await run(['prompt', CONFORMANCE_APP, 'test_simple_prompt']);
  exits(p, 0);
  assert.ok(JSON.parse(p.stdout).messages.length >= 1);
});

// }======
