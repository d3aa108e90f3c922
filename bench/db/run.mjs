// bench/db/run.mjs — mcp.db calls per second over stdio (bench/apps/notes):
// `note` (an INSERT and a SELECT on the writer), then `get` (a SELECT by id on
// the readers), each N calls with C in flight, on a fresh data folder; with
// --pg on a PostgreSQL of its own instead (initdb + postgres in a temp
// folder, tests/integration/services.mjs), served with --db.
//   node bench/db/run.mjs [BINARY] [N] [C] [--pg]   (default build/luamcp 20000 64)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const pgWanted = process.argv.includes('--pg');
const [bin = path.join(root, 'build', 'luamcp'), n = '20000', c = '64'] = process.argv.slice(2).filter((a) => a !== '--pg');
const data = mkdtempSync(path.join(tmpdir(), 'luamcp-bench-db-'));
const pg = pgWanted ? await (await import('../../tests/integration/services.mjs')).startPostgres(data) : null;
const pool = process.env.BENCH_DB_POOL ? ['--db-pool', process.env.BENCH_DB_POOL] : []; // PostgreSQL's connections
const where = pg ? ['--db', pg.url(), ...pool] : ['--data', path.join(data, 'data')];

function run(tool, N, C) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--no-watch', ...where, path.join(root, 'bench', 'apps', 'notes')],
      { stdio: ['pipe', 'pipe', 'ignore'] });
    let buf = '', got = 0, sent = 0, t0;
    const send = (o) => child.stdin.write(JSON.stringify(o) + '\n');
    const next = () => {
      const i = ++sent;
      send({ jsonrpc: '2.0', id: i, method: 'tools/call',
             params: { name: tool, arguments: tool === 'get' ? { id: (i % 1000) + 1 } : { who: `w${i % 50}` } } });
    };
    child.stdout.on('data', (d) => {
      buf += d;
      for (let k; (k = buf.indexOf('\n')) >= 0;) {
        const line = buf.slice(0, k);
        buf = buf.slice(k + 1);
        if (line.includes('"id":"init"')) {
          send({ jsonrpc: '2.0', method: 'notifications/initialized' });
          t0 = process.hrtime.bigint();
          for (let i = 0; i < C; i++) next();
          continue;
        }
        if (line.includes('"isError":true') || line.includes('"error"')) return reject(new Error(line));
        if (++got === N) {
          const s = Number(process.hrtime.bigint() - t0) / 1e9;
          child.stdin.end();
          return resolve(N / s);
        }
        if (sent < N) next();
      }
    });
    send({ jsonrpc: '2.0', id: 'init', method: 'initialize',
           params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-db', version: '0' } } });
  });
}

try {
  for (const tool of ['note', 'get']) {
    const rate = await run(tool, Number(n), Number(c));
    console.log(`${pg ? 'PostgreSQL' : 'SQLite'} ${tool}: ${n} calls, ${c} in flight: ${rate.toFixed(0)} calls/s`);
  }
} finally {
  await pg?.stop();
  rmSync(data, { recursive: true, force: true });
}
