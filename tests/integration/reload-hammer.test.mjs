// reload-hammer.test.mjs — the no-loss proof of hot reload. A raw NDJSON
// client keeps IN_FLIGHT `tools/call`s pipelined against `luamcp serve`
// (most of them parked in ctx:sleep for a few ms, so calls straddle every
// reload and finish on a state that is no longer the current one) while the
// test rewrites the tool's script a few hundred times: versions A and B
// alternately, saved by renaming a temp file over the script or by writing
// it in place, a broken version now and then, and bursts of saves that the
// server's debounce merges. At the end:
//   - every request got exactly one answer (none lost, none twice, no
//     unknown id), and only answers, list_changed and log notifications came;
//   - every answer is version A's or B's for that very request ("A:<n>"), or
//     the one well-formed error a correct server may give: -32602 unknown
//     tool, when a reload lands while an in-place save is half written (the
//     file truncated, not yet rewritten); anything else is a failure;
//   - the saves did reload the server (good and failed reloads are counted
//     on stderr), both versions answered, the broken ones were reported with
//     file:line;
//   - the last version saved is the one served, and the server exits 0.
//
// Environment (besides helpers.mjs's): LUAMCP_HAMMER_SAVES overrides the
// number of saves (default 300, about 10 s here, also with the ASan build;
// 100 when LUAMCP_TIMEOUT_SCALE > 3; 30 under LUAMCP_WRAP, e.g. valgrind).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { SCALE, TEST_TIMEOUT, WAIT, WRAP, ms, removeTemp, saveFile, tempApp, watchLines, withRaw, within } from './helpers.mjs';

const SAVES = Number(process.env.LUAMCP_HAMMER_SAVES) > 0
  ? Number(process.env.LUAMCP_HAMMER_SAVES)
  : WRAP.length ? 30 : SCALE > 3 ? 100 : 300;
const IN_FLIGHT = 20;
const BROKEN_EVERY = 11; // every 11th save is a script that does not load
const BURST_EVERY = 7;   // after every 7th save, the next follows at once (no wait for its reload)
const BUDGET = WRAP.length ? ms(30_000) : 30_000; // ms of saving at most (about 10 s are needed here)

const RELOADED = /^luamcp: info: reloaded .* in [0-9.]+ ms/;
const RELOAD_FAILED = /^luamcp: error: reload failed/;

const version = (v) => `local mcp = require "mcp"
local version = ${JSON.stringify(v)} -- a module-level local: each state has its own
mcp.tool {
  name = "ham",
  description = "version ${v}",
  input = { n = mcp.integer(), sleep = mcp.number { min = 0 } },
  handler = function(args, ctx)
    if args.sleep > 0 then ctx:sleep(args.sleep) end
    return version .. ":" .. args.n
  end,
}
`;
// line 7 does not parse
const BROKEN = version('X').replace('if args.sleep > 0 then', 'if args.sleep > > 0 then');
const BROKEN_LINE = BROKEN.split('\n').findIndex((l) => l.includes('> >')) + 1;

/** A small deterministic generator, so that a failing run can be replayed. */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SLEEPS = [0, 0.001, 0.002, 0.005, 0.01, 0.02];

