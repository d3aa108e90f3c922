// metrics.test.mjs — `serve --metrics PORT`: a real Prometheus (Debian's
// prometheus, started here on a free loopback port with a 1 s scrape) scrapes
// luamcp after a known load, and its query API must give exactly those
// counts; promtool checks the exposition; a client sending 10,000 unknown
// tool names adds no series. Exit 77 (skipped) without prometheus/promtool.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, TEST_TIMEOUT, WAIT } from './helpers.mjs';
import { freePort, post, rpc, withHttp } from './http-helpers.mjs';
import { needs, stopChild, until } from './services.mjs';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
needs(PROMETHEUS, PROMTOOL);

const opts = { timeout: TEST_TIMEOUT };
const APP = path.join(APPS, 'metrics');
const REV = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': REV, 'io.modelcontextprotocol/clientCapabilities': {} };

const call = (srv, name, args = {}) => post(srv, rpc('tools/call', { name, arguments: args, _meta: META }),
  { version: REV, extra: { 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

/** Prometheus scraping target every second, in dir: {port, child, exited}. */
async function startPrometheus(dir, target) {
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  await writeFile(config, ['global:', '  scrape_interval: 1s', '  scrape_timeout: 1s', 'scrape_configs:',
    '  - job_name: luamcp', '    static_configs:', `      - targets: ['${target}']`, ''].join('\n'));
  const child = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const base = `http://127.0.0.1:${port}`;
  await until(async () => (await get(`${base}/-/ready`).catch(() => ({ status: 0 }))).status === 200, `prometheus to start\n${log}`);
  return { base, child, exited, log: () => log };
}

/** The value of an instant query with one result (NaN when none). */
async function query(prom, q) {
  const r = JSON.parse((await get(`${prom.base}/api/v1/query?query=${encodeURIComponent(q)}`)).body);
  assert.equal(r.status, 'success', JSON.stringify(r));
  return r.data.result.length ? Number(r.data.result[0].value[1]) : NaN;
}

function promtool(text) {
  return new Promise((resolve) => {
    const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
    child.stdin.end(text);
  });
}

test('Prometheus scrapes exactly the calls made: by tool and outcome, durations, requests, sessions; promtool passes', opts, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'luamcp-metrics-'));
  const mport = await freePort();
  let prom;
  try {
    await withHttp(APP, ['--metrics', `127.0.0.1:${mport}`, '--timeout', '0.3'], async (srv) => {
      const scrape = await get(`http://127.0.0.1:${mport}/metrics`);
      assert.equal(scrape.status, 200);
      assert.match(scrape.headers['content-type'], /^text\/plain; version=0\.0\.4/);
      assert.match(scrape.body, /^mcp_server_app_info\{name="metrics-test",version="2\.0\.0"\} 1$/m);
      assert.equal((await get(`http://127.0.0.1:${mport}/other`)).status, 404);
      // not on the MCP port
      assert.notEqual((await get(`${srv.url.replace('/mcp', '/metrics')}`)).status, 200);
      prom = await startPrometheus(dir, `127.0.0.1:${mport}`);
      const N = { fine: 7, sad: 4, refuse: 3, slow: 2 };
      for (const [name, n] of Object.entries(N)) {
        await Promise.all(Array.from({ length: n }, () => call(srv, name)));
      }
      for (let i = 0; i < 5; i++) await call(srv, 'no_such_tool');
      const count = (name, outcome) => `mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",name="${name}",outcome="${outcome}"}`;
      await until(async () => (await query(prom, count('slow', 'timeout'))) === N.slow, 'Prometheus to scrape the calls', WAIT);
      assert.equal(await query(prom, count('fine', 'ok')), N.fine);
      assert.equal(await query(prom, count('sad', 'tool_error')), N.sad);
      assert.equal(await query(prom, count('refuse', 'error')), N.refuse);
      assert.equal(await query(prom, `mcp_server_requests_total{mcp_method_name="tools/call",mcp_protocol_version="${REV}",outcome="ok"}`), N.fine);
      // an unknown tool: an error of tools/call, no series of its own
      assert.equal(await query(prom, `mcp_server_requests_total{mcp_method_name="tools/call",outcome="error"}`), N.refuse + 5);
      assert.ok(Number.isNaN(await query(prom, count('no_such_tool', 'error'))));
      // the durations: a timed-out call took its --timeout, an answered one far less
      const p50 = await query(prom, `histogram_quantile(0.5, sum by (le) (mcp_server_operation_duration_seconds_bucket{name="slow"}))`);
      assert.ok(p50 >= 0.25 && p50 <= 0.5, `slow p50 ${p50}`);
      const fine = await query(prom, `histogram_quantile(0.9, sum by (le) (mcp_server_operation_duration_seconds_bucket{name="fine"}))`);
      assert.ok(fine > 0 && fine < 0.1, `fine p90 ${fine}`);
      assert.equal(await query(prom, 'mcp_server_calls_in_flight'), 0);
      assert.ok(await query(prom, 'mcp_server_lua_heap_bytes') > 10000);
      assert.ok(await query(prom, 'process_resident_memory_bytes') > 1e6);
      assert.ok(await query(prom, 'mcp_server_http_responses_total{code_class="2xx"}') >= 21);
      const exposition = (await get(`http://127.0.0.1:${mport}/metrics`)).body;
      const checked = await promtool(exposition);
      assert.equal(checked.code, 0, checked.out);
    });
  } finally {
    if (prom) await stopChild(prom.child, prom.exited);
    await rm(dir, { recursive: true, force: true });
  }
});

test('label values stay bounded: 10,000 distinct unknown tool names add no series', opts, () =>
  withHttp(APP, ['--metrics', '127.0.0.1:0'], async (srv) => {
    // the metrics port is free for this test only: find it in the log
    await until(() => /metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/.test(srv.stderr), 'the metrics listener');
    const url = srv.stderr.match(/metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/)[1];
    const series = async () => (await get(url)).body.split('\n').filter((l) => l && !l.startsWith('#')).length;
    await call(srv, 'fine');
    const before = await series();
    for (let i = 0; i < 10000; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, k) => call(srv, `unknown_${i + k}`)));
    }
    const after = await series();
    assert.ok(after - before <= 2, `${after - before} more series`); // tools/call error, at most
  }));
