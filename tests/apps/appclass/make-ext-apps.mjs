// make-ext-apps.mjs — widgets/ext-apps.js of an app: the self-contained
// build of @modelcontextprotocol/ext-apps (dist/src/app-with-deps.js, an ES
// module ending in one `export{…}`) with that export turned into globals,
// `window.McpApps = {App, PostMessageTransport, …}`, as the README's recipe
// does; a widget then includes it with
//   <script type="module" src="inline:ext-apps.js"></script>
//
// One line more than the README's recipe, first in the file:
//   (globalThis.__zod_globalConfig??={}).jitless=true;
// The bundle's zod builds its schemas while the module loads and, unless
// jitless is already set, probes `new Function("")` then. Under the spec's
// default CSP (no 'unsafe-eval') the probe is caught, but Chromium reports it
// as a CSP violation (securitypolicyviolation, script-src "eval") before the
// App constructor's own z.config({jitless: true}) can prevent it. Setting
// zod's global config first avoids the probe. (ext-apps 2.0.4, zod 4.)
//
//   node tests/apps/appclass/make-ext-apps.mjs APP_DIR            (writes APP_DIR/widgets/ext-apps.js)
//   node tests/apps/appclass/make-ext-apps.mjs --as-readme APP_DIR  (the README's recipe as written)
//
// The package is resolved from tests/node_modules (tests/package.json).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(HERE, '..', '..', 'package.json')); // tests/

export const SOURCE = require.resolve('@modelcontextprotocol/ext-apps/app-with-deps');
export const JITLESS = '(globalThis.__zod_globalConfig??={}).jitless=true;\n';

/**
 * The README's transformation: the module's one trailing export{…} becomes
 * window.McpApps = {…}. With jitless, zod's global config comes first.
 */
export function globalsOf(source, { jitless = true } = {}) {
  const exportList = /export\s*\{([^}]*)\};?\s*$/;
  if (!exportList.test(source)) throw new Error(`${SOURCE}: no export{…} at the end: not the build this recipe expects`);
  const names = [];
  const js = source.replace(exportList, (_, list) => {
    const props = list.split(',').map((p) => {
      const [local, exported] = p.trim().split(/\s+as\s+/);
      names.push(exported || local);
      return `${exported || local}:${local}`;
    });
    return `window.McpApps={${props.join(',')}};`;
  });
  // another export or import statement would break the module
  if (/(^|[;}\n])\s*(export|import)\s*[{*]/.test(js)) throw new Error(`${SOURCE}: more than one export/import statement`);
  return { js: jitless ? JITLESS + js : js, names };
}

/** Write APP_DIR/widgets/ext-apps.js; returns {file, names, bytes}. */
export async function makeExtApps(appDir, opts) {
  const { js, names } = globalsOf(await readFile(SOURCE, 'utf8'), opts);
  const file = path.join(appDir, 'widgets', 'ext-apps.js');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, js);
  return { file, names, bytes: Buffer.byteLength(js) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const asReadme = args[0] === '--as-readme';
  const dir = asReadme ? args[1] : args[0];
  if (!dir) {
    console.error('usage: node make-ext-apps.mjs [--as-readme] APP_DIR');
    process.exit(2);
  }
  const { file, names, bytes } = await makeExtApps(dir, { jitless: !asReadme });
  console.log(`${file}: ${bytes} bytes, window.McpApps with ${names.length} names${asReadme ? ' (README recipe)' : ''}`);
}
