// streams.mjs HOST:PORT N — holds N subscriptions/listen streams open at
// HOST:PORT (an instance, or nginx in front of it) for bench/cluster/run.sh
// to read the memory they cost: prints "open N" once every stream is
// acknowledged, then keeps them until its stdin closes.
import http from 'node:http';

const [target, count] = process.argv.slice(2);
const [host, port] = target.split(':');
const N = Number(count);
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const headers = {
  'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
  'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'subscriptions/listen',
};

const open = [];
function listen(i) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'subscriptions/listen',
    params: { notifications: { toolsListChanged: true, resourceSubscriptions: ['test://scale/doc'] }, _meta: meta } });
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, method: 'POST', path: '/mcp', agent: false, headers }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        if (buf.includes('notifications/subscriptions/acknowledged')) resolve();
      });
      res.on('end', () => reject(new Error(`stream ${i} ended: ${res.statusCode} ${buf.slice(0, 200)}`)));
    });
    req.on('error', reject);
    req.end(body);
    open.push(req);
  });
}

for (let i = 0; i < N; i += 50) await Promise.all(Array.from({ length: Math.min(50, N - i) }, (_, k) => listen(i + k)));
console.log(`open ${N}`);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
