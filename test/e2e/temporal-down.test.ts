/**
 * With Temporal unreachable the API still starts and answers: 503 with a clear message
 * within seconds for task calls and /healthz, never a hang or a 500.
 */
import fs from 'node:fs';
import path from 'node:path';
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { freePort } from '../support/ports';
import { call } from '../support/client';
import { startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;

beforeAll(async () => {
  const nothingListens = await freePort();
  gw = await startGateway({ noWorker: true, temporalAddress: `127.0.0.1:${nothingListens}`, env: { TEMPORAL_RPC_TIMEOUT_MS: '2000' } });
  key = await gw.issueKey('down');
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

test('create answers 503 within seconds, with an OpenAI-style body', async () => {
  const started = Date.now();
  const res = await call<{ error: { code: string; message: string; type: string } }>(`${gw.url}/v1/video/create`, {
    key,
    json: { model: 'vidgen3', prompt: 'nobody home' },
  });
  expect(res.status).toBe(503);
  expect(res.body.error.code).toBe('temporal_unavailable');
  expect(res.body.error.type).toBe('server_error');
  expect(res.body.error.message).toMatch(/unavailable/i);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(Date.now() - started).toBeLessThan(8000);
});

test('a refused create leaves no stored input behind', async () => {
  const png = `data:image/png;base64,${THUMBNAIL_PNG.toString('base64')}`;
  const res = await call(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3', prompt: 'with an image', images: [png] } });
  expect(res.status).toBe(503);
  const inputs = path.join(gw.dataDir, 'storage', 'inputs');
  const files = fs.existsSync(inputs) ? fs.readdirSync(inputs, { recursive: true }).filter((f) => String(f).includes('.')) : [];
  expect(files).toEqual([]);
});

test('query answers 503 within seconds', async () => {
  const started = Date.now();
  const res = await call(`${gw.url}/v1/video/query?id=vidgen3:1795335070122-abcdefghij`, { key });
  expect(res.status).toBe(503);
  expect(Date.now() - started).toBeLessThan(8000);
});

test('/healthz is 503 and says Temporal is unreachable', async () => {
  const res = await call<{ status: string; temporal: string }>(`${gw.url}/healthz`);
  expect(res.status).toBe(503);
  expect(res.body.status).toBe('unavailable');
  expect(res.body.temporal).toMatch(/unreachable/);
});

test('validation still answers 400 before Temporal is needed', async () => {
  const res = await call(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3' } });
  expect(res.status).toBe(400);
});
