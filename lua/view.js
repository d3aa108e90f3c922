/* luamcp view helper — the view side of MCP Apps (SEP-1865, protocol
 * 2026-01-26) for widgets that have no build step. A widget includes it with
 *   <script src="luamcp:view.js"></script>
 * and luamcp puts this file inline there when it serves the widget, so it
 * works under the spec's default CSP (no network). It speaks JSON-RPC 2.0
 * over postMessage with the host: the ui/initialize handshake, tool input
 * and results, calls back to the server, messages to the chat, size
 * changes, and replies to ping and ui/resource-teardown.
 *
 *   const view = window.mcpView;
 *   view.on("toolresult", (result) => render(result.structuredContent));
 *   await view.callTool("suggest_gifts", { budget: 40 });
 *   await view.sendMessage("Tell me more about the tea sampler");
 */
(function () {
  "use strict";
  if (window.mcpView) return; /* included twice */

  var PROTOCOL_VERSION = "2026-01-26";
  var host = window.parent;
  var nextId = 1;
  var pending = {};
  var listeners = {
    toolinput: [], toolinputpartial: [], toolresult: [], toolcancelled: [],
    hostcontext: [], teardown: []
  };
  /* the latest of each, replayed to listeners added later */
  var latest = {};

  function post(message) { host.postMessage(message, "*"); }

  function request(method, params) {
    var id = nextId++;
    post({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
    });
  }

  function notify(method, params) {
    post({ jsonrpc: "2.0", method: method, params: params || {} });
  }

  function reply(id, result) { post({ jsonrpc: "2.0", id: id, result: result }); }

  function emit(event, value) {
    latest[event] = value;
    listeners[event].forEach(function (fn) {
      try { fn(value); } catch (e) { console.error(e); }
    });
  }

  /* The host's theme: its CSS variables on :root, and light or dark. */
  function applyHostContext(ctx) {
    var root = document.documentElement;
    var vars = ctx.styles && ctx.styles.variables;
    if (vars) {
      Object.keys(vars).forEach(function (name) {
        if (vars[name]) root.style.setProperty(name, vars[name]);
      });
    }
    if (ctx.theme) {
      root.dataset.theme = ctx.theme;
      root.style.colorScheme = ctx.theme;
    }
    var fonts = ctx.styles && ctx.styles.css && ctx.styles.css.fonts;
    if (fonts && !document.getElementById("luamcp-host-fonts")) {
      var style = document.createElement("style");
      style.id = "luamcp-host-fonts";
      style.textContent = fonts;
      document.head.appendChild(style);
    }
  }

  function handle(message) {
    var params = message.params || {};
    switch (message.method) {
      case "ui/notifications/tool-input":
        emit("toolinput", params.arguments || {});
        break;
      case "ui/notifications/tool-input-partial":
        emit("toolinputpartial", params.arguments || {});
        break;
      case "ui/notifications/tool-result":
        emit("toolresult", params);
        break;
      case "ui/notifications/tool-cancelled":
        emit("toolcancelled", params);
        break;
      case "ui/notifications/host-context-changed":
        Object.assign(view.hostContext, params);
        applyHostContext(view.hostContext);
        emit("hostcontext", view.hostContext);
        break;
      case "ui/resource-teardown":
        Promise.all(listeners.teardown.map(function (fn) { return fn(); }))
          .then(function () { reply(message.id, {}); }, function () { reply(message.id, {}); });
        break;
      case "ping":
        reply(message.id, {});
        break;
      default:
        if (message.id !== undefined) {
          post({ jsonrpc: "2.0", id: message.id,
                 error: { code: -32601, message: "Method not found: " + message.method } });
        }
    }
  }

  window.addEventListener("message", function (event) {
    if (event.source !== host) return;
    var message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined && message.id !== undefined) {
      var p = pending[message.id];
      if (!p) return;
      delete pending[message.id];
      if (message.error) {
        var err = new Error(message.error.message);
        err.code = message.error.code;
        err.data = message.error.data;
        p.reject(err);
      } else {
        p.resolve(message.result);
      }
      return;
    }
    if (message.method) handle(message);
  });

  /* Tell the host how big the content is, whenever that changes. */
  function watchSize() {
    var last = "";
    function send() {
      /* the root's own box: scrollHeight never drops below the frame's
         height, so content that shrinks would never be reported */
      var box = document.documentElement.getBoundingClientRect();
      var width = Math.ceil(box.width), height = Math.ceil(box.height);
      var key = width + "x" + height;
      if (key === last) return;
      last = key;
      notify("ui/notifications/size-changed", { width: width, height: height });
    }
    if (window.ResizeObserver) new ResizeObserver(send).observe(document.documentElement);
    send();
  }

  var view = {
    hostContext: {},
    hostCapabilities: {},
    hostInfo: null,
    /* on(event, fn): toolinput, toolinputpartial, toolresult, toolcancelled,
       hostcontext, teardown (fn may return a promise) */
    on: function (event, fn) {
      if (!listeners[event]) throw new Error("mcpView.on: unknown event " + event);
      listeners[event].push(fn);
      if (latest[event] !== undefined) fn(latest[event]);
      return view;
    },
    callTool: function (name, args) {
      return request("tools/call", { name: name, arguments: args || {} });
    },
    readResource: function (uri) { return request("resources/read", { uri: uri }); },
    sendMessage: function (text) {
      return request("ui/message", { role: "user", content: [{ type: "text", text: String(text) }] });
    },
    openLink: function (url) { return request("ui/open-link", { url: String(url) }); },
    updateModelContext: function (context) { return request("ui/update-model-context", context || {}); },
    requestDisplayMode: function (mode) { return request("ui/request-display-mode", { mode: mode }); },
    log: function (level, data) { notify("notifications/message", { level: level, data: data }); },
    requestTeardown: function () { notify("ui/notifications/request-teardown", {}); }
  };

  view.ready = request("ui/initialize", {
    appInfo: { name: document.title || "luamcp widget", version: "1.0.0" },
    appCapabilities: { availableDisplayModes: ["inline"] },
    protocolVersion: PROTOCOL_VERSION
  }).then(function (result) {
    view.hostContext = result.hostContext || {};
    view.hostCapabilities = result.hostCapabilities || {};
    view.hostInfo = result.hostInfo || null;
    applyHostContext(view.hostContext);
    notify("ui/notifications/initialized", {});
    emit("hostcontext", view.hostContext);
    watchSize();
    return view;
  });

  window.mcpView = view;
})();