test(`${SAVES} saves of a tool's script while ${IN_FLIGHT} calls stay in flight: no answer lost or doubled`, { timeout: Math.max(TEST_TIMEOUT, ms(120_000)) }, async () => {
  const dir = await tempApp({ 'scripts/ham.lua': version('A') });
  const file = path.join(dir, 'scripts', 'ham.lua');
  const started = Date.now();
  try {
    await withRaw(['--log-level', 'info', dir], async (srv) => {
      const err = watchLines(srv.child.stderr, srv.stderr);
      const good = () => err.count(RELOADED);
      const failedReloads = () => err.count(RELOAD_FAILED);
      const reloads = () => good() + failedReloads();
      await srv.initialize();

      // {====== the client: IN_FLIGHT calls kept pipelined
      const random = rng(20250611);
      const outstanding = new Map(); // id -> arguments
      const answered = new Set();
      const problems = [];
      const problem = (msg) => {
        if (problems.length < 20) problems.push(msg);
      };
      const tally = { A: 0, B: 0, errors: 0, listChanged: 0, logErrors: [], sent: 0 };
      let nextId = 1;
      let lastAnswerAt = Date.now();
      let pumping = true;
      let drained;
      const drainedNow = new Promise((resolve) => (drained = resolve));

      const send = () => {
        const id = nextId++;
        const args = { n: id, sleep: SLEEPS[Math.floor(random() * SLEEPS.length)] };
        outstanding.set(id, args);
        tally.sent++;
        srv.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'ham', arguments: args } });
      };

      const onLine = (line) => {
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          problem(`not JSON: ${line.slice(0, 200)}`);
          return;
        }
        if (msg.jsonrpc !== '2.0') problem(`not JSON-RPC 2.0: ${line.slice(0, 200)}`);
        if (msg.id === undefined) {
          // a notification: the reloads' list_changed and error reports only
          if (msg.method === 'notifications/tools/list_changed') tally.listChanged++;
          else if (msg.method === 'notifications/message' && msg.params?.level === 'error') tally.logErrors.push(String(msg.params.data));
          else problem(`unexpected notification: ${line.slice(0, 200)}`);
          return;
        }
        if (msg.method !== undefined) {
          problem(`unexpected request from the server: ${line.slice(0, 200)}`);
          return;
        }
        const { id } = msg;
        if (!outstanding.has(id)) {
          problem(answered.has(id) ? `a second answer to id ${id}: ${line.slice(0, 200)}` : `an answer to an id never sent: ${line.slice(0, 200)}`);
          return;
        }
        const args = outstanding.get(id);
        outstanding.delete(id);
        lastAnswerAt = Date.now();
        answered.add(id);
        if (msg.error !== undefined) {
          // The one error a correct server may give here: -32602, unknown tool.
          // An in-place save truncates the script first; if a reload that an
          // earlier save scheduled runs before the rest is written (a burst, a
          // busy machine), that version has no tool `ham` until the save's
          // own reload, about 30 ms later.
          if (msg.error.code !== -32602 || !/ham/.test(String(msg.error.message)) || msg.result !== undefined) {
            problem(`an error answer other than "unknown tool": ${line.slice(0, 200)}`);
          }
          tally.errors++;
        } else if (msg.result?.isError) {
          // neither version fails: this would be the server's doing (e.g. a
          // call resumed on a state that was closed under it)
          problem(`an isError result: ${line.slice(0, 300)}`);
          tally.errors++;
        } else {
          const got = msg.result?.content?.[0]?.text;
          if (got === `A:${args.n}`) tally.A++;
          else if (got === `B:${args.n}`) tally.B++;
          else problem(`an answer from neither version A nor B for n=${args.n}: ${line.slice(0, 200)}`);
        }
        if (pumping) send();
        else if (outstanding.size === 0) drained();
      };

      let pending = Buffer.alloc(0);
      const skipBefore = srv.lines.length; // the initialize exchange
      srv.child.stdout.on('data', (chunk) => {
        pending = Buffer.concat([pending, chunk]);
        let nl;
        while ((nl = pending.indexOf(0x0a)) >= 0) {
          const line = pending.subarray(0, nl).toString('utf8');
          pending = pending.subarray(nl + 1);
          onLine(line);
        }
      });
      assert.equal(skipBefore, 1, `lines before the hammer: ${JSON.stringify(srv.lines)}`);
      for (let i = 0; i < IN_FLIGHT; i++) send();
      // }======

      // Every wait also ends if the server dies, and says how the calls stand.
      const died = srv.exited.then(({ code, signal }) => {
        throw new Error(`the server exited (code ${code}, signal ${signal}) in the middle of the hammer`);
      });
      died.catch(() => {});
      const wait = (promise) =>
        Promise.race([promise, died]).catch((e) => {
          e.message += `\n${outstanding.size} calls unanswered, the last answer ${Date.now() - lastAnswerAt} ms ago; ` +
            `${tally.sent} sent; problems: ${problems.join('\n') || 'none'}`;
          throw e;
        });

      // {====== the editor: SAVES saves, waiting for each one's reload
      // (except in bursts); on a machine so slow that BUDGET ms pass first,
      // fewer (the checks below scale with the number done)
      let brokenSaves = 0;
      let saves = 0;
      let last = 'A';
      for (let i = 1; i <= SAVES && Date.now() - started < BUDGET; i++) {
        saves = i;
        let text;
        if (i % BROKEN_EVERY === 0) {
          text = BROKEN;
          brokenSaves++;
        } else {
          last = last === 'A' ? 'B' : 'A';
          text = version(last);
        }
        const mark = reloads();
        await saveFile(file, text, i % 3 === 0 ? 'inplace' : 'rename');
        if (i % BURST_EVERY !== 0) await wait(err.until(() => reloads() > mark, `a reload after save ${i} of ${SAVES}`));
        if (problems.length) break; // fail early, with the first problems
      }
      // the last save is a good version, and it is the one served in the end
      last = last === 'A' ? 'B' : 'A';
      const mark = good();
      await saveFile(file, version(last), 'rename');
      await wait(err.until(() => good() > mark, 'the reload of the last save'));
      // }======

      pumping = false;
      if (outstanding.size === 0) drained();
      await wait(within(drainedNow, WAIT, `the answers to the ${outstanding.size} calls still in flight`)).catch((e) => {
        e.message += `; outstanding ids: ${[...outstanding.keys()].slice(0, 20).join(', ')}`;
        throw e;
      });

      assert.deepEqual(problems, [], 'the answers and notifications were not all as expected');
      assert.equal(outstanding.size, 0);
      assert.equal(answered.size, tally.sent, 'not every request got exactly one answer');
      assert.equal(tally.A + tally.B + tally.errors, tally.sent);
      assert.ok(tally.A > 0 && tally.B > 0, `both versions should have answered: ${JSON.stringify({ A: tally.A, B: tally.B })}`);
      assert.ok(tally.errors < tally.sent / 2, `mostly "unknown tool" answers: ${tally.errors} of ${tally.sent}`);

      // the saves did reload the server (a burst may be merged into one reload)
      const reloadsSeen = reloads();
      assert.ok(saves >= Math.min(SAVES, 30), `only ${saves} saves in ${BUDGET} ms`);
      assert.ok(reloadsSeen >= saves / 2, `only ${reloadsSeen} reloads for ${saves} saves`);
      assert.ok(failedReloads() >= 1 && brokenSaves >= 1, `no failed reload for ${brokenSaves} broken saves`);
      assert.ok(tally.listChanged >= 1, 'no tools/list_changed (the description changes between A and B)');
      assert.ok(tally.logErrors.length >= 1, 'the broken versions were not reported to the client');
      for (const data of tally.logErrors) assert.match(data, new RegExp(`scripts/ham\\.lua:${BROKEN_LINE}:`), `a reload error without file:line: ${data}`);

      // the version saved last is served (checked on a quiet pipe)
      const finalAnswer = JSON.parse(
        await srv.request({ jsonrpc: '2.0', id: 'final', method: 'tools/call', params: { name: 'ham', arguments: { n: 0, sleep: 0 } } }, '"final"'),
      );
      assert.equal(finalAnswer.result?.content?.[0]?.text, `${last}:0`, JSON.stringify(finalAnswer));

      const secs = (Date.now() - started) / 1000;
      console.log(
        `# ${saves} saves (${brokenSaves} broken), ${good()} reloads + ${failedReloads()} failed, ` +
          `${tally.sent} calls (A ${tally.A}, B ${tally.B}, errors ${tally.errors}), ` +
          `${tally.listChanged} list_changed, in ${secs.toFixed(1)} s`,
      );
    });
  } finally {
    await removeTemp(dir);
  }
});
