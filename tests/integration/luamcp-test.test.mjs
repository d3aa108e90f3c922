// luamcp-test.test.mjs — `luamcp test`, the author's test runner (core/cli/cmd_test.c,
// lua/test.lua): the fixture app that uses every fake passes; a failing
// assertion names its FILE:LINE and shows each difference; a request no fake
// answers fails its test with the URL; JUnit XML that Ant's JUnit schema
// accepts; --watch runs again after a save; the exit codes. The example apps'
// own tests (the gift app, examples/weather, a fresh `luamcp new`) pass.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';

import { APPS, BIN, REPO_ROOT, TEST_TIMEOUT, WAIT, WRAP, removeTemp, run, tempApp, within } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const sh = promisify(execFile);
const WORKBENCH = path.join(APPS, 'workbench');
const XSD = path.join(REPO_ROOT, 'tests', 'vendor', 'JUnit.xsd');

function exits(r, code) {
  assert.equal(r.code, code, `exit ${r.code}, expected ${code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
}

test('the fixture app: every fake, both revisions, questions and identities: all pass, exit 0', opts, async () => {
  const r = await run(['test', WORKBENCH]);
  exits(r, 0);
  assert.match(r.stdout, /^tests\/client_test\.lua\n/);
  assert.match(r.stdout, /\ntests\/fakes_test\.lua\n/);
  assert.match(r.stdout, /\n {2}ok {4}mcp\.store: in memory, TTLs on the virtual clock \(\d+\.\d ms\)\n/);
  assert.match(r.stdout, /\n20 passed, 0 failed \(\d+ ms\)\n$/);
  assert.doesNotMatch(r.stdout, /FAIL/);
});

test('the example apps ship tests that pass: the gift app, examples/weather, examples/tickets', opts, async () => {
  for (const [dir, n] of [[REPO_ROOT, 5], [path.join(REPO_ROOT, 'examples', 'weather'), 5], [path.join(REPO_ROOT, 'examples', 'tickets'), 4]]) {
    const r = await run(['test', dir]);
    exits(r, 0);
    assert.match(r.stdout, new RegExp(`\\n${n} passed, 0 failed`), dir);
  }
});

// An app and tests that fail in each way a test can.
const SCRIPT = `local mcp = require "mcp"
mcp.tool { name = "fetch", description = "Fetches, and survives a failure.",
  handler = function()
    local ok, err = pcall(mcp.http.get, "https://api.example.com/items?page=2")
    return ok and "fetched" or ("caught: " .. tostring(err))
  end }
mcp.tool { name = "record", description = "A record.", handler = function() return { a = 1, list = { 1, 2 } } end }
`;
const FAILING = `local test = require "mcp.test"
local app = test.app()

test("a record that differs", function()
  local r = app:call("record")
  test.eq(r.structuredContent, { a = 2, list = { 1, 2, 3 }, b = true })
end)

test("a request no fake answers", function()
  test.eq(app:call("fetch").content[1].text:sub(1, 7), "caught:")
end)

test("an error in the test itself", function()
  local t = nil
  return t.field
end)

test("one that passes", function()
  test.eq(app:call("record").structuredContent.a, 1)
end)
`;

async function failingApp() {
  return tempApp({ 'scripts/x.lua': SCRIPT, 'tests/a_test.lua': FAILING, 'tests/b_test.lua': 'local x = = 1\n' });
}

test('failures: FILE:LINE of the assertion, each difference by path, the unmatched URL, exit 1', opts, async () => {
  const dir = await failingApp();
  try {
    const r = await run(['test', dir]);
    exits(r, 1);
    const out = r.stdout;
    assert.match(out, /\n {2}FAIL {2}a record that differs\n {8}tests\/a_test\.lua:6: values differ\n/);
    assert.match(out, /\n {10}\.a: got 1, expected 2\n {10}\.b: missing, expected true\n {10}\.list\[3\]: missing, expected 3\n/);
    // the handler caught the error, yet the test fails, naming the URL
    assert.match(out, /\n {2}FAIL {2}a request no fake answers\n {8}tests\/a_test\.lua:9: the outside world was reached without a fake\n {10}mcp\.http GET https:\/\/api\.example\.com\/items\?page=2: no test\.http\.route matches it\n/);
    assert.match(out, /\n {2}FAIL {2}an error in the test itself\n {8}tests\/a_test\.lua:15: attempt to index a nil value \(local 't'\)\n/);
    assert.match(out, /\n {2}ok {4}one that passes/);
    // a file that does not compile is a failure of its own, at its line
    assert.match(out, /\ntests\/b_test\.lua\n {2}FAIL {2}\(the file did not load\)\n {8}tests\/b_test\.lua:1: unexpected symbol near '='/);
    assert.match(out, /\n1 passed, 4 failed \(\d+ ms\)\n$/);
    assert.doesNotMatch(out, /(^|\s)test\.lua:\d+: in /m, 'no frame of luamcp\'s own test.lua in a traceback');

    // FILTER: only the tests whose name (or file) holds it; a file that does not
    // load is reported whatever the filter (its tests cannot be told apart)
    const filtered = await run(['test', dir, 'one that']);
    exits(filtered, 1);
    assert.match(filtered.stdout, /\n1 passed, 1 failed/);
    await unlink(path.join(dir, 'tests', 'b_test.lua'));
    const one = await run(['test', dir, 'one that']);
    exits(one, 0);
    assert.match(one.stdout, /\n1 passed, 0 failed/);
    const none = await run(['test', dir, 'no such test']);
    exits(none, 1);
    assert.match(none.stdout, /0 passed, 0 failed \(\d+ ms\)\nno test ran matching no such test\n/);
  } finally {
    await removeTemp(dir);
  }
});

// Found by review: each of these hung the runner, reached the network, or passed.
test('misuse fails its test, never hangs nor reaches the network', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': `local mcp = require "mcp"
mcp.tool { name = "fetch", description = "Fetches.", handler = function() return mcp.http.get("https://x.example/y").body end }
mcp.tool { name = "echo", description = "Echoes.", handler = function() return "e" end }
mcp.tool { name = "sock4", description = "tcp4.", handler = function()
  local s = mcp.socket.tcp4(); local ok, err = s:connect("127.0.0.1", 9); return tostring(ok) .. " " .. tostring(err) end }
mcp.tool { name = "ask", description = "Asks.", handler = function(_, ctx)
  return ctx:elicit { message = "?", schema = { n = mcp.string() } }.action end }
mcp.tool { name = "tasked", description = "A task.", task = "optional", handler = function(_, ctx) ctx:sleep(1) return "done" end }
`,
    'tests/m_test.lua': `local test = require "mcp.test"
local app = test.app()
test("nested", function()
  test.http.route("GET", "https://x.example/*", function() app:call("echo") return { body = "x" } end)
  app:call("fetch")
end)
test("tcp4 is faked", function() test.eq(app:call("sock4").content[1].text, "nil connection refused") end)
test("capabilities per request", function()
  local _, err = app:call("ask", {}, { capabilities = {}, answers = { elicit = { n = "x" } } })
  test.eq(err and err.code, -32021)
end)
test("a task handle comes back as it is", function()
  local r = app:call("tasked", {}, { capabilities = { extensions = { ["io.modelcontextprotocol/tasks"] = {} } } })
  test.eq(r.resultType, "task")
  test.ok(r.taskId)
end)
test("wrong types", function() test.http.route(5, "x", {}) end)
test("NaN clock", function() test.clock.advance(0/0) end)
`,
  });
  try {
    const r = await run(['test', dir]);
    exits(r, 1);
    assert.match(r.stdout, /FAIL {2}nested\n {8}tests\/m_test\.lua:3: a test\.app\(\) client is used from the test's own code, not from a fake or a handler/);
    assert.match(r.stdout, /FAIL {2}tcp4 is faked\n {8}tests\/m_test\.lua:7: the outside world was reached without a fake\n {10}mcp\.socket 127\.0\.0\.1:9: no test\.socket\.peer for it/);
    assert.match(r.stdout, /ok {4}capabilities per request /);
    assert.match(r.stdout, /ok {4}a task handle comes back as it is /);
    assert.match(r.stdout, /FAIL {2}wrong types\n {8}tests\/m_test\.lua:17: http\.route\(method or "\*", url pattern, response\): method and url are strings/);
    assert.match(r.stdout, /FAIL {2}NaN clock\n {8}tests\/m_test\.lua:18: clock\.advance needs seconds >= 0/);
  } finally {
    await removeTemp(dir);
  }
});

// issue 33, item 10: a test's own code had no memory cap (a runaway test took
// the machine); now 4 x --memory-limit, and the calls it makes their own
test('a test that allocates without end fails with not enough memory; the others run, calls keep their own limit', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': `local mcp = require "mcp"
mcp.tool { name = "big", description = "Grows.", handler = function()
  local t = {} for i = 1, 100000 do t[i] = ("y"):rep(200) .. i end return "grew" end }
mcp.tool { name = "echo", description = "Echoes.", handler = function() return "e" end }
`,
    'tests/mem_test.lua': `local test = require "mcp.test"
local app = test.app()
test("runaway", function()
  local t = {}
  for i = 1, 200000 do t[i] = ("x"):rep(1000) .. i end -- 200 MB: past 4 x 8 MB
end)
test("a call within a test keeps its own limit", function()
  collectgarbage() -- the runaway's strings: the limit counts the heap's growth
  local r = app:call("big")
  test.eq(r.isError, true)
end)
test("after it", function() test.eq(app:call("echo").content[1].text, "e") end)
`,
  });
  try {
    const r = await run(['test', '--memory-limit', '8', dir]);
    exits(r, 1);
    assert.match(r.stdout, /FAIL {2}runaway\n {8}.*not enough memory/);
    assert.match(r.stdout, /ok {4}a call within a test keeps its own limit /);
    assert.match(r.stdout, /ok {4}after it /);
  } finally {
    await removeTemp(dir);
  }
});

// issue 31, item 8: user_config reaches an app through the environment
test('test.env fakes os.getenv for the test it is called in; a bad one fails at its line', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': `local mcp = require "mcp"
mcp.tool { name = "key", description = "The API key.", handler = function() return tostring(os.getenv("LUAMCP_DOC_TEST_KEY")) end }
mcp.tool { name = "home", description = "HOME.", handler = function() return tostring(os.getenv("HOME") ~= nil) end }
`,
    'tests/env_test.lua': `local test = require "mcp.test"
local app = test.app()
test("set", function()
  test.env { LUAMCP_DOC_TEST_KEY = "k-123" }
  test.eq(app:call("key").content[1].text, "k-123")
  test.eq(app:call("home").content[1].text, "true")
end)
test("for that test only", function() test.eq(app:call("key").content[1].text, "nil") end)
test("unset", function()
  test.env { HOME = false }
  test.eq(app:call("home").content[1].text, "false")
end)
test("bad", function() test.env { N = 5 } end)
`,
  });
  try {
    const r = await run(["test", dir]);
    exits(r, 1);
    for (const name of ['set', 'for that test only', 'unset']) assert.match(r.stdout, new RegExp(`ok {4}${name} `));
    assert.match(r.stdout, /FAIL {2}bad\n {8}tests\/env_test\.lua:13: env\{ NAME = value \}: names and values are strings/);
  } finally {
    await removeTemp(dir);
  }
});

test('--junit FILE: what Ant\'s JUnit schema accepts (xmllint), with every result', opts, async () => {
  const xsd = await readFile(XSD);
  assert.equal(createHash('sha256').update(xsd).digest('hex'),
    '147ff89ef34a82f9a1b2951e7cad251b98c9a7a48a0e0c8e44937141791f57a8', 'tests/vendor/JUnit.xsd as vendored');
  const dir = await failingApp();
  try {
    const file = path.join(dir, 'junit.xml');
    const r = await run(['test', '--junit', file, dir]);
    exits(r, 1);
    const lint = await sh('xmllint', ['--noout', '--schema', XSD, file]).catch((e) => e);
    assert.equal(lint.code ?? 0, 0, `xmllint: ${lint.stderr}`);
    assert.match(lint.stderr, /validates/);
    const xml = await readFile(file, 'utf8');
    assert.match(xml, /<testsuite package="[^"]+" id="0" name="tests\/a_test\.lua" timestamp="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d" hostname="[^"]+" tests="4" failures="3" errors="0" time="[\d.]+">/);
    assert.match(xml, /<testcase name="a record that differs" classname="tests\/a_test\.lua" time="[\d.]+">\n\s+<failure type="assertion" message="tests\/a_test\.lua:6: values differ">/);
    assert.match(xml, /\.list\[3\]: missing, expected 3/);
    assert.match(xml, /<testcase name="one that passes" classname="tests\/a_test\.lua" time="[\d.]+"\/>/);
    // a passing run too, and the whole fixture
    const ok = await run(['test', '--junit', file, WORKBENCH]);
    exits(ok, 0);
    await sh('xmllint', ['--noout', '--schema', XSD, file]);
    assert.equal((await readFile(file, 'utf8')).match(/<testcase /g).length, 20);
  } finally {
    await removeTemp(dir);
  }
});

/** `luamcp test --watch dir`: its output so far (out()), until(n) runs have ended, stop(). */
function watch(dir) {
  const command = WRAP[0] || BIN;
  const child = spawn(command, [...WRAP.slice(1), ...(WRAP.length ? [BIN] : []), 'test', '--watch', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters = [];
  child.stdout.on('data', (d) => {
    out += d;
    for (const f of waiters.splice(0)) f();
  });
  const runs = () => out.split('watching ').length - 1;
  const until = (n, what) => within(new Promise((resolve) => {
    const check = () => (runs() >= n ? resolve() : waiters.push(check));
    check();
  }), WAIT, what);
  const stop = async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on('exit', resolve)));
  };
  return { out: () => out, until, stop };
}

test('--watch: a saved test file runs again (that file alone); a saved script runs them all', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': 'local mcp = require "mcp"\nmcp.tool { name = "v", description = "A value.", handler = function() return "1" end }\n',
    'tests/v_test.lua': 'local test = require "mcp.test"\ntest("v", function() test.eq(test.app():call("v").content[1].text, "1") end)\n',
    'tests/w_test.lua': 'local test = require "mcp.test"\ntest("w", function() test.ok(true) end)\n',
  });
  const w = watch(dir);
  const until = w.until;
  try {
    await until(1, 'the first run');
    assert.match(w.out(), /2 passed, 0 failed/);
    // an editor's save: a new file renamed over the old one
    const tmp = path.join(dir, 'tests', '.v_test.lua.swp');
    await writeFile(tmp, 'local test = require "mcp.test"\ntest("v", function() test.eq(test.app():call("v").content[1].text, "2") end)\n');
    await rename(tmp, path.join(dir, 'tests', 'v_test.lua'));
    await until(2, 'a run after the test was saved');
    const second = w.out().slice(w.out().indexOf('watching '));
    assert.match(second, /tests\/v_test\.lua\n {2}FAIL {2}v\n/);
    assert.doesNotMatch(second, /w_test/, 'only the saved test file ran');
    assert.match(second, /0 passed, 1 failed/);
    await writeFile(path.join(dir, 'scripts', 'x.lua'),
      'local mcp = require "mcp"\nmcp.tool { name = "v", description = "A value.", handler = function() return "2" end }\n');
    await until(3, 'a run after the script was saved');
    const third = w.out().slice(w.out().lastIndexOf('watching ', w.out().lastIndexOf('watching ') - 1));
    assert.match(third, /tests\/w_test\.lua/);
    assert.match(third, /2 passed, 0 failed/);
    // a migrations/ folder appearing (moved in whole), then a save inside it
    const made = path.join(dir, '.migrations.new');
    await mkdir(made);
    await writeFile(path.join(made, '001_t.sql'), 'CREATE TABL t(x);\n');
    await rename(made, path.join(dir, 'migrations'));
    await until(4, 'a run after migrations/ appeared');
    assert.match(w.out().slice(w.out().lastIndexOf('watching ', w.out().lastIndexOf('watching ') - 1)), /001_t\.sql:1: near "TABL": syntax error/);
    await writeFile(path.join(dir, 'migrations', '001_t.sql'), 'CREATE TABLE t(x);\n');
    await until(5, 'a run after the migration was saved');
    assert.match(w.out().slice(w.out().lastIndexOf('watching ', w.out().lastIndexOf('watching ') - 1)), /2 passed, 0 failed/);
  } finally {
    await w.stop();
    await removeTemp(dir);
  }
});

test('--watch: a save made while the tests run is seen, and a test file that is gone runs the rest', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': 'local mcp = require "mcp"\nmcp.tool { name = "v", description = "A value.", handler = function() return "1" end }\n',
    // a second of real work: the save below lands while it runs
    'tests/slow_test.lua': 'local test = require "mcp.test"\ntest("slow", function() local t = os.clock() while os.clock() - t < 1 do end end)\n',
    'tests/w_test.lua': 'local test = require "mcp.test"\ntest("w", function() test.ok(true) end)\n',
  });
  const w = watch(dir);
  const until = w.until;
  try {
    await delay(300); // the first run is in its slow test
    await writeFile(path.join(dir, 'tests', 'w_test.lua'), 'local test = require "mcp.test"\ntest("w2", function() test.ok(true) end)\n');
    await until(2, 'a second run for the save made during the first');
    assert.match(w.out().slice(w.out().indexOf('watching ')), /tests\/w_test\.lua\n {2}ok {4}w2 /);
    await unlink(path.join(dir, 'tests', 'w_test.lua'));
    await until(3, 'a run after a test file was deleted');
    const third = w.out().slice(w.out().lastIndexOf('watching ', w.out().lastIndexOf('watching ') - 1));
    assert.match(third, /tests\/slow_test\.lua\n {2}ok {4}slow /, 'the rest ran');
    assert.match(third, /\n1 passed, 0 failed/);
  } finally {
    await w.stop();
    await removeTemp(dir);
  }
});

test('exit codes: 2 for a usage error, 1 for an app that does not load or no tests', opts, async () => {
  exits(await run(['test', '--junit']), 2);
  exits(await run(['test', '--revision', '2024-01-01', WORKBENCH]), 2);
  exits(await run(['check', '--watch', WORKBENCH]), 2);
  exits(await run(['test', 'a', 'b', 'c']), 2);
  exits(await run(['test', '--test-timeout', '0', WORKBENCH]), 2);
  // a test that loops (even inside pcall) ends at --test-timeout, and the next one runs
  const loops = await tempApp({
    'scripts/x.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", description = "T.", handler = function() return "x" end }\n',
    'tests/l_test.lua': 'local test = require "mcp.test"\ntest("loops", function() while true do end end)\n' +
      'test("loops in pcall", function() while true do pcall(function() end) end end)\n' +
      'test("after", function() test.eq(test.app():call("t").content[1].text, "x") end)\n',
  });
  try {
    const l = await run(['test', '--test-timeout', '0.3', loops]);
    exits(l, 1);
    assert.match(l.stdout, /FAIL {2}loops\n {8}tests\/l_test\.lua:2: the test ran longer than 0\.3 s \(luamcp test --test-timeout\)\n/);
    assert.match(l.stdout, /FAIL {2}loops in pcall\n {8}tests\/l_test\.lua:3: the test ran longer than 0\.3 s/);
    assert.match(l.stdout, /\n {2}ok {4}after /);
    assert.match(l.stdout, /\n1 passed, 2 failed/);
  } finally {
    await removeTemp(loops);
  }
  const broken = await tempApp({ 'scripts/x.lua': 'this is not lua\n', 'tests/t_test.lua': 'require "mcp.test"("t", function() end)\n' });
  const empty = await tempApp({ 'scripts/x.lua': 'local mcp = require "mcp"\n' });
  try {
    const b = await run(['test', broken]);
    exits(b, 1);
    assert.match(b.stdout, /FAIL {2}\(the app did not load\)\n {8}(\/.*\/)?scripts\/x\.lua:1: syntax error near 'is'/);
    const e = await run(['test', empty]);
    exits(e, 1);
    assert.match(e.stdout, /no tests\/ folder/);
  } finally {
    await removeTemp(broken);
    await removeTemp(empty);
  }
});

test('a fresh luamcp new app: its scaffolded test passes on either revision', opts, async () => {
  const dir = await tempApp({});
  try {
    const app = path.join(dir, 'fresh');
    exits(await run(['new', app]), 0);
    for (const rev of ['2025-11-25', '2026-07-28']) {
      const r = await run(['test', '--revision', rev, app]);
      exits(r, 0);
      assert.match(r.stdout, /\n3 passed, 0 failed/);
    }
  } finally {
    await removeTemp(dir);
  }
});

// Issue 33, item 10: a test's name and message are the test's own text: an escape
// sequence in them reached the terminal (clearing it, recolouring the run).
test('names and messages with control bytes are shown escaped, never sent to the terminal as they are', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': 'local mcp = require "mcp"\nmcp.tool { name = "v", description = "A value.", handler = function() return "1" end }\n',
    'tests/esc_test.lua': 'local test = require "mcp.test"\ntest("clear\\27[2J", function() test.ok(true) end)\ntest("bell", function() error("ring\\7\\27[31m") end)\n',
  });
  try {
    const r = await run(['test', dir]);
    assert.equal(r.code, 1, r.stdout);
    assert.ok(!r.stdout.includes('\u001b') && !r.stdout.includes('\u0007'), JSON.stringify(r.stdout));
    assert.match(r.stdout, /ok {4}clear\\x1b\[2J/);
    assert.match(r.stdout, /ring\\x07\\x1b\[31m/);
  } finally {
    await removeTemp(dir);
  }
});

// Issue 33, item 10: --test-timeout counts time spent in C (a test that passed at
// 1.5 s of a 1 s limit fails now), and a __gc finalizer that loops (Lua runs it
// without hooks) ends the run with status 75, as serve ends a stall: never a hang.
test('--test-timeout: time in C fails the test; a looping __gc ends the run with status 75', opts, async () => {
  const dir = await tempApp({
    'scripts/x.lua': `local mcp = require "mcp"
mcp.tool { name = "v", description = "A value.", handler = function() return "1" end }
mcp.tool { name = "gc", description = "Loops in __gc.", handler = function()
  setmetatable({}, { __gc = function() while true do end end })
  collectgarbage()
  return "never"
end }
`,
    'tests/c_test.lua': 'local test = require "mcp.test"\ntest("in C", function() os.execute("sleep 1.5") end)\n',
  });
  try {
    const slow = await run(['test', '--test-timeout', '1', dir, 'c_test']);
    assert.equal(slow.code, 1, slow.stdout);
    assert.match(slow.stdout, /FAIL {2}in C\n {8}tests\/c_test\.lua:2: the test ran longer than 1(\.0)? s/);
    await writeFile(path.join(dir, 'tests/g_test.lua'), 'local test = require "mcp.test"\ntest("gc", function() test.app():call("gc") end)\n');
    const stuck = await run(['test', '--test-timeout', '1', dir, 'g_test'], { limit: 60000 });
    assert.equal(stuck.code, 75, stuck.stderr);
    assert.match(stuck.stderr, /a test of tests\/g_test\.lua has not returned 5 s past --test-timeout/);
  } finally {
    await removeTemp(dir);
  }
});

// Issue 29, item 8: test.db reaches the test file's own database (fresh,
// migrations applied) from the test's code: seed rows, read what a tool
// wrote; each file gets another; errors name the test's line.
test('test.db: seeds and reads the file\'s own database (migrations applied, fresh per file); errors at the test\'s line', opts, async () => {
  const tool = 'local mcp = require "mcp"\nmcp.tool { name = "add", description = "Adds an item.", input = { name = mcp.string() },\n'
    + '  handler = function(a) return tostring(mcp.db.exec("INSERT INTO items(name) VALUES (?)", a.name).last_id) end }\n'
    + 'mcp.tool { name = "names", description = "Every item.", handler = function()\n'
    + '  local out = {}\n  for _, r in ipairs(mcp.db.query("SELECT name FROM items ORDER BY id")) do out[#out + 1] = r.name end\n'
    + '  return table.concat(out, ",") end }\n';
  const a = `local test = require "mcp.test"
local mcp = require "mcp"
local app = test.app()
test("seed, call, read", function()
  test.eq(test.db.query("SELECT name FROM items"), {})
  local r = test.db.exec("INSERT INTO items(name, note) VALUES (:name, :note)", { name = "seeded", note = mcp.null })
  test.eq(r, { changes = 1, last_id = 1 })
  test.eq(app:call("add", { name = "called" }).content[1].text, "2")
  test.eq(app:call("names").content[1].text, "seeded,called")
  test.eq(test.db.one("SELECT name, note, 7 AS n, 1.5 AS f FROM items WHERE id = ?", 1), { name = "seeded", note = mcp.null, n = 7, f = 1.5 })
  test.eq(test.db.one("SELECT name FROM items WHERE id = ?", 99), nil)
  test.eq(test.db.exec("UPDATE items SET note = 'x'; UPDATE items SET note = 'y' WHERE id = 1").changes, 3)
end)
test("mistakes", function()
  test.raises(function() test.db.query("SELECT nme FROM items") end, "a_test%.lua:%d+: test%.db%.query: no such column: nme")
  test.raises(function() test.db.one("SELECT ?", {}) end, "parameter 1 has no name")
  test.raises(function() test.db.exec("SELECT ?", print) end, "parameter 1 is a function")
  test.raises(function() test.db.exec("SELECT ?") end, "has 1 parameter%(s%), 0 value%(s%) given")
end)
`;
  const b = `local test = require "mcp.test"
test("another file: a fresh database", function()
  test.eq(test.db.one("SELECT count(*) AS n FROM items").n, 0)
end)
`;
  const dir = await tempApp({
    'scripts/items.lua': tool,
    'migrations/001_items.sql': 'CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, note TEXT);\n',
    'tests/a_test.lua': a,
    'tests/b_test.lua': b,
  });
  try {
    const r = await run(['test', dir]);
    exits(r, 0);
    assert.match(r.stdout, /\n3 passed, 0 failed/);
  } finally {
    await removeTemp(dir);
  }
});
