// soak.test.mjs — the short soak of bench/soak (SOAK_N 200k by default
// here, about 20 s): mixed requests over stdio and HTTP at once while a
// script is rewritten every second; no reply lost or doubled, RSS and fds
// flat, both servers exit 0. The release build only (ASan's quarantine
// keeps freed memory; the timings would not hold).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { soak, report } from '../../bench/soak/driver.mjs';
import { BIN, TEST_TIMEOUT } from './helpers.mjs';

test('soak: mixed calls over stdio and HTTP under a reload every second', { timeout: TEST_TIMEOUT * 5 }, async () => {
  const r = await soak({ bin: BIN, n: Number(process.env.SOAK_N || 200_000), log: () => {} });
  const text = report(r);
  console.log(text);
  assert.ok(r.ok, text);
  for (const s of Object.values(r.servers)) assert.ok(s.reloads >= 3, `only ${s.reloads} reloads:\n${text}`);
});
