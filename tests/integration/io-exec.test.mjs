// io-exec.test.mjs — mcp.exec (core/io/io_exec.c): child processes on the
// engine's loop. Concurrency (200 children at once while the server keeps
// answering), the result (output, code, signal, stdin, env, cwd, no shell,
// the output cap), and every way a wait ends early — the script's timeout=,
// the call's --timeout, a cancel, shutdown — leaving no process of the
// child's group and no zombie behind (checked in /proc).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { APPS, SCALE, TEST_TIMEOUT, ms, rawMember, removeTemp, tempApp, withRaw } from './helpers.mjs';
import { answerOf, post, rawInitialize, withHttp } from './http-helpers.mjs';

const IO_APP = path.join(APPS, 'io');
const opts = { timeout: TEST_TIMEOUT };

// {====== /proc

/** Every process as {pid, state, ppid, pgrp}. */
async function processes() {
  const out = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = await readFile(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // comm may hold spaces
    out.push({ pid: Number(name), state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]) });
  }
  return out;
}

/** Wait until pred(processes) holds; fail with what was left past the limit. */
async function until(pred, what, limit = ms(5000)) {
  const end = Date.now() + limit;
  for (;;) {
    const ps = await processes();
    if (pred(ps)) return;
    if (Date.now() > end) assert.fail(`${what}: ${JSON.stringify(ps.filter((p) => !pred([p])))}`);
    await delay(50);
  }
}

// alive members only: an orphaned grandchild's zombie is its new parent's
// (init's) to reap; zombies of the server itself are what noChildren finds
const groupGone = (pgid) => (ps) => !ps.some((p) => p.pgrp === pgid && p.state !== 'Z');
const noChildren = (ppid) => (ps) => !ps.some((p) => p.ppid === ppid);

/** The pid a child wrote into file (waits for it). */
async function pidIn(file, limit = ms(5000)) {
  const end = Date.now() + limit;
  for (;;) {
    try {
      const n = Number((await readFile(file, 'utf8')).trim());
      if (n > 0) return n;
    } catch {
      // not yet
    }
    if (Date.now() > end) assert.fail(`no pid in ${file}`);
    await delay(20);
  }
}

/** Descriptors of this process a child inherits (not close-on-exec): they
    reach the server, and through it its children, without being the server's. */
async function passedThrough() {
  const fds = [];
  for (const fd of await readdir('/proc/self/fd')) {
    if (Number(fd) < 3) continue;
    try {
      const flags = parseInt(/^flags:\s+(\d+)/m.exec(await readFile(`/proc/self/fdinfo/${fd}`, 'utf8'))[1], 8);
      if (!(flags & 0o2000000)) fds.push(Number(fd));
    } catch {
      // closed meanwhile
    }
  }
  return fds;
}

/** The child gets 0, 1, 2 and nothing else of the server's. */
async function assertOnlyStdio(lsOutput) {
  const got = lsOutput.trim().split('\n').map(Number).sort((a, b) => a - b);
  const want = [0, 1, 2, ...(await passedThrough())].sort((a, b) => a - b);
  assert.deepEqual(got, want, 'descriptors of the child (beyond those the test process passed on)');
}

async function status(pid) {
  const text = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)[1]);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

// }======

