// example-weather.test.mjs — examples/weather against a local fake of the
// two Open-Meteo APIs it calls: the forecast chain (two mcp.http calls),
// its errors, and local_time (mcp.exec of date with TZ, no shell).
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, TEST_TIMEOUT, RawServer } from './helpers.mjs';

const APP = path.join(REPO_ROOT, 'examples', 'weather');
const opts = { timeout: TEST_TIMEOUT };

/** The fake API: /v1/search?name=… and /v1/forecast?latitude=…&longitude=… */
async function fakeApi() {
  const seen = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    seen.push(url.pathname + url.search);
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/v1/search') {
      const name = url.searchParams.get('name');
      const results = name === 'São Paulo' ? [{ name: 'São Paulo', country: 'Brazil', latitude: -23.5, longitude: -46.6 }] : [];
      res.end(JSON.stringify(name === 'down' ? {} : { results }));
    } else if (url.pathname === '/v1/forecast') {
      if (url.searchParams.get('latitude') !== '-23.5') return res.writeHead(500).end('{}');
      setTimeout(() => res.end(JSON.stringify({ current_weather: { temperature: 21.5, windspeed: 7.2, weathercode: 61 } })), 50);
    } else {
      res.writeHead(404).end('{}');
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, seen, base: `http://127.0.0.1:${server.address().port}` };
}

async function withWeather(body) {
  const api = await fakeApi();
  const env = { ...process.env, WEATHER_GEOCODE_URL: `${api.base}/v1/search`, WEATHER_FORECAST_URL: `${api.base}/v1/forecast` };
  const srv = new RawServer([APP], { env });
  try {
    await srv.initialize();
    await body(srv, api);
  } finally {
    await srv.close();
    api.server.close();
  }
}

test('forecast: geocoding then the forecast, as structured content and text', opts, () =>
  withWeather(async (srv, api) => {
    const r = await srv.call(2, 'tools/call', { name: 'forecast', arguments: { city: 'São Paulo' } });
    assert.deepEqual(r.result.structuredContent, {
      city: 'São Paulo', country: 'Brazil', temperature_c: 21.5, wind_kmh: 7.2, conditions: 'light rain',
    });
    assert.ok(!r.result.isError);
    assert.deepEqual(api.seen, ['/v1/search?count=1&name=S%C3%A3o%20Paulo', '/v1/forecast?latitude=-23.5&longitude=-46.6&current_weather=true']);
  }));

test('forecast: an unknown city and a failing service are isError results the model can read', opts, () =>
  withWeather(async (srv) => {
    const none = await srv.call(2, 'tools/call', { name: 'forecast', arguments: { city: 'Atlantis' } });
    assert.equal(none.result.isError, true);
    assert.match(none.result.content[0].text, /no city called 'Atlantis'/);
    const down = await srv.call(3, 'tools/call', { name: 'forecast', arguments: { city: 'down' } });
    assert.equal(down.result.isError, true);
  }));

test('local_time: date runs with TZ set for the child only, no shell', opts, () =>
  withWeather(async (srv) => {
    const r = await srv.call(2, 'tools/call', { name: 'local_time', arguments: { timezone: 'UTC' } });
    assert.match(r.result.content[0].text, /^UTC: \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/, JSON.stringify(r));
  }));
