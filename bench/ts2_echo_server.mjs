// The TypeScript SDK v2 peer (@modelcontextprotocol/server 2.4.0, pinned in
// tests/package.json) of the stdio and HTTP benchmarks: the `echo` tool of
// bench/apps/echo, plus `ask` (one elicitation, the MRTR round trip of
// bench/apps/mrtr) written with the SDK's `inputRequired` builder.
//
//   node bench/ts2_echo_server.mjs              stdio: serveStdio(factory), the v2 entry;
//        it serves a 2025-era opening (initialize) and 2026-07-28 requests
//   node bench/ts2_echo_server.mjs --http PORT  Streamable HTTP on 127.0.0.1:PORT/mcp:
//        createMcpHandler(factory, { responseMode: "json" }) on node:http; the
//        2026-07-28 leg answers plain JSON, the 2025 leg (the SDK's stateless
//        legacy fallback, a fresh server per request) answers in SSE
//   ... --auth JWKS  every request gated by the SDK's requireBearerAuth with an
//        OAuthTokenVerifier that checks an RS256 JWT (node:crypto, the key of
//        the JWKS file; iss, aud, exp), as luamcp's --auth-resource does: the
//        peer of bench/http's luamcp-auth
//
// `ask` on a 2026-07-28 request answers input_required (inputRequests.q0)
// until the retry carries inputResponses.q0, then "ok". The SDK does not
// sign requestState (luamcp does, HMAC-SHA256), so none is minted here.
// As in bench/io/ts_fetch_server.mjs, the imports are relative paths into
// tests/node_modules and the node adapter is inlined (what `toNodeHandler`
// of @modelcontextprotocol/node does; that package is not pinned).
import { serveFetchHandler } from "./ts_node_http.mjs";
import { createPublicKey, verify } from "node:crypto";
import { readFileSync } from "node:fs";
import { McpServer, OAuthError, OAuthErrorCode, createMcpHandler, inputRequired, requireBearerAuth } from "../tests/node_modules/@modelcontextprotocol/server/dist/index.mjs";
import { serveStdio } from "../tests/node_modules/@modelcontextprotocol/server/dist/stdio.mjs";
import { z } from "../tests/node_modules/zod/index.js";

function echoServer() {
  const server = new McpServer({ name: "ts2-echo", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes the given text back.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool("ask", { description: "Asks the client once, then says ok." }, async (ctx) => {
    if (ctx.mcpReq?.inputResponses?.q0 === undefined) {
      return inputRequired({
        inputRequests: {
          q0: inputRequired.elicit({
            message: "x",
            requestedSchema: { type: "object", properties: { a: { type: "string" } } },
          }),
        },
      });
    }
    return { content: [{ type: "text", text: "ok" }] };
  });
  return server;
}

const args = process.argv.slice(2);
const httpAt = args.indexOf("--http");

if (httpAt < 0) {
  // No explicit exit: once the client closes stdin the transport closes and Node exits.
  serveStdio(() => echoServer());
} else {
  const port = Number(args[httpAt + 1]);
  const handler = createMcpHandler(() => echoServer(), { responseMode: "json" });
  const authAt = args.indexOf("--auth");
  if (authAt < 0) {
    serveFetchHandler(handler, port);
  } else {
    const gate = requireBearerAuth({ verifier: jwtVerifier(args[authAt + 1]),
      expectedResource: new URL("https://mcp.bench.example/mcp"),
      resourceMetadataUrl: "https://mcp.bench.example/.well-known/oauth-protected-resource/mcp" });
    serveFetchHandler({ fetch: async (request) => {
      const auth = await gate(request);
      return auth instanceof Response ? auth : handler.fetch(request, { authInfo: auth });
    } }, port);
  }
}

// An RS256 JWT access token of the bench's issuer, for the bench's resource.
function jwtVerifier(jwksFile) {
  const [jwk] = JSON.parse(readFileSync(jwksFile, "utf8")).keys;
  const key = createPublicKey({ key: jwk, format: "jwk" });
  const invalid = (why) => new OAuthError(OAuthErrorCode.InvalidToken, why);
  return {
    async verifyAccessToken(token) {
      const [h, p, sig] = token.split(".");
      if (!sig) throw invalid("malformed");
      const header = JSON.parse(Buffer.from(h, "base64url"));
      if (header.alg !== "RS256" || header.typ !== "at+jwt") throw invalid("alg or typ");
      if (!verify("sha256", Buffer.from(`${h}.${p}`), key, Buffer.from(sig, "base64url"))) throw invalid("signature");
      const c = JSON.parse(Buffer.from(p, "base64url"));
      if (c.iss !== "https://as.bench.example") throw invalid("issuer");
      if (c.aud !== "https://mcp.bench.example/mcp") throw invalid("audience");
      if (!(c.exp > Date.now() / 1000)) throw invalid("expired");
      return { token, clientId: c.client_id ?? "bench", scopes: (c.scope ?? "").split(" ").filter(Boolean),
        expiresAt: c.exp, resource: new URL(c.aud) };
    },
  };
}
