// mcp_call.mjs — one tool call with the official TypeScript SDK client, for
// the deploy tests (image.py, package.py, bundle.py), which are Python.
//
//   node mcp_call.mjs --http URL TOOL ARGS_JSON
//   node mcp_call.mjs --stdio TOOL ARGS_JSON -- COMMAND [ARG...]
//
// Connects (initialize), lists the tools, calls TOOL and prints one JSON
// line: { server: serverInfo, tools: [names], result: the call's result }.
// Exits 1 with the error on stderr when any step fails.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [mode, ...rest] = process.argv.slice(2);
let transport, tool, args;
if (mode === '--http') {
  [, tool, args] = rest;
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else if (mode === '--stdio') {
  const dash = rest.indexOf('--');
  [tool, args] = rest;
  const [command, ...cargs] = rest.slice(dash + 1);
  // the whole environment (the SDK passes only HOME, PATH, ... by default):
  // a bundle's user_config arrives as variables
  transport = new StdioClientTransport({ command, args: cargs, env: process.env, stderr: 'inherit' });
} else {
  console.error('usage: mcp_call.mjs --http URL TOOL ARGS_JSON | --stdio TOOL ARGS_JSON -- COMMAND [ARG...]');
  process.exit(2);
}
const client = new Client({ name: 'luamcp-deploy-test', version: '1.0.0' });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  console.log(JSON.stringify({ server: client.getServerVersion(), tools: tools.map((t) => t.name), result }));
  await client.close();
} catch (e) {
  console.error(`mcp_call: ${e.stack || e}`);
  process.exit(1);
}
