// raw-templates.test.mjs — resources/read through URI templates
// (core/base/uri_template.c) and mcp.path.join, over raw NDJSON, against
// tests/apps/files: its "doc" template reads docs/ by a variable, and a
// secret.txt lies next to docs/, one "../" away.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, TEST_TIMEOUT, removeTemp, run, tempApp, withRaw } from './helpers.mjs';

const opts = { timeout: TEST_TIMEOUT };
const FILES_APP = path.join(APPS, 'files');
const SECRET = readFileSync(path.join(FILES_APP, 'secret.txt'), 'utf8').trim();

const read = (srv, id, uri) => srv.call(id, 'resources/read', { uri });
const json = (r) => JSON.parse(r.result.contents[0].text);

test('a template read through mcp.path.join serves docs/, and nothing outside it', opts, () =>
  withRaw([FILES_APP], async (srv) => {
    await srv.initialize();
    const ok = await read(srv, 1, 'file:///docs/readme.txt');
    assert.equal(ok.result?.contents[0].text, 'the readme of docs/\n', JSON.stringify(ok));
    // an encoded slash is decoded: a path further inside is fine
    const inner = await read(srv, 2, 'file:///docs/sub%2Finner.txt');
    assert.equal(inner.result?.contents[0].text, 'inner file\n', JSON.stringify(inner));

    // what the read is handed: the decoded value, "../" and all
    const echo = await read(srv, 3, 'file:///echo/..%2Fsecret.txt');
    assert.deepEqual(json(echo), { name: '../secret.txt' });
    // but never a NUL byte (io.open would stop there): no match
    assert.equal((await read(srv, 4, 'file:///echo/a%00b')).error?.code, -32002);

    const escapes = [
      'file:///docs/..%2Fsecret.txt',
      'file:///docs/%2E%2E%2Fsecret.txt',
      'file:///docs/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd',
      'file:///docs/sub%2F..%2F..%2Fsecret.txt',
      'file:///docs/%2Fetc%2Fpasswd', // absolute
      'file:///docs/..', // the folder above
      'file:///docs/readme.txt%00.md', // a NUL byte: no match at all
      'file:///docs/../secret.txt', // a raw '/': the template does not match
    ];
    let id = 10;
    for (const uri of escapes) {
      const r = await read(srv, id++, uri);
      const line = JSON.stringify(r);
      assert.equal(r.error?.code, -32002, `${uri}: ${line}`);
      assert.ok(!line.includes(SECRET) && !line.includes('root:'), `${uri} leaked: ${line}`);
    }
  }));

test('matching backtracks: {name}.txt takes "a.txt.txt" as a.txt; {stem}.{ext} splits at the last dot', opts, () =>
  withRaw([FILES_APP], async (srv) => {
    await srv.initialize();
    assert.deepEqual(json(await read(srv, 1, 'file:///txt/a.txt.txt')), { name: 'a.txt' });
    assert.deepEqual(json(await read(srv, 2, 'file:///txt/.txt.txt')), { name: '.txt' });
    assert.equal((await read(srv, 3, 'file:///txt/.txt')).error?.code, -32002);
    assert.deepEqual(json(await read(srv, 4, 'file:///split/archive.tar.gz')), { stem: 'archive.tar', ext: 'gz' });
    assert.equal((await read(srv, 5, 'file:///split/noext')).error?.code, -32002);
    // the length cap: 8 KiB of URI matches, a byte more is not found
    const head = 'file:///echo/';
    const fits = head + 'x'.repeat(8192 - head.length);
    assert.equal(json(await read(srv, 6, fits)).name.length, 8192 - head.length);
    const over = await read(srv, 7, fits + 'x');
    assert.equal(over.error?.code, -32002, JSON.stringify(over).slice(0, 200));
  }));

test('mcp.path.join: the joined path, or nil and why', opts, () =>
  withRaw([FILES_APP], async (srv) => {
    await srv.initialize();
    const join = async (id, base, rel) =>
      (await srv.call(id, 'tools/call', { name: 'join', arguments: { base, rel } })).result.structuredContent;
    assert.deepEqual(await join(1, 'data', 'a/b.txt'), { path: 'data/a/b.txt' });
    assert.deepEqual(await join(2, 'data/', './a//b/.'), { path: 'data/a/b' });
    assert.deepEqual(await join(3, 'data', 'a..b'), { path: 'data/a..b' });
    assert.deepEqual(await join(4, 'data', 'a\\..\\b'), { path: 'data/a\\..\\b' }); // a backslash is a character
    assert.match((await join(5, 'data', '../x')).error, /'\.\.' segment/);
    assert.match((await join(6, 'data', 'a/../b')).error, /'\.\.' segment/);
    assert.match((await join(7, 'data', '/etc/passwd')).error, /absolute/);
    assert.match((await join(8, 'data', 'a\u0000b')).error, /NUL/);
  }));

test('mcp.template refuses a variable named twice and a brace outside a variable', opts, async () => {
  for (const [uri, why] of [
    ['x://{a}/{a}', /'\{a\}' appears twice/],
    ['x://{a}/{b', /'\{' or '\}' outside a \{variable\}/],
    ['x://{a}/b}', /'\{' or '\}' outside a \{variable\}/],
  ]) {
    const dir = await tempApp({
      'scripts/t.lua': `local mcp = require "mcp"\nmcp.template { uri = ${JSON.stringify(uri)}, read = function() end }\n`,
    });
    try {
      const r = await run(['check', dir]);
      assert.notEqual(r.code, 0, `${uri}: ${r.stdout}`);
      assert.match(r.stderr + r.stdout, why);
    } finally {
      await removeTemp(dir);
    }
  }
});
