// services.mjs — the real servers a test starts next to luamcp: redis-server
// and nginx running deploy/nginx/luamcp.conf, on free loopback ports, in
// the test's own folders; each stopped by the test that started it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

import { REPO_ROOT, WAIT, within } from './helpers.mjs';
import { freePort } from './http-helpers.mjs';

export const REDIS = '/usr/bin/redis-server';
export const NGINX = '/usr/sbin/nginx';

/** Exit 77 (skipped) when one of the binaries is not installed. */
export function needs(...bins) {
  const missing = bins.find((b) => !existsSync(b));
  if (missing) {
    console.log(`skipped: ${missing} is not installed (tools/install-deps.sh test)`);
    process.exit(77);
  }
}

/** Poll pred() every 20 ms until it holds (within the limit). */
export async function until(pred, what, limit = WAIT) {
  const t0 = Date.now();
  while (!(await pred())) {
    if (Date.now() - t0 > limit) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}


/** redis-server on port (or a free one): {port, child, exited}. */
export async function startRedis(port) {
  for (let attempt = 0; ; attempt++) {
    const p = port ?? (await freePort());
    const child = spawn(REDIS, ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let out = '';
    const ready = await within(new Promise((resolve) => {
      const seen = (d) => {
        out += d;
        if (out.includes('Ready to accept connections')) resolve(true);
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', seen);
      exited.then(() => resolve(false));
    }), WAIT, 'redis-server to start');
    if (ready) return { port: p, child, exited };
    if (port !== undefined && attempt < 20 && /in use/i.test(out)) { await delay(100); continue; }
    if (port !== undefined || attempt >= 4 || !/in use/i.test(out)) throw new Error(`redis-server did not start:\n${out}`);
  }
}

export async function stopChild(child, exited, signal = 'SIGTERM') {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  await within(exited, WAIT, `pid ${child.pid} to exit`).catch(() => child.kill('SIGKILL'));
}

/** Can something connect to 127.0.0.1:port now? */
export function accepts(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/** nginx with deploy/nginx/luamcp.conf (its upstream ports replaced by
    ports; it listens on port, else a free one) in dir. */
export async function startNginx(dir, ports, fixedPort) {
  let conf = await readFile(path.join(REPO_ROOT, 'deploy', 'nginx', 'luamcp.conf'), 'utf8');
  for (const [i, p] of ports.entries()) conf = conf.replaceAll(`127.0.0.1:${8101 + i}`, `127.0.0.1:${p}`);
  for (let attempt = 0; ; attempt++) {
    const port = fixedPort ?? (await freePort());
    await writeFile(path.join(dir, 'luamcp.conf'), conf.replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${port};`));
    await writeFile(path.join(dir, 'nginx.conf'), [
      'worker_processes 1;',
      `pid ${dir}/nginx.pid;`,
      `error_log ${dir}/error.log warn;`,
      'events { worker_connections 1024; }',
      'http {',
      '  access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
      '  add_header X-Luamcp-Upstream $upstream_addr always;', // which instance answered (the test's only addition)
      `  include ${dir}/luamcp.conf;`,
      '}',
      '',
    ].join('\n'));
    const child = spawn(NGINX, ['-p', dir, '-c', `${dir}/nginx.conf`, '-e', `${dir}/error.log`, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let gone = false;
    exited.then(() => (gone = true));
    try {
      await until(async () => gone || (await accepts(port)), 'nginx to listen');
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    if (!gone) return { port, child, exited, url: `http://127.0.0.1:${port}/mcp` };
    const log = out + (await readFile(`${dir}/error.log`, 'utf8').catch(() => ''));
    if (attempt < 4 && !fixedPort && /in use/i.test(log)) continue;
    throw new Error(`nginx did not start:\n${log}`);
  }
}
