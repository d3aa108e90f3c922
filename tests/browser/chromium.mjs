// chromium.mjs — which Chromium the browser tests drive, and how. No
// imports beyond node's, so a test can read it before it knows whether
// playwright-core and the rest are installed (dev.test.mjs skips then).
export const CHROMIUM = process.env.LUAMCP_CHROMIUM || '/usr/bin/chromium';
// as the machine notes say: no network of its own, no first-run work; the
// profile is a fresh --user-data-dir per run
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
