// run.mjs — how ctest runs browser.widget: exit 77 (skipped) when there is
// no Chromium, otherwise node's test runner on widget.test.mjs.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const chromium = process.env.LUAMCP_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromium)) {
  console.log(`SKIP browser.widget: ${chromium} not found (Debian: apt-get install chromium)`);
  process.exit(77);
}
const test = path.join(path.dirname(fileURLToPath(import.meta.url)), 'widget.test.mjs');
const child = spawn(process.execPath, ['--test', '--test-reporter=spec', test], { stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(signal ? 1 : code));