let nextId = 1;
const callMsg = (name, args, id = nextId++) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** tools/call exec_run → the parsed result table (the call must succeed). */
async function run(srv, args, limit) {
  const r = await srv.call(nextId++, 'tools/call', { name: 'exec_run', arguments: args }, limit);
  assert.ok(r.result && !r.result.isError, `exec_run ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
  return JSON.parse(r.result.content[0].text);
}

/** A script line: `sh -c LINE sh ...rest` (so "$1" is rest[0]). */
const sh = (line, ...rest) => ['sh', '-c', line, 'sh', ...rest];

// Decided by events, not a clock: no child can end before the test makes its
// flag file, so seeing all N alive at once is the overlap, and an answer to
// ping or tools/list that comes meanwhile came while every child ran.
test('200 concurrent children overlap; ping and tools/list answer meanwhile', opts, () =>
  withRaw(['--no-watch', '--timeout', '300', IO_APP], async (srv) => {
    await srv.initialize();
    const N = 200;
    const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-exec-'));
    const flag = path.join(dir, 'go');
    try {
      const ids = [];
      for (let i = 0; i < N; i++) {
        const m = callMsg('exec_run', { argv: sh('until [ -e "$1" ]; do sleep 0.5; done', flag) });
        ids.push(m.id);
        srv.send(m);
      }
      const alive = (ps) => ps.filter((p) => p.ppid === srv.child.pid && p.state !== 'Z').length;
      await until((ps) => alive(ps) === N, `all ${N} children alive at once`, ms(60000));
      for (let k = 0; k < 3; k++) {
        await srv.call(`ping${k}`, 'ping', undefined, ms(10000));
        const tl = await srv.call(`list${k}`, 'tools/list', {}, ms(10000));
        assert.ok(tl.result.tools.some((x) => x.name === 'exec_run'));
      }
      assert.equal(alive(await processes()), N, 'every child still ran while ping and tools/list were answered');
      await writeFile(flag, '');
      const replies = await Promise.all(ids.map((id) => srv.reply(JSON.stringify(id), ms(60000))));
      for (const line of replies) assert.equal(JSON.parse(JSON.parse(line).result?.content?.[0]?.text ?? '{}').code, 0, line);
      await until(noChildren(srv.child.pid), 'children of the server left');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }));

test('output, exit code, stdin, env, cwd; no shell unless asked; spawn failure names the program', opts, () =>
  withRaw(['--no-watch', IO_APP], async (srv) => {
    await srv.initialize();
    const r = await run(srv, { argv: sh('echo out; echo err >&2; exit 3') });
    assert.deepEqual(r, { code: 3, stdout: 'out\n', stderr: 'err\n', timed_out: false, stdout_truncated: false, stderr_truncated: false });

    const stdin = 'line one\nline two\n'.repeat(50000); // 1 MB: more than a pipe holds
    const cat = await run(srv, { argv: ['cat'], stdin, summary: true });
    assert.equal(cat.stdout_len, stdin.length);
    const echoed = await run(srv, { argv: ['cat'], stdin: 'héllo\0wörld' });
    assert.equal(echoed.stdout, 'héllo\0wörld');
    assert.equal((await run(srv, { argv: ['cat'] })).stdout, '', 'without stdin= the child reads /dev/null');

    // no shell: $HOME and ; are just bytes of the argument
    assert.equal((await run(srv, { argv: ['echo', '$HOME;', 'x'] })).stdout, '$HOME; x\n');

    const env = await run(srv, { argv: sh('echo "$LUAMCP_T1|$HOME|$LUAMCP_T2"'), env: { LUAMCP_T1: 'one two' } });
    assert.equal(env.stdout, `one two|${process.env.HOME ?? ''}|\n`, 'env= adds to the environment');
    const clear = await run(srv, { argv: ['/usr/bin/env'], env: { ONLY: '1' }, env_clear: true });
    assert.equal(clear.stdout, 'ONLY=1\n', 'env_clear starts from nothing');

    const tmp = await tempApp({ 'x.txt': 'x' });
    try {
      assert.equal((await run(srv, { argv: ['pwd'], cwd: tmp })).stdout.trim(), tmp);
      assert.equal((await run(srv, { argv: ['cat', 'x.txt'], cwd: tmp })).stdout, 'x');
    } finally {
      await removeTemp(tmp);
    }

    await assertOnlyStdio((await run(srv, { argv: sh('ls /proc/$$/fd') })).stdout);

    // killed by a signal: code absent, signal by name
    const killed = await run(srv, { argv: sh('kill -USR1 $$') });
    assert.equal(killed.signal, 'SIGUSR1');
    assert.equal(killed.code, undefined);

    const bad = await srv.call(nextId++, 'tools/call', { name: 'exec_run', arguments: { argv: ['no-such-program-luamcp', 'a'] } });
    assert.equal(bad.result?.isError, true, JSON.stringify(bad));
    assert.match(bad.result.content[0].text, /exec\.lua:\d+: mcp\.exec: cannot run 'no-such-program-luamcp': no such file or directory/);

    const errs = await srv.call(nextId++, 'tools/call', { name: 'exec_errors', arguments: {} });
    const e = JSON.parse(errs.result.content[0].text);
    assert.match(e.enoent, /cannot run 'no-such-program-luamcp'/);
    assert.match(e.empty, /no program given/);
    assert.match(e.option, /unknown option 'timout'/);
    assert.match(e.cwd, /cwd '\/no\/such\/dir': no such file or directory/);
    assert.match(e.argv_type, /argv\[2\] must be a string/);
    assert.match(e.nul, /argv\[2\] contains a NUL byte/);
    assert.match(e.coroutine, /own coroutine/);
    assert.match(e.twice, /argv given twice/);
    assert.match(e.argv_hole, /argv must be a list|argv\[2\] must be a string/);
    assert.equal(e.argv_field, 'from argv=\n', 'mcp.exec{ argv = {...} } is the same as the list form');
    await until(noChildren(srv.child.pid), 'children of the server left');
  }));

test('max_output caps each stream; the rest is drained and dropped, memory stays flat', opts, () =>
  withRaw(['--no-watch', IO_APP], async (srv) => {
    await srv.initialize();
    await run(srv, { argv: ['true'] }); // warm up
    const before = await status(srv.child.pid);
    const big = await run(srv, { argv: ['head', '-c', '50000000', '/dev/zero'], max_output: 1000000, summary: true });
    assert.equal(big.code, 0, 'the child wrote everything (drained, not blocked)');
    assert.equal(big.stdout_len, 1000000);
    assert.equal(big.stdout_truncated, true);
    assert.equal(big.stderr_truncated, false);
    const after = await status(srv.child.pid);
    const grown = (after.hwm - before.rss) / 1024;
    assert.ok(grown < 30, `peak RSS grew by ${grown.toFixed(1)} MB for 50 MB of output capped at 1 MB`);

    const both = await run(srv, { argv: sh('head -c 5000 /dev/zero; head -c 3000 /dev/zero >&2'), max_output: 4096, summary: true });
    assert.deepEqual([both.stdout_len, both.stdout_truncated, both.stderr_len, both.stderr_truncated], [4096, true, 3000, false]);
    const exact = await run(srv, { argv: ['head', '-c', '4096', '/dev/zero'], max_output: 4096, summary: true });
    assert.equal(exact.stdout_truncated, false, 'exactly max_output bytes is not truncated');
  }));

test("the script's timeout=: timed_out, SIGTERM then SIGKILL after grace, the whole group gone", opts, async () => {
  const tmp = await tempApp({});
  try {
    await withRaw(['--no-watch', IO_APP], async (srv) => {
      await srv.initialize();
      const f1 = path.join(tmp, 'p1');
      const t0 = Date.now();
      const r = await run(srv, { argv: sh('echo $$ > "$1"; sleep 30; echo never', f1), timeout: 0.5 });
      const took = Date.now() - t0;
      assert.equal(r.timed_out, true);
      assert.equal(r.signal, 'SIGTERM');
      assert.equal(r.code, undefined);
      assert.equal(r.stdout, '');
      assert.ok(took < ms(2500), `timeout 0.5 took ${took} ms`);
      await until(groupGone(await pidIn(f1)), 'the process group of the timed-out child');

      // a child that ignores SIGTERM gets SIGKILL after the grace
      const f2 = path.join(tmp, 'p2');
      const t1 = Date.now();
      const k = await run(srv, { argv: sh('trap "" TERM; echo $$ > "$1"; sleep 30; echo never', f2), timeout: 0.3, grace: 0.4 });
      const took2 = Date.now() - t1;
      assert.equal(k.timed_out, true);
      assert.equal(k.signal, 'SIGKILL');
      assert.ok(took2 >= 650, `SIGKILL came before the grace (${took2} ms)`);
      await until(groupGone(await pidIn(f2)), 'the process group of the killed child');

      // finished in time: not timed out
      const quick = await run(srv, { argv: ['true'], timeout: 5 });
      assert.deepEqual([quick.code, quick.timed_out], [0, false]);
      await until(noChildren(srv.child.pid), 'children (or zombies) of the server');
    });
  } finally {
    await removeTemp(tmp);
  }
});

test("the call's --timeout kills the child's group and reaps it: isError, no zombie", opts, async () => {
  const tmp = await tempApp({});
  try {
    await withRaw(['--no-watch', '--timeout', '1', IO_APP], async (srv) => {
      await srv.initialize();
      const file = path.join(tmp, 'pid');
      const t0 = Date.now();
      const r = await srv.call(nextId++, 'tools/call', { name: 'exec_run', arguments: { argv: sh('echo $$ > "$1"; sleep 30; echo never', file) } });
      assert.equal(r.result?.isError, true, JSON.stringify(r));
      assert.match(r.result.content[0].text, /timed out/);
      assert.ok(Date.now() - t0 < ms(3000));
      const pgid = await pidIn(file);
      await until(groupGone(pgid), 'the process group of the child after the call timed out');
      await until(noChildren(srv.child.pid), 'children (or zombies) of the server');
      // a child that ignores SIGTERM: SIGKILL after the grace, still reaped
      const f2 = path.join(tmp, 'pid2');
      const r2 = await srv.call(nextId++, 'tools/call', { name: 'exec_run', arguments: { argv: sh('trap "" TERM; echo $$ > "$1"; sleep 30', f2), grace: 0.5 } });
      assert.equal(r2.result?.isError, true, JSON.stringify(r2));
      await until(groupGone(await pidIn(f2)), 'the group of the child that ignored SIGTERM');
      await until(noChildren(srv.child.pid), 'children (or zombies) of the server');
      // a script's long grace= does not keep it alive once the call has ended
      const f3 = path.join(tmp, 'pid3');
      const t3 = Date.now();
      const r3 = await srv.call(nextId++, 'tools/call', { name: 'exec_run', arguments: { argv: sh('trap "" TERM; echo $$ > "$1"; sleep 30', f3), grace: 50 } });
      assert.equal(r3.result?.isError, true, JSON.stringify(r3));
      await until(groupGone(await pidIn(f3)), 'the group of the child with grace = 50 after its call ended', ms(6000));
      assert.ok(Date.now() - t3 < ms(6000), `gone after ${Date.now() - t3} ms`);
      const huge = await srv.call(nextId++, 'tools/call', { name: 'exec_run', arguments: { argv: ['true'], grace: 1e9 } });
      assert.match(JSON.stringify(huge), /grace must be a number of seconds from 0 to 60/);
      assert.equal((await run(srv, { argv: ['echo', 'still'] })).stdout, 'still\n');
    });
  } finally {
    await removeTemp(tmp);
  }
});

test('notifications/cancelled in the middle: no reply, the child group gone, later calls work', opts, async () => {
  const tmp = await tempApp({});
  try {
    await withRaw(['--no-watch', IO_APP], async (srv) => {
      await srv.initialize();
      const file = path.join(tmp, 'pid');
      srv.send(callMsg('exec_run', { argv: sh('echo $$ > "$1"; sleep 30; echo never', file) }, 'victim'));
      const pgid = await pidIn(file);
      srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'victim', reason: 'test' } });
      await until(groupGone(pgid), 'the process group of the cancelled child');
      await until(noChildren(srv.child.pid), 'children (or zombies) of the server');
      assert.equal((await run(srv, { argv: ['echo', 'after'] })).stdout, 'after\n');
      await delay(100);
      assert.ok(!srv.lines.some((l) => rawMember(l, ['id']) === '"victim"'), 'no reply for the cancelled call');
    });
  } finally {
    await removeTemp(tmp);
  }
});

test('shutdown with a child running: it is killed and reaped before the server exits', opts, async () => {
  const tmp = await tempApp({});
  try {
    const file = path.join(tmp, 'pid');
    let serverPid;
    await withRaw(['--no-watch', '--shutdown-grace', '0.3', IO_APP], async (srv) => {
      await srv.initialize();
      serverPid = srv.child.pid;
      srv.send(callMsg('exec_run', { argv: sh('echo $$ > "$1"; sleep 30', file) }));
      await pidIn(file);
    }); // closes stdin: the call is dropped after the grace; exit code 0 required
    await until(groupGone(await pidIn(file)), 'the child group after the server exited');
    assert.ok(serverPid > 0);
  } finally {
    await removeTemp(tmp);
  }
});

test('over HTTP (worker threads run calls too): concurrent children, nothing inherited', opts, () =>
  withHttp(IO_APP, ['--no-watch'], async (srv) => {
    const { session } = await rawInitialize(srv);
    const t0 = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(srv, callMsg('exec_run', { argv: sh(`sleep 0.5; echo ${i}`) }), { session })),
    );
    const wall = Date.now() - t0;
    answers.forEach((ex, i) => {
      const msg = answerOf(ex);
      assert.equal(JSON.parse(msg.result.content[0].text).stdout, `${i}\n`, ex.body);
    });
    assert.ok(wall < ms(3000), `20 × sleep 0.5 over HTTP took ${wall} ms`);
    const fds = answerOf(await post(srv, callMsg('exec_run', { argv: sh('ls /proc/$$/fd') }), { session }));
    await assertOnlyStdio(JSON.parse(fds.result.content[0].text).stdout); // no socket of the server
    await until(noChildren(srv.child.pid), 'children of the server left');
  }));
