// http-tls.test.mjs — `luamcp serve --http … --cert … --key …`: MCP over
// HTTPS with a self-signed certificate made for the test (openssl CLI).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { BIN, EXAMPLE_APP, TEST_TIMEOUT } from './helpers.mjs';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function post(port, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path: '/mcp', method: 'POST', rejectUnauthorized: false,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function waitListening(port, deadline) {
  for (;;) {
    try {
      return await post(port, { jsonrpc: '2.0', id: 0, method: 'ping' });
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

test('initialize and a tool call over HTTPS; the server exits 0 on SIGTERM', { timeout: TEST_TIMEOUT }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'luamcp-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
    { stdio: 'ignore' });
    const port = await freePort();
    const server = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`, '--cert', join(dir, 'cert.pem'),
      '--key', join(dir, 'key.pem'), EXAMPLE_APP], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    server.stderr.on('data', (c) => { stderr += c; });
    const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
    try {
      await waitListening(port, Date.now() + 10000);
      const init = await post(port, {
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      assert.equal(init.status, 200, stderr);
      assert.equal(JSON.parse(init.body).result.serverInfo.name, 'gift-server');
      const sid = init.headers['mcp-session-id'];
      assert.ok(sid);
      const call = await post(port, {
        jsonrpc: '2.0', id: 2, method: 'tools/call',
        params: { name: 'suggest_gifts', arguments: { occasion: 'wedding', budget: 100 } },
      }, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
      assert.equal(call.status, 200);
      // the handler logs first, so this is an SSE stream ending with the result
      assert.match(call.headers['content-type'], /text\/event-stream/);
      assert.match(call.body, /Chef's knife/);
    } finally {
      server.kill('SIGTERM');
    }
    assert.equal(await exited, 0, stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
