// services.mjs — the real servers a test starts next to luamcp: redis-server,
// PostgreSQL (initdb + postgres) and nginx running deploy/nginx/luamcp.conf, on free loopback ports, in
// the test's own folders; each stopped by the test that started it.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
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

/** PostgreSQL's binaries: Debian's /usr/lib/postgresql/N/bin (the newest). */
export function postgresBin() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => b - a) : [];
  return versions.length ? path.join(root, versions[0], 'bin') : path.join(root, 'missing', 'bin');
}

/** A PostgreSQL server of the test's own in dir (initdb, then postgres on a
    free loopback port, its socket in dir too), run as nobody when we are
    root (initdb and postgres refuse root): {port, url(user), stop()}.
    Trust authentication on 127.0.0.1 for the user 'luamcp', a database
    'app'; password authentication for 'secret' (password 'pw'). */
export async function startPostgres(dir) {
  const bin = postgresBin();
  // as nobody when we are root (initdb and postgres refuse root), started
  // directly with its uid, not through runuser: the signal that stops it
  // must reach postgres itself (runuser does not pass SIGINT on, and a
  // postgres left behind only ends a minute after its folder is gone)
  const root = process.getuid?.() === 0;
  const as = root ? { uid: Number(execFileSync('id', ['-u', 'nobody'])), gid: Number(execFileSync('id', ['-g', 'nobody'])) } : {};
  if (root) {
    chmodSync(dir, 0o755);
    execFileSync('chown', ['nobody', dir]);
  }
  const pgdata = path.join(dir, 'pgdata');
  const pwfile = path.join(dir, 'pw');
  writeFileSync(pwfile, 'pw\n');
  if (root) execFileSync('chown', ['nobody', pwfile]);
  execFileSync(path.join(bin, 'initdb'), ['-D', pgdata, '-U', 'luamcp', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C'],
    { stdio: 'pipe', ...as, env: { ...process.env, HOME: dir } });
  writeFileSync(path.join(pgdata, 'pg_hba.conf'), [
    'local all all trust',
    'host all secret 127.0.0.1/32 scram-sha-256',
    'host all all 127.0.0.1/32 trust',
    '',
  ].join('\n'));
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const argv = ['-D', pgdata, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off',
      '-c', 'max_connections=50', '-c', 'shared_buffers=16MB'];
    const cmd = path.join(bin, 'postgres');
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...as, env: { ...process.env, HOME: dir } });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let out = '';
    const ready = await within(new Promise((resolve) => {
      const seen = (d) => {
        out += d;
        if (out.includes('ready to accept connections')) resolve(true);
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', seen);
      exited.then(() => resolve(false));
    }), WAIT, 'postgres to start');
    if (!ready) {
      if (attempt < 4 && /in use/i.test(out)) continue;
      throw new Error(`postgres did not start:\n${out}`);
    }
    const psql = (sql, db = 'postgres') =>
      execFileSync(path.join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'luamcp', '-d', db, '-v', 'ON_ERROR_STOP=1', '-Atc', sql], { encoding: 'utf8' });
    psql('CREATE DATABASE app');
    psql("CREATE ROLE secret LOGIN PASSWORD 'pw'; GRANT ALL ON DATABASE app TO secret; ALTER DATABASE app OWNER TO secret");
    return {
      port,
      pwfile,
      url: (user = 'luamcp', db = 'app') => `postgres://${user}@127.0.0.1:${port}/${db}`,
      psql,
      stop: () => stopChild(child, exited, 'SIGINT'), // fast shutdown
    };
  }
}
