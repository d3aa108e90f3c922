// skills.test.mjs — Agent Skills (SEP-2640): skills/NAME/SKILL.md of an app
// folder served as skills. The TypeScript SDK v2 client's SkillsClient reads
// and verifies them (digests, sizes, front matter) in both eras; check names
// a broken SKILL.md at file:line; a hot reload of a skill sends
// resources/list_changed; pack bundles skills/ and list shows them; what a
// client sends never reaches a file outside the skill.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SKILLS_EXTENSION_ID, SkillsClient } from '@modelcontextprotocol/client/ext/skills';

import { BIN, REPO_ROOT, TEST_TIMEOUT, WAIT, WRAP, removeTemp, run, saveFile, tempApp, withRaw, within } from './helpers.mjs';

const sh = promisify(execFile);
// a full YAML parser: the one the conformance suite reads SKILL.md with (a dependency of it)
const YAML = createRequire(path.join(REPO_ROOT, 'tests/node_modules/conformance-next/package.json'))('yaml');
const opts = { timeout: TEST_TIMEOUT };

const SKILL_MD = `---
name: pdf-tools
description: Fills and merges PDF forms. Use when a task mentions PDF forms.
metadata:
  owner: docs-team
---

# PDF tools

Read [the guide](references/GUIDE.md) first.
`;
const GUIDE = '# Guide\n\nFill the fields top to bottom.\n';
const BLOB = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0xfe, 0x80, 0x0a]); // not UTF-8

async function skillApp(extra = {}) {
  const dir = await tempApp({
    'app.lua': 'return { name = "skilled", version = "1.0.0", description = "An app with a skill", author = "Ada <ada@example.com>" }\n',
    'scripts/echo.lua': 'local mcp = require "mcp"\nmcp.tool { name = "echo", description = "echo", input = { text = mcp.string() }, handler = function(a) return a.text end }\n',
    'skills/pdf-tools/SKILL.md': SKILL_MD,
    'skills/pdf-tools/references/GUIDE.md': GUIDE,
    ...extra,
  });
  await writeFile(path.join(dir, 'skills/pdf-tools/assets.bin'), BLOB);
  return dir;
}

async function connect(mode, dir) {
  const command = WRAP[0] || BIN;
  const args = [...WRAP.slice(1), ...(WRAP.length ? [BIN] : []), 'serve', dir];
  const client = new Client({ name: 'luamcp-skills-test', version: '0.0.0' }, { versionNegotiation: { mode } });
  await within(client.connect(new StdioClientTransport({ command, args, stderr: 'pipe' })), WAIT, 'connect');
  return client;
}

const sha = (b) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

