// fanout.mjs A B — event latency of --bus: a subscriptions/listen stream on
// B (and one on A), then 500 tools/call touch (mcp.notify_updated) on A one
// after the other; each time from sending the call to the listener's
// resources/updated. Prints p50/p99 for A -> Redis -> B and for A's own.
import http from 'node:http';

const [A, B] = process.argv.slice(2);
const DOC = 'test://scale/doc';
const N = 500;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const headers = (method, name) => ({
  'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
  'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}),
});

function post(hostport, method, params, name, onEvent) {
  const [host, port] = hostport.split(':');
  const body = JSON.stringify({ jsonrpc: '2.0', id: Math.floor(Math.random() * 1e9), method, params: { ...params, _meta: meta } });
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, method: 'POST', path: '/mcp', agent: onEvent ? false : agent, headers: headers(method, name) }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        if (!onEvent) return;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block.split('\n').find((l) => l.startsWith('data: '));
          if (data) onEvent(JSON.parse(data.slice(6)));
        }
      });
      res.on('end', () => resolve(buf));
      if (onEvent) resolve(res);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const pct = (xs, p) => xs.slice().sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
async function measure(listenOn) {
  let waiter = null;
  let acked;
  const ack = new Promise((r) => (acked = r));
  await post(listenOn, 'subscriptions/listen', { notifications: { resourceSubscriptions: [DOC] } }, undefined, (m) => {
    if (m.method === 'notifications/subscriptions/acknowledged') acked();
    if (m.method === 'notifications/resources/updated' && waiter) waiter();
  });
  await ack;
  const lat = [];
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    const got = new Promise((r) => (waiter = r));
    post(A, 'tools/call', { name: 'touch', arguments: {} }, 'touch');
    await got;
    lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return lat;
}
for (const [label, on] of [['fan-out A -> Redis -> listener on B', B], ['local delivery, listener on A', A]]) {
  const lat = await measure(on);
  console.log(`${label.padEnd(34)} p50 ${pct(lat, 50).toFixed(2)} ms  p99 ${pct(lat, 99).toFixed(2)} ms  (${N} events, from sending the call)`);
}
process.exit(0);
