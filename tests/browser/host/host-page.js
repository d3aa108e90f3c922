// host-page.js — the browser half of the test host (bundled by esbuild at
// test time). It is a web host of MCP Apps built on the official AppBridge +
// PostMessageTransport of @modelcontextprotocol/ext-apps: a sandbox proxy
// iframe on a second origin (served with the view's CSP as an HTTP header),
// which loads the view in an inner iframe, as in ext-apps' basic-host.
//
// There is no MCP client in the page: AppBridge's built-in forwarding expects
// the v2 SDK, so the bridge gets null and every request of the view that
// needs the server goes to functions the Node test exposed on window
// (Playwright's page.exposeFunction), where the host checks visibility and
// relays to the real server over stdio:
//   __hostCallTool(params)      -> {result} | {error: {code, message}}
//   __hostReadResource(params)  -> {result} | {error}
//   __hostEvent(kind, data)     -> records ui/message, ui/update-model-context,
//                                  ui/open-link, size changes, logs, …
// The test drives the page through window.testHost (page.evaluate).
import { AppBridge, PostMessageTransport, buildAllowAttribute } from '@modelcontextprotocol/ext-apps/app-bridge';

const HOST_INFO = { name: 'luamcp-test-host', version: '1.0.0' };

/** A JSON-RPC error the bridge sends back to the view as is. */
function rpcError({ code, message, data }) {
  const err = new Error(message);
  err.code = code;
  if (data !== undefined) err.data = data;
  return err;
}

async function relay(answer) {
  const a = await answer;
  if (a.error) throw rpcError(a.error);
  return a.result;
}

let current = null; // { bridge, outer, appInfo }

window.testHost = {
  /**
   * Show a view: html and _meta.ui of its resources/read content, the
   * sandbox origin, the host context. Resolves once ui/initialize and
   * ui/notifications/initialized are done, with what the view said.
   */
  async mount({ html, ui = {}, sandboxOrigin, hostContext, container = 'view' }) {
    const slot = document.getElementById(container);
    slot.replaceChildren();
    slot.classList.toggle('bordered', ui.prefersBorder === true);

    const outer = document.createElement('iframe');
    outer.id = 'sandbox';
    outer.title = 'MCP App';
    // the proxy needs allow-same-origin to write into its inner frame
    outer.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
    const allow = buildAllowAttribute(ui.permissions);
    if (allow) outer.setAttribute('allow', allow); // delegated on to the inner frame
    const q = new URLSearchParams({ csp: JSON.stringify(ui.csp ?? null) });
    outer.src = `${sandboxOrigin}/sandbox.html?${q}`;

    const hostCapabilities = {
      openLinks: {},
      serverTools: {},
      serverResources: {},
      logging: {},
      message: { text: {} },
      updateModelContext: { text: {}, structuredContent: {} },
      sandbox: { csp: ui.csp, permissions: ui.permissions },
    };
    const bridge = new AppBridge(null, HOST_INFO, hostCapabilities, { hostContext });
    const event = (kind, data) => window.__hostEvent(kind, data ?? null);

    bridge.oncalltool = (params) => relay(window.__hostCallTool(params));
    bridge.onreadresource = (params) => relay(window.__hostReadResource(params));
    bridge.onlistresources = () => Promise.resolve({ resources: [] });
    bridge.onlistresourcetemplates = () => Promise.resolve({ resourceTemplates: [] });
    bridge.onlistprompts = () => Promise.resolve({ prompts: [] });
    bridge.onmessage = async (params) => {
      await event('message', params);
      return {};
    };
    bridge.onupdatemodelcontext = async (params) => {
      await event('model-context', params);
      return {};
    };
    bridge.onopenlink = async (params) => {
      await event('open-link', params);
      return {};
    };
    bridge.onrequestdisplaymode = async () => ({ mode: 'inline' });
    bridge.onloggingmessage = (params) => event('log', params);
    bridge.onrequestteardown = () => event('request-teardown', {});
    bridge.onsizechange = ({ height }) => {
      // inline mode with a maxHeight: the view sizes itself (up to the limit)
      const max = hostContext?.containerDimensions?.maxHeight ?? Infinity;
      if (height !== undefined) outer.style.height = `${Math.min(height, max)}px`;
      event('size', { height });
    };

    const sandboxReady = new Promise((resolve) => (bridge.onsandboxready = resolve));
    const initialized = new Promise((resolve) => (bridge.oninitialized = resolve));
    slot.appendChild(outer);
    await bridge.connect(new PostMessageTransport(outer.contentWindow, outer.contentWindow));
    await sandboxReady;
    await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
    await initialized;
    current = { bridge, outer, hostContext: { ...hostContext } };
    return {
      appInfo: bridge.getAppVersion(),
      appCapabilities: bridge.getAppCapabilities(),
    };
  },

  toolInputPartial(args) {
    return current.bridge.sendToolInputPartial({ arguments: args });
  },
  toolInput(args) {
    return current.bridge.sendToolInput({ arguments: args });
  },
  toolResult(result) {
    return current.bridge.sendToolResult(result);
  },
  toolCancelled(reason) {
    return current.bridge.sendToolCancelled({ reason });
  },
  /** Merge into the host context (the bridge takes a whole one and sends only what changed). */
  setHostContext(ctx) {
    current.hostContext = { ...current.hostContext, ...ctx };
    current.bridge.setHostContext(current.hostContext);
    if (ctx.theme) document.documentElement.dataset.theme = ctx.theme;
  },
  async teardown() {
    await current.bridge.teardownResource({});
    await current.bridge.close();
    current.outer.remove();
    current = null;
  },
};