for (const [label, mode] of [['legacy (2025-11-25)', 'legacy'], ['pinned 2026-07-28', { pin: '2026-07-28' }]]) {
  test(`v2 SkillsClient, ${label}: lists, gets, reads and verifies every file of a skill`, opts, async () => {
    const dir = await skillApp();
    try {
      const client = await connect(mode, dir);
      try {
        const skills = new SkillsClient(client);
        assert.ok(skills.supported && skills.directoryRead, 'the extension with directoryRead is declared');
        assert.deepEqual(client.getServerCapabilities().extensions[SKILLS_EXTENSION_ID], { directoryRead: true });
        const listed = await skills.list();
        assert.deepEqual(listed.invalid, []);
        assert.equal(listed.skills.length, 1);
        const entry = listed.skills[0];
        assert.equal(entry.uri, 'skill://pdf-tools/SKILL.md');
        assert.deepEqual(entry.frontmatter, {
          name: 'pdf-tools', description: 'Fills and merges PDF forms. Use when a task mentions PDF forms.',
          metadata: { owner: 'docs-team' },
        });
        assert.deepEqual(entry.resources, [
          { uri: 'skill://pdf-tools/SKILL.md', digest: sha(SKILL_MD), size: Buffer.byteLength(SKILL_MD) },
          { uri: 'skill://pdf-tools/assets.bin', digest: sha(BLOB), size: BLOB.length },
          { uri: 'skill://pdf-tools/references/GUIDE.md', digest: sha(GUIDE), size: Buffer.byteLength(GUIDE) },
        ]);
        const modern = typeof mode === 'object';
        // 2026-07-28 results are cacheable results; the 2025 backport has no such fields
        assert.equal(listed.ttlMs, modern ? 0 : undefined);
        assert.equal(listed.cacheScope, modern ? 'public' : undefined);
        const got = await skills.get(entry.uri);
        assert.deepEqual(got.skill, entry);

        // every read verified against the entry by the client itself
        const manifest = await skills.read(entry);
        assert.equal(manifest.verified, true);
        assert.equal(manifest.text, SKILL_MD);
        assert.equal(manifest.body, SKILL_MD.slice(SKILL_MD.indexOf('\n---\n') + 5));
        const guide = await skills.read(entry, 'references/GUIDE.md');
        assert.equal(guide.text, GUIDE);
        assert.equal(guide.mimeType, 'text/markdown');
        const blob = await skills.read(entry, 'assets.bin');
        assert.equal(blob.verified, true);
        assert.equal(blob.text, undefined, 'bytes that are not UTF-8 travel as a base64 blob');
        assert.deepEqual(Buffer.from(blob.bytes), BLOB);

        const root = await skills.readDirectory('skill://pdf-tools');
        assert.deepEqual(root.resources.map((r) => [r.name, r.mimeType]),
          [['SKILL.md', 'text/markdown'], ['assets.bin', 'application/octet-stream'], ['references', 'inode/directory']]);
        const refs = await skills.readDirectory('skill://pdf-tools/references');
        assert.deepEqual(refs.resources.map((r) => [r.uri, r.size]), [['skill://pdf-tools/references/GUIDE.md', Buffer.byteLength(GUIDE)]]);

        // SKILL.md is a resource too, named and described by its front matter
        const res = (await client.listResources()).resources.find((r) => r.uri === entry.uri);
        assert.deepEqual(res, { uri: entry.uri, name: 'pdf-tools', description: entry.frontmatter.description,
          mimeType: 'text/markdown', size: Buffer.byteLength(SKILL_MD) });
        // the app's own tools are as they were
        assert.equal((await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content[0].text, 'hi');
      } finally {
        await client.close();
      }
    } finally {
      await removeTemp(dir);
    }
  });
}

test('raw: a client reaches no file outside the skill; bad params are -32602; no skills, no extension', opts, async () => {
  const dir = await skillApp({ 'secret.txt': 'not for clients\n' });
  try {
    await withRaw([dir], async (srv) => {
      await srv.initialize();
      const escapes = [
        'skill://pdf-tools/../../secret.txt', 'skill://pdf-tools/%2e%2e/%2e%2e/secret.txt',
        'skill://pdf-tools/references/..%2F..%2F..%2Fsecret.txt', 'skill://..%2Fsecret.txt',
        'skill://pdf-tools/%00', 'skill://pdf-tools/%zz', 'skill://pdf-tools/SKILL.md?x=1',
        'skill://pdf-tools/SKILL.md\u0000../../secret.txt', 'skill://pdf-tools/SKILL.md\u0000zzz',
        'skill://' + 'a/'.repeat(5000) + 'SKILL.md',
      ];
      for (const uri of escapes) {
        const r = await srv.call(`e-${uri.slice(0, 40)}`, 'resources/read', { uri });
        assert.equal(r.error?.code, -32002, `${uri.slice(0, 60)}: ${JSON.stringify(r).slice(0, 200)}`);
        assert.doesNotMatch(JSON.stringify(r), /not for clients/);
      }
      // the same file however the URI spells it; a fragment is not part of it
      for (const uri of ['skill://pdf-tools/references/GUIDE.md', 'skill://pdf-tools/%72eferences/GUIDE.md#top']) {
        const r = await srv.call(`ok-${uri}`, 'resources/read', { uri });
        assert.equal(r.result.contents[0].text, GUIDE);
      }
      const folder = await srv.call('dir', 'resources/read', { uri: 'skill://pdf-tools/references' });
      assert.equal(folder.error.code, -32002);
      assert.match(folder.error.message, /resources\/directory\/read/);
      const bad = [
        ['skills/get', { uri: 42 }], ['skills/get', {}], ['skills/get', { uri: 'skill://pdf-tools/assets.bin' }],
        ['skills/list', { cursor: 'nope' }], ['resources/directory/read', { uri: 'skill://pdf-tools/SKILL.md' }],
        ['resources/directory/read', { uri: 'skill://pdf-tools', cursor: 'x' }], ['resources/directory/read', { uri: ['x'] }],
      ];
      for (const [method, params] of bad) {
        const r = await srv.call(`b-${method}-${JSON.stringify(params)}`, method, params);
        assert.equal(r.error?.code, -32602, `${method} ${JSON.stringify(params)}: ${JSON.stringify(r)}`);
      }
      const list = await srv.call('l', 'skills/list', {});
      assert.equal(list.result.skills.length, 1, 'still serving');
    });
  } finally {
    await removeTemp(dir);
  }
  const plain = await tempApp({ 'scripts/echo.lua': 'local mcp = require "mcp"\nmcp.tool { name = "echo", description = "e", handler = function() return "e" end }\n' });
  try {
    await withRaw(['--no-watch', plain], async (srv) => {
      const init = await srv.initialize();
      assert.equal(init.capabilities.extensions, undefined, 'no skills: no extension');
      assert.equal(init.capabilities.resources, undefined, 'nor resources');
      const r = await srv.call('l', 'skills/list', {});
      assert.equal(r.error.code, -32601);
    });
  } finally {
    await removeTemp(plain);
  }
});

test('check: a broken SKILL.md is a load error at file:line; a symlink out of the skill is refused', opts, async () => {
  const cases = [
    ['---\nname: pdf-tools\ndescription: "unclosed\n---\n', /skills\/pdf-tools\/SKILL\.md:3: a quoted value must close on the same line/],
    ['---\ndescription: d\nname: PDF_Tools\n---\n', /skills\/pdf-tools\/SKILL\.md:3: name "PDF_Tools" must be 1-64 lowercase letters/],
    ['---\nname: other-name\ndescription: d\n---\n', /skills\/pdf-tools\/SKILL\.md:2: name "other-name" must be the skill's folder name "pdf-tools"/],
    ['---\nname: pdf-tools\n---\nbody\n', /skills\/pdf-tools\/SKILL\.md:1: the front matter needs a description/],
    ['---\nname: pdf-tools\ndescription: d\nmetadata:\n  n: 3\n---\n', /skills\/pdf-tools\/SKILL\.md:4: metadata must map strings to strings/],
    ['---\nname: pdf-tools\ndescription: d\n\tx: 1\n---\n', /skills\/pdf-tools\/SKILL\.md:4: tabs cannot be used for indentation/],
    ['# no front matter\n', /skills\/pdf-tools\/SKILL\.md:1: SKILL\.md must begin with a "---" line/],
    // bounded before a node is made (issue 33, item 7): 16 MiB of front matter took 0.6-0.9 GB
    ['---\nname: pdf-tools\ndescription: d\nmetadata:\n' + Array.from({ length: 3000 }, (_, i) => `  key${i}: ${'v'.repeat(30)}\n`).join('') + '---\n',
      /skills\/pdf-tools\/SKILL\.md:\d+: the front matter is larger than 64 KiB/],
    // where a full YAML parser reads the key otherwise (issue 33, item 12): a NUL escape, the merge key
    ['---\nname: pdf-tools\n"description\\0zz": d\n---\n', /skills\/pdf-tools\/SKILL\.md:3: a key may not hold a NUL character/],
    ['---\nname: pdf-tools\ndescription: d\nmetadata: { "a\\0b": c }\n---\n', /skills\/pdf-tools\/SKILL\.md:4: a key may not hold a NUL character/],
    ['---\nname: pdf-tools\ndescription: d\nmetadata:\n  <<: { a: b }\n---\n', /skills\/pdf-tools\/SKILL\.md:5: the merge key "<<" is not supported/],
    ['---\nname: pdf-tools\ndescription: d\nmetadata: { <<: x }\n---\n', /skills\/pdf-tools\/SKILL\.md:4: the merge key "<<" is not supported/],
    // bounded: duplicate keys are checked pairwise, so a file of more than 4096 keys is refused at once
    ['---\nname: pdf-tools\ndescription: d\nmetadata:\n' + Array.from({ length: 5000 }, (_, i) => `  k${i}: v\n`).join('') + '---\n',
      /skills\/pdf-tools\/SKILL\.md:4098: more than 4096 keys: front matter holds a few fields/],
  ];
  const dir = await skillApp();
  try {
    const ok = await run(['check', dir]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /: 1 skill: pdf-tools \(3 files\)/);
    for (const [text, re] of cases) {
      await writeFile(path.join(dir, 'skills/pdf-tools/SKILL.md'), text);
      const r = await run(['check', dir]);
      assert.equal(r.code, 1, `${JSON.stringify(text)}: ${r.stdout}`);
      assert.match(r.stderr, re);
    }
    await writeFile(path.join(dir, 'skills/pdf-tools/SKILL.md'), SKILL_MD);
    // folders count toward the 512 of a skill (32k empty ones took 27.7 s to load)
    for (let i = 0; i < 600; i++) await mkdir(path.join(dir, `skills/pdf-tools/empty/d${i}`), { recursive: true });
    const folders = await run(['check', dir]);
    assert.equal(folders.code, 1, folders.stdout);
    assert.match(folders.stderr, /skills\/pdf-tools: more than 512 files and folders/);
    await rm(path.join(dir, 'skills/pdf-tools/empty'), { recursive: true });
    await symlink('../../app.lua', path.join(dir, 'skills/pdf-tools/leak.lua'));
    const leak = await run(['check', dir]);
    assert.equal(leak.code, 1);
    assert.match(leak.stderr, /skills\/pdf-tools\/leak\.lua: a symlink that leads out of the skill's folder/);
  } finally {
    await removeTemp(dir);
  }
});

test('hot reload: a changed, added or broken skill; resources/list_changed each time it changes', opts, async () => {
  const dir = await skillApp();
  try {
    await withRaw([dir], async (srv) => {
      await srv.initialize();
      const changed = () => srv.take((l) => l.includes('"notifications/resources/list_changed"'), 'resources/list_changed');
      await saveFile(path.join(dir, 'skills/pdf-tools/SKILL.md'), SKILL_MD.replace('Fills and merges', 'Fills, merges and signs'));
      await changed();
      let list = await srv.call('l1', 'skills/list', {});
      assert.match(list.result.skills[0].frontmatter.description, /^Fills, merges and signs/);
      await saveFile(path.join(dir, 'skills/csv-tools/SKILL.md'), '---\nname: csv-tools\ndescription: Cleans CSV files.\n---\n');
      await changed();
      list = await srv.call('l2', 'skills/list', {});
      assert.deepEqual(list.result.skills.map((s) => s.uri), ['skill://csv-tools/SKILL.md', 'skill://pdf-tools/SKILL.md']);
      // a broken skill: the last good version keeps serving, the error names the line
      await saveFile(path.join(dir, 'skills/csv-tools/SKILL.md'), '---\nname: csv-tools\n---\n');
      for (let i = 0; i < 100 && !srv.stderr.includes('csv-tools/SKILL.md:1: the front matter needs a description'); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(srv.stderr, /reload failed[\s\S]*skills\/csv-tools\/SKILL\.md:1: the front matter needs a description/);
      list = await srv.call('l3', 'skills/list', {});
      assert.equal(list.result.skills.length, 2);
    });
  } finally {
    await removeTemp(dir);
  }
});

test('the front matter as JSON is what a full YAML parser reads (block, folded, flow, quoted, typed)', opts, async () => {
  const yaml = [
    'name: yaml-tools',
    'description: >-',
    '  Folded text over',
    '  two lines.',
    'license: "Apache-2.0"  # a comment',
    "'quoted key': 'it''s'",
    'escaped: "tab\\there \\u00e9 \\x41"',
    'numbers: [1, -2.5, 0x1F, 0o17, 1e3, +7]',
    'flags: {on: true, off: FALSE, none: ~, empty: null}',
    'allowed-tools:',
    '- Bash(git:*)',
    '- Read',
    'notes: |',
    '  line one',
    '',
    '    indented',
    'plain: a plain value',
    '  continued here',
    'metadata:',
    '  version: "2.0"',
    'nested:',
    '  list:',
    '    - k: v',
    '      j: w',
    '    - - deep',
  ].join('\n');
  const dir = await tempApp({ 'scripts/none.lua': '', 'skills/yaml-tools/SKILL.md': `---\n${yaml}\n---\nbody\n` });
  try {
    await withRaw(['--no-watch', dir], async (srv) => {
      await srv.initialize();
      const r = await srv.call('g', 'skills/get', { uri: 'skill://yaml-tools/SKILL.md' });
      assert.deepEqual(r.result.skill.frontmatter, YAML.parse(yaml));
    });
  } finally {
    await removeTemp(dir);
  }
});

test('pack bundles skills/ and list shows the skills', opts, async () => {
  const dir = await skillApp();
  const out = await mkdtemp(path.join(tmpdir(), 'luamcp-skills-pack-'));
  try {
    const listed = await run(['list', dir]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^skills \(1\)\n {2}skill:\/\/pdf-tools\/SKILL\.md \(3 files, \d+ bytes\) Fills and merges PDF forms/m);
    const packed = await run(['pack', '--out', out, dir]);
    assert.equal(packed.code, 0, packed.stderr);
    const file = path.join(out, 'skilled-1.0.0.mcpb');
    const { stdout } = await sh('unzip', ['-Z1', file], { timeout: WAIT });
    const names = stdout.split('\n');
    for (const f of ['SKILL.md', 'references/GUIDE.md', 'assets.bin'])
      assert.ok(names.includes(`app/skills/pdf-tools/${f}`), `${f} in ${stdout}`);
    const { stdout: md } = await sh('unzip', ['-p', file, 'app/skills/pdf-tools/SKILL.md'], { timeout: WAIT });
    assert.equal(md, await readFile(path.join(dir, 'skills/pdf-tools/SKILL.md'), 'utf8'));
  } finally {
    await removeTemp(dir);
    await removeTemp(out);
  }
});

// issue 33, item 7: the number of skills and of folders watched was unbounded
// (20k folders: 20,004 inotify watches and 6.3 s before the first answer)
test('bounds: more than 1024 skills is a load error; past 4096 folders hot reload watches no more, and says so', opts, async () => {
  const many = await tempApp({ 'scripts/x.lua': 'local mcp = require "mcp"\n' });
  const deep = await tempApp({ 'scripts/x.lua': 'local mcp = require "mcp"\nmcp.tool { name = "t", description = "t", handler = function() return "t" end }\n' });
  try {
    for (let i = 0; i <= 1024; i++) {
      await mkdir(path.join(many, `skills/s${i}`), { recursive: true });
      await writeFile(path.join(many, `skills/s${i}/SKILL.md`), `---\nname: s${i}\ndescription: Skill ${i}.\n---\nBody.\n`);
    }
    const r = await run(['check', many]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /skills: more than 1024 skills/);
    for (let i = 0; i < 4200; i++) await mkdir(path.join(deep, `scripts/tree/d${i}`), { recursive: true });
    await withRaw([deep], async (srv) => {
      await srv.initialize();
      assert.match(srv.stderr, /hot reload: more than 4096 folders: .* not watched \(SIGHUP reloads\)/);
      assert.equal(srv.stderr.match(/more than 4096 folders/g).length, 1, 'said once');
    });
  } finally {
    await removeTemp(many);
    await removeTemp(deep);
  }
});
