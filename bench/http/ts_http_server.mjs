// TypeScript SDK peer of the HTTP benchmark: the same `echo` tool as
// bench/apps/echo ({ text } → the text back), served over Streamable HTTP
// by the official SDK (pinned in tests/package.json) on 127.0.0.1:PORT/mcp.
//
//   node bench/http/ts_http_server.mjs PORT               stateless
//   node bench/http/ts_http_server.mjs --stateful PORT    sessions
//   add --express to host it in the SDK's createMcpExpressApp() instead
//   of plain node:http (the SDK README's way; see the HTTP section of
//   bench/README.md for what it costs)
//
// Stateless follows the SDK's documented pattern: every POST gets its own
// McpServer and StreamableHTTPServerTransport ({ sessionIdGenerator:
// undefined }; a stateless transport refuses a second request). Stateful
// keeps one server + transport per session (randomUUID ids), created by an
// initialize POST without Mcp-Session-Id, found by that header afterwards.
// Both answer POSTs with plain JSON (enableJsonResponse: true), as luamcp does.
//
// By default the host is plain node:http, the thinnest one the SDK supports
// (no express middleware in the way), so the comparison gives the SDK its
// best case. The body is read and parsed here (express.json() with
// --express) and handed to the transport as parsedBody (the stateful mode
// must see whether it is an initialize request).
//
// The imports are relative paths into tests/node_modules because Node's ESM
// resolver would not search there from bench/ (see bench/ts_echo_server.mjs).
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js";
import { isInitializeRequest } from "../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js";
import { echoServer } from "../ts_echo_tool.mjs";

const args = process.argv.slice(2);
const stateful = args.includes("--stateful");
const useExpress = args.includes("--express");
const port = Number(args.filter((a) => !a.startsWith("--"))[0]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error("usage: node bench/http/ts_http_server.mjs [--stateful] [--express] PORT");
  process.exit(2);
}
const HOST = "127.0.0.1"; // loopback only, always

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined);
      } catch (e) {
        reject(e);
      }
    });
    req.on("error", reject);
  });
}

function jsonError(res, status, message) {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null });
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

// stateless: a fresh server + transport per request, closed with the response
async function handleStateless(req, res, body) {
  const server = echoServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

// stateful: one server + transport per session
const sessions = new Map();
async function handleStateful(req, res, body) {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid) return jsonError(res, 404, "Session not found");
    if (req.method !== "POST" || !isInitializeRequest(body)) return jsonError(res, 400, "No valid session ID");
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await echoServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

async function handle(req, res, body) {
  try {
    if (stateful) await handleStateful(req, res, body);
    else if (req.method !== "POST") jsonError(res, 405, "Method not allowed");
    else await handleStateless(req, res, body);
  } catch (e) {
    if (!res.headersSent) jsonError(res, 500, String(e?.message ?? e));
    else res.end();
  }
}

let http;
if (useExpress) {
  // The SDK's helper: express + Host-header (DNS rebinding) check + express.json().
  // Imported only here, so the node:http modes do not carry express in RSS.
  const { createMcpExpressApp } = await import(
    "../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/express.js"
  );
  const app = createMcpExpressApp({ host: HOST });
  app.all("/mcp", (req, res) => handle(req, res, req.method === "POST" ? req.body : undefined));
  http = createServer(app);
} else {
  http = createServer(async (req, res) => {
    if (new URL(req.url, "http://x").pathname !== "/mcp") return jsonError(res, 404, "Not found");
    let body;
    try {
      body = req.method === "POST" ? await readJson(req) : undefined;
    } catch (e) {
      return jsonError(res, 400, String(e?.message ?? e));
    }
    await handle(req, res, body);
  });
}
http.keepAliveTimeout = 30_000; // as civetweb's request_timeout_ms in luamcp
http.listen(port, HOST, () => {
  const mode = `${stateful ? "stateful" : "stateless"}, ${useExpress ? "express" : "node:http"}`;
  console.error(`ts_http_server: listening on http://${HOST}:${port}/mcp (${mode})`);
});
const stop = () => {
  http.close();
  http.closeAllConnections();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
