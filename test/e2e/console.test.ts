/**
 * The console (/console) in headless Debian chromium against `npm start`'s process (embedded
 * Temporal, store and simulator): a key holder signs in, makes a video from the form and
 * watches it finish and play, streams a playground answer and finds the spend in the chart and
 * the ledger; an operator makes a key, copies its secret, grants credits and revokes it; and the
 * security promises: admin refused to a key session, CSRF, CSP, the HttpOnly SameSite=Strict
 * cookie, and a sign-out that ends the session on the server. It also writes the README's
 * screenshots into docs/console/. Needs chromium (`node scripts/setup.mjs --browser`).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { findChromium, launchChromium } from '../../bench/temporal-ui/chromium';
import { startEmbeddedGateway, type EmbeddedGateway } from '../../bench/temporal-ui/embedded-gateway';
import { projectRoot } from '../../src/config/paths';
import { TEST_DATA } from '../support/processes';

const SHOTS_DIR = path.join(projectRoot(), 'docs', 'console');
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const UI_TIMEOUT = 60_000;
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

let gateway: EmbeddedGateway | undefined;
let browser: Browser | undefined;
let base: string;
let keyHolder: { id: string; key: string };
let keyContext: BrowserContext;
let keyPage: Page;
let taskId: string;
/** Every URL the browser asked for, in every context: no secret may be in one. */
const requested: string[] = [];
/** The secret of the key the operator creates in the console. */
let createdSecret = '';

async function adminCall(method: string, route: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { Authorization: `Bearer ${gateway!.adminToken}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function signIn(page: Page, as: 'key' | 'admin', secret: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByLabel(as === 'key' ? 'Key holder (API key)' : 'Operator (admin token)').check();
  await page.locator('#secret').fill(secret);
  await page.locator('#secret').press('Enter'); // the form submits with Enter
  await page.locator('#page-title').waitFor({ timeout: UI_TIMEOUT });
}

/** A viewport screenshot into docs/console/<name>-<desktop|phone>.png. */
async function shot(page: Page, name: string, width: 'desktop' | 'phone'): Promise<void> {
  fs.mkdirSync(SHOTS_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS_DIR, `${name}-${width}.png`) });
}

/** Desktop and phone shots of the page at `route` (the same session, the viewport resized). */
async function shotBoth(page: Page, route: string, name: string, ready: string): Promise<void> {
  for (const [width, size] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(size);
    await page.goto(`${base}${route}`);
    await page.locator(ready).first().waitFor({ timeout: UI_TIMEOUT });
    await shot(page, name, width);
  }
  await page.setViewportSize(DESKTOP);
}

/**
 * Polls a page expression until it is true. Not page.waitForFunction: a string predicate is
 * compiled in the page with eval, which the console's CSP (no 'unsafe-eval') refuses, while
 * page.evaluate goes through the DevTools protocol.
 */
async function waitForExpression(page: Page, expression: string): Promise<void> {
  const deadline = Date.now() + UI_TIMEOUT;
  while ((await page.evaluate(expression)) !== true) {
    if (Date.now() > deadline) throw new Error(`not true within ${UI_TIMEOUT / 1000} s: ${expression}`);
    await page.waitForTimeout(100);
  }
}

function expectPng(file: string, size: { width: number; height: number }): void {
  const png = fs.readFileSync(file);
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  expect({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) }).toEqual(size);
}

beforeAll(async () => {
  const chromiumPath = findChromium(); // no browser: fail here with the install hint, before starting anything
  const dataDir = path.join(TEST_DATA, 'console');
  fs.rmSync(dataDir, { recursive: true, force: true });
  // Short simulated jobs: the task's progress still moves through several polls.
  gateway = await startEmbeddedGateway(dataDir, { SIMULATOR_JOB_MS: '4000' });
  base = gateway.apiUrl;
  browser = await launchChromium(chromiumPath);
  const created = await adminCall('POST', '/admin/keys', { name: 'console holder', quota: 100_000_000 });
  expect(created.status).toBe(201);
  keyHolder = created.body as { id: string; key: string };
  keyContext = await browser.newContext({ viewport: DESKTOP, colorScheme: 'light' });
  keyContext.on('request', (r) => requested.push(r.url()));
  keyPage = await keyContext.newPage();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
}, 60_000);

test('the sign-in page is served with a strict CSP and answers a wrong key with the API error', async () => {
  const res = await keyPage.goto(`${base}/console`);
  const csp = res?.headers()['content-security-policy'] ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toMatch(/script-src 'self'(;|$)/);
  expect(csp).toMatch(/style-src 'self'(;|$)/);
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  await keyPage.locator('#secret').waitFor();
  await shot(keyPage, 'sign-in', 'desktop');
  await keyPage.locator('#secret').fill('sk-wrong');
  await keyPage.locator('#secret').press('Enter');
  await expect(keyPage.locator('.error').first().textContent({ timeout: UI_TIMEOUT })).resolves.toMatch(/^401/);
});

test('a key holder creates a video from the form, watches it reach 100 % and plays it', async () => {
  await signIn(keyPage, 'key', keyHolder.key);
  expect(await keyPage.locator('#page-title').textContent()).toBe('Overview');
  await keyPage.getByRole('link', { name: 'New video' }).first().click();
  await keyPage.locator('#video-prompt').waitFor();
  await keyPage.locator('#video-model').selectOption('vidgen3');
  await keyPage.locator('#video-prompt').fill('a red fox running through snow');
  await keyPage.getByRole('button', { name: 'Create video' }).click();
  await keyPage.waitForURL(/\/console\/tasks\/[^/]+$/, { timeout: UI_TIMEOUT });
  taskId = decodeURIComponent(new URL(keyPage.url()).pathname.split('/').pop()!);
  expect(taskId).toMatch(/^vidgen3:/);
  expect(keyPage.url()).not.toContain(keyHolder.key);

  // The bar is seen below 100 first, then at 100 with the task completed: it updates without a reload.
  const seen: number[] = [];
  for (;;) {
    const value = Number(await keyPage.locator('.task-detail progress').getAttribute('value', { timeout: UI_TIMEOUT }));
    if (seen[seen.length - 1] !== value) seen.push(value);
    if (value === 100) break;
    await keyPage.waitForTimeout(200);
  }
  expect(seen[0]).toBeLessThan(100);
  expect(seen).toEqual([...seen].sort((a, b) => a - b));
  await keyPage.locator('.badge-completed').first().waitFor({ timeout: UI_TIMEOUT });
  await keyPage.locator('.timeline li[data-event="completed"]').waitFor({ timeout: UI_TIMEOUT });
  const events = await Promise.all((await keyPage.locator('.timeline li').all()).map((li) => li.getAttribute('data-event')));
  // The charge is written before the workflow starts, so 'charged' may come first.
  expect(events).toEqual(expect.arrayContaining(['created', 'charged', 'completed']));
  expect(events[events.length - 1]).toBe('completed');

  await waitForExpression(keyPage, "(() => { const v = document.querySelector('video.player'); return !!v && v.readyState >= 2 && v.duration > 0; })()");
  const played = await keyPage.evaluate(
    "(async () => { const v = document.querySelector('video.player'); v.muted = true; await v.play(); await new Promise((r) => setTimeout(r, 400)); return { readyState: v.readyState, duration: v.duration, currentTime: v.currentTime, src: v.currentSrc }; })()",
  );
  const video = played as { readyState: number; duration: number; currentTime: number; src: string };
  expect(video.readyState).toBeGreaterThanOrEqual(2);
  expect(video.duration).toBeGreaterThan(0);
  expect(video.currentTime).toBeGreaterThan(0);
  expect(video.src).toMatch(/\/files\/videos\/vidgen3\/.+\.mp4\?expires=/);
  await shot(keyPage, 'task', 'desktop');
  // Light and dark: the system's choice is followed as it changes (a media-query change event,
  // so polled), and the toggle overrides it.
  const shows = (colour: string) => waitForExpression(keyPage, `getComputedStyle(document.body).backgroundColor === '${colour}'`);
  const [light, dark] = ['rgb(246, 247, 249)', 'rgb(17, 20, 24)'];
  await shows(light);
  await keyPage.emulateMedia({ colorScheme: 'dark' });
  await shows(dark);
  await shot(keyPage, 'task-dark', 'desktop');
  const toggle = keyPage.getByRole('button', { name: /Change theme/ });
  await toggle.click(); // auto -> light, whatever the system prefers
  await shows(light);
  await toggle.click(); // light -> dark
  await shows(dark);
  await toggle.click(); // dark -> auto: the system's dark again
  await shows(dark);
  await keyPage.emulateMedia({ colorScheme: 'light' });
  await shows(light);
}, 180_000);

test('the playground streams an answer: the text grows over several updates', async () => {
  await keyPage.getByRole('link', { name: 'Playground' }).first().click();
  await keyPage.locator('#chat-model option', { hasText: 'cm-sonnet-4.5' }).waitFor({ state: 'attached', timeout: UI_TIMEOUT });
  await keyPage.locator('#chat-model').selectOption('cm-sonnet-4.5');
  // Record the answer's length at every change of the conversation.
  await keyPage.evaluate(
    "(() => { window.__lengths = []; const list = document.querySelector('.conversation'); new MutationObserver(() => { const t = list.querySelectorAll('.turn-assistant .turn-text'); const last = t[t.length - 1]; if (last) window.__lengths.push(last.textContent.length); }).observe(list, { childList: true, subtree: true, characterData: true }); })()",
  );
  await keyPage.locator('#chat-input').fill('Tell me about foxes in winter [sim:delay=120]');
  await keyPage.locator('#chat-input').press('Enter');
  await keyPage.locator('.turn-assistant .turn-text[data-streaming="true"]').waitFor({ timeout: UI_TIMEOUT });
  await keyPage.locator('.turn-assistant .turn-text[data-streaming="true"]').waitFor({ state: 'detached', timeout: UI_TIMEOUT });
  const answer = (await keyPage.locator('.turn-assistant .turn-text').last().textContent()) ?? '';
  expect(answer.length).toBeGreaterThan(0);
  const lengths = (await keyPage.evaluate('window.__lengths')) as number[];
  const growth = [...new Set(lengths.filter((n) => n > 0))];
  expect(growth.length).toBeGreaterThan(1);
  expect(growth).toEqual([...growth].sort((a, b) => a - b));
  expect(growth[growth.length - 1]).toBe(answer.length);
  await shot(keyPage, 'playground', 'desktop');
}, 120_000);

test('the spend shows in the chart and the ledger has the charge with its model', async () => {
  await keyPage.getByRole('link', { name: 'Overview' }).first().click();
  await keyPage.locator('.chart canvas').first().waitFor({ timeout: UI_TIMEOUT });
  await waitForExpression(keyPage, "document.querySelector('.model-bars')?.textContent.includes('vidgen3') === true");
  expect(await keyPage.locator('.u-legend').textContent()).toContain('vidgen3');
  const bars = await keyPage.locator('.model-bars li').allTextContents();
  expect(bars.find((b) => b.startsWith('vidgen3'))).toMatch(/3,200,000/);
  expect(bars.some((b) => b.startsWith('cm-sonnet-4.5'))).toBe(true);
  await keyPage.getByRole('button', { name: 'per hour' }).click();
  await waitForExpression(keyPage, "document.querySelector('.model-bars')?.textContent.includes('vidgen3') === true");

  await keyPage.getByRole('link', { name: 'Ledger' }).first().click();
  const charge = keyPage.locator('table.ledger tr[data-kind="charge"]', { hasText: taskId });
  await charge.waitFor({ timeout: UI_TIMEOUT });
  expect(await charge.textContent()).toContain('vidgen3');
  await keyPage.locator('#ledger-kind').selectOption('usage');
  await keyPage.getByRole('button', { name: 'Filter' }).click();
  // The filtered page replaces the charge row; then every row left is a usage entry.
  await charge.waitFor({ state: 'detached', timeout: UI_TIMEOUT });
  const kinds = await Promise.all((await keyPage.locator('table.ledger tr[data-kind]').all()).map((row) => row.getAttribute('data-kind')));
  expect(kinds.length).toBeGreaterThan(0);
  expect(new Set(kinds)).toEqual(new Set(['usage']));

  await shotBoth(keyPage, '/console', 'overview', '.chart canvas');
  await shotBoth(keyPage, '/console/tasks', 'tasks', 'table.tasks');
  await shotBoth(keyPage, '/console/create', 'create', '#video-prompt');
  await shotBoth(keyPage, '/console/ledger', 'ledger', 'table.ledger tr[data-kind]');
  // Phone: the navigation collapses behind the Menu button.
  await keyPage.setViewportSize(PHONE);
  await keyPage.goto(`${base}/console/tasks`);
  const nav = keyPage.locator('#nav');
  expect(await nav.isVisible()).toBe(false);
  await keyPage.getByRole('button', { name: 'Menu' }).click();
  expect(await nav.isVisible()).toBe(true);
  await shot(keyPage, 'menu', 'phone');
  await keyPage.setViewportSize(DESKTOP);
}, 120_000);

test('a motion video with an uploaded image, a character made from it, and the picker casting it', async () => {
  // /v1/videos multipart: the model's seconds and sizes, the image as input_reference.
  await keyPage.goto(`${base}/console/create`);
  await keyPage.locator('#video-model').selectOption('motion-2');
  await keyPage.locator('#video-seconds').selectOption('4');
  await keyPage.locator('#video-size').selectOption('1280x720');
  expect(await keyPage.locator('#video-aspect').count()).toBe(0); // not a field of this model
  await keyPage.locator('#video-prompt').fill('a kite over the sea');
  await keyPage.locator('#video-images').setInputFiles({ name: 'reference.png', mimeType: 'image/png', buffer: PNG_1PX });
  await keyPage.getByRole('button', { name: 'Create video' }).click();
  await keyPage.waitForURL(/\/console\/tasks\/motion-2%3A[^/]+$/, { timeout: UI_TIMEOUT });
  const motionTask = decodeURIComponent(new URL(keyPage.url()).pathname.split('/').pop()!);
  await keyPage.locator('.badge-completed').first().waitFor({ timeout: UI_TIMEOUT });
  const read = (await (
    await fetch(`${base}/v1/videos/${encodeURIComponent(motionTask)}`, { headers: { Authorization: `Bearer ${keyHolder.key}` } })
  ).json()) as {
    seconds: number;
    size: string;
  };
  expect([read.seconds, read.size]).toEqual([4, '1280x720']);

  await keyPage.getByRole('link', { name: 'Characters' }).first().click();
  await keyPage.locator('select option', { hasText: motionTask }).waitFor({ state: 'attached', timeout: UI_TIMEOUT });
  await keyPage.getByLabel('Completed motion task').selectOption(motionTask);
  await keyPage.getByRole('button', { name: 'Make character' }).click();
  const card = keyPage.locator('.character-grid li').first();
  await card.waitFor({ timeout: UI_TIMEOUT });
  const username = ((await card.locator('.character-name').textContent()) ?? '').replace(/^@/, '');
  expect(username).not.toBe('');
  await waitForExpression(
    keyPage,
    "(() => { const img = document.querySelector('.character-grid img'); return !!img && img.complete && img.naturalWidth > 0; })()",
  );
  await shotBoth(keyPage, '/console/characters', 'characters', '.character-grid img');

  // The picker inserts @username at the cursor; the task it makes casts the character.
  await keyPage.goto(`${base}/console/create`);
  await keyPage.locator('#video-model').selectOption('motion-2');
  await keyPage.locator('#video-prompt').fill('walking on the beach');
  await keyPage.locator('#video-prompt').press('Control+Home'); // the cursor at the start
  await keyPage.getByRole('button', { name: `@${username}` }).click();
  expect(await keyPage.locator('#video-prompt').inputValue()).toBe(`@${username} walking on the beach`);
  await keyPage.getByRole('button', { name: 'Create video' }).click();
  await keyPage.waitForURL(/\/console\/tasks\/motion-2%3A[^/]+$/, { timeout: UI_TIMEOUT });
}, 180_000);

test('a key session is refused by every admin page and endpoint', async () => {
  await keyPage.goto(`${base}/console/admin/keys`);
  await keyPage.locator('#admin-refused').waitFor({ timeout: UI_TIMEOUT });
  await expect(keyPage.locator('.error[role="alert"]', { hasText: '403' }).first().textContent({ timeout: UI_TIMEOUT })).resolves.toContain(
    'admin_session_required',
  );
  for (const route of ['/console/admin/channels', '/console/admin/tasks', '/console/admin/audit']) {
    await keyPage.goto(`${base}${route}`);
    await keyPage.locator('#admin-refused').waitFor({ timeout: UI_TIMEOUT });
  }
  const statuses = await keyPage.evaluate(
    "Promise.all(['/admin/keys', '/admin/channels', '/admin/tasks', '/admin/audit', '/admin/keys/" +
      keyHolder.id +
      "'].map((u) => fetch(u).then((r) => r.status)))",
  );
  expect(statuses).toEqual([403, 403, 403, 403, 403]);
  const post = await keyPage.evaluate(
    "(async () => { const s = await (await fetch('/console/api/session')).json(); const r = await fetch('/admin/keys', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf_token }, body: JSON.stringify({ name: 'x' }) }); return r.status; })()",
  );
  expect(post).toBe(403);
});

test('CSRF: a state-changing fetch without X-CSRF-Token is refused; with it, it goes through', async () => {
  const without = (await keyPage.evaluate(
    "(async () => { const r = await fetch('/v1/video/create', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'vidgen3', prompt: 'no token' }) }); return { status: r.status, body: await r.json() }; })()",
  )) as { status: number; body: { error: { code: string } } };
  expect(without.status).toBe(403);
  expect(without.body.error.code).toBe('csrf_failed');
  const wrong = await keyPage.evaluate(
    "fetch('/v1/video/create', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': 'not-the-token' }, body: JSON.stringify({ model: 'vidgen3', prompt: 'bad token' }) }).then((r) => r.status)",
  );
  expect(wrong).toBe(403);
  // The same request with the session's token reaches validation (an unknown parameter: 400), nothing is created.
  const withToken = await keyPage.evaluate(
    "(async () => { const s = await (await fetch('/console/api/session')).json(); const r = await fetch('/v1/video/create', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf_token }, body: JSON.stringify({ model: 'vidgen3', prompt: 'with token', no_such_parameter: 1 }) }); return r.status; })()",
  );
  expect(withToken).toBe(400);
});

test('CSP: an injected inline script is blocked and reported', async () => {
  await keyPage.goto(`${base}/console`);
  await keyPage.locator('#page-title').waitFor({ timeout: UI_TIMEOUT });
  await keyPage.evaluate(
    "(() => { window.__violations = []; document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective)); })()",
  );
  const injected = await keyPage.addScriptTag({ content: 'window.__injected = true;' }).then(
    () => 'added',
    (err: unknown) => String(err),
  );
  await waitForExpression(keyPage, 'window.__violations.length > 0');
  expect(await keyPage.evaluate('window.__injected === true')).toBe(false);
  expect(((await keyPage.evaluate('window.__violations')) as string[])[0]).toMatch(/^script-src/);
  expect(typeof injected).toBe('string');
});

test('the session cookie is HttpOnly and SameSite=Strict, and no secret is in web storage', async () => {
  expect(await keyPage.evaluate('document.cookie')).not.toContain('gw_session');
  const cookies = await keyContext.cookies(base);
  const session = cookies.find((c) => c.name === 'gw_session');
  expect(session).toBeDefined();
  expect(session!.httpOnly).toBe(true);
  expect(session!.sameSite).toBe('Strict');
  expect(session!.expires).toBe(-1); // a browser-session cookie: the server expires it
  const storage = (await keyPage.evaluate('JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])')) as string;
  expect(storage).toBe('[[],[]]');
  // A reload gets the CSRF token back from GET /console/api/session: changing things still works.
  await keyPage.reload();
  await keyPage.locator('#page-title').waitFor({ timeout: UI_TIMEOUT });
  expect(await keyPage.locator('#page-title').textContent()).toBe('Overview');
});

test('an operator creates a key, copies its secret, grants credits and revokes it', async () => {
  const context = await browser!.newContext({ viewport: DESKTOP, colorScheme: 'light' });
  context.on('request', (r) => requested.push(r.url()));
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  try {
    await signIn(page, 'admin', gateway!.adminToken);
    expect(await page.locator('#page-title').textContent()).toBe('Keys');
    await page.locator('#key-name').fill('made in the console');
    await page.locator('#key-quota').fill('5000000');
    await page.locator('#key-quota').press('Enter');
    const secretText = (await page.locator('#new-key-secret').textContent({ timeout: UI_TIMEOUT })) ?? '';
    expect(secretText).toMatch(/^sk-/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor({ timeout: UI_TIMEOUT });
    const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;
    expect(copied).toBe(secretText);
    createdSecret = copied;

    const billing = await fetch(`${base}/v1/billing`, { headers: { Authorization: `Bearer ${copied}` } });
    expect(billing.status).toBe(200);
    const keyId = ((await billing.json()) as { key_id: string }).key_id;

    const row = page.locator(`tr[data-key-id="${keyId}"]`);
    await row.waitFor({ timeout: UI_TIMEOUT });
    expect(await row.textContent()).toContain('5,000,000');
    await row.getByRole('button', { name: /Manage/ }).click();
    await page.locator('#grant-delta').fill('1000000');
    await page.locator('#grant-delta').press('Enter');
    await page.getByText('Balance is now 6,000,000.').waitFor({ timeout: UI_TIMEOUT });
    expect(((await adminCall('GET', `/admin/keys/${keyId}`)).body as { balance: number }).balance).toBe(6_000_000);
    await page.locator('#limit-rpm').fill('120');
    await page.locator('#limit-concurrent').fill('2');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor({ timeout: UI_TIMEOUT });
    const limits = (await adminCall('GET', `/admin/keys/${keyId}`)).body as { rate_limit_rpm: number; max_concurrent_tasks: number };
    expect([limits.rate_limit_rpm, limits.max_concurrent_tasks]).toEqual([120, 2]);
    // Its completion webhook: the first save makes the signing secret (shown once), a rotation another.
    await page.locator('#webhook-url').fill('https://hooks.example.com/gateway');
    await page.getByRole('button', { name: 'Save endpoint' }).click();
    await page.getByText('Webhook endpoint saved.').waitFor({ timeout: UI_TIMEOUT });
    const firstSecret = (await page.locator('#webhook-secret').textContent({ timeout: UI_TIMEOUT })) ?? '';
    expect(firstSecret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByText(/Secret rotated/).waitFor({ timeout: UI_TIMEOUT });
    await page.locator('#webhook-secret', { hasNotText: firstSecret }).waitFor({ timeout: UI_TIMEOUT });
    const hook = (await adminCall('GET', `/admin/keys/${keyId}/webhook`)).body as { url: string; secret_hint: string; previous_secret_expires_at: number };
    expect(hook.url).toBe('https://hooks.example.com/gateway');
    expect(hook.secret_hint).toBe(`whsec_...${((await page.locator('#webhook-secret').textContent()) ?? '').slice(-4)}`);
    expect(hook.previous_secret_expires_at).toEqual(expect.any(Number));
    await page.getByText('No events yet.').waitFor({ timeout: UI_TIMEOUT });
    fs.mkdirSync(SHOTS_DIR, { recursive: true });
    await page.locator('.webhook').screenshot({ path: path.join(SHOTS_DIR, 'admin-key-webhook-desktop.png') });
    await page.locator('.webhook').getByRole('button', { name: 'Done' }).click();
    await shot(page, 'admin-keys', 'desktop');

    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('button', { name: 'Confirm revoke' }).click();
    await page.getByText('Key revoked.').waitFor({ timeout: UI_TIMEOUT });
    await row.locator('.badge', { hasText: 'revoked' }).waitFor({ timeout: UI_TIMEOUT }); // still listed, marked
    const refused = await fetch(`${base}/v1/billing`, { headers: { Authorization: `Bearer ${copied}` } });
    expect(refused.status).toBe(401);

    // All tasks across keys, each linking to its run in the Temporal Web UI.
    await page.getByRole('link', { name: 'All tasks' }).click();
    const taskRow = page.locator('table.tasks tr', { hasText: taskId });
    await taskRow.waitFor({ timeout: UI_TIMEOUT });
    expect(await taskRow.textContent()).toContain(keyHolder.id);
    const link = await taskRow.getByRole('link').getAttribute('href');
    expect(link!.startsWith(`${gateway!.uiUrl}/namespaces/default/workflows/`)).toBe(true);
    expect(decodeURIComponent(link!.split('/').pop()!)).toBe(taskId);
    // Filtered by model and key: the motion tasks leave, the vidgen3 task stays.
    expect(await page.locator('table.tasks tbody tr', { hasText: 'motion-2:' }).count()).toBeGreaterThan(0);
    await page.getByLabel('Model').selectOption('vidgen3');
    await page.getByLabel('Key id').fill(keyHolder.id);
    await page.getByLabel('Key id').press('Enter');
    await page.locator('table.tasks tbody tr', { hasText: 'motion-2:' }).first().waitFor({ state: 'detached', timeout: UI_TIMEOUT });
    expect(await page.locator('table.tasks tbody tr').allTextContents()).toEqual([expect.stringContaining(taskId)]);

    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('button', { name: 'Run the audit' }).click();
    await page.getByText('No mismatches.').waitFor({ timeout: UI_TIMEOUT });

    await shotBoth(page, '/console/admin/keys', 'admin-keys', 'table.keys');
    await shotBoth(page, '/console/admin/channels', 'admin-channels', 'table.channels tbody tr');
    await shotBoth(page, '/console/admin/tasks', 'admin-tasks', 'table.tasks tbody tr');
  } finally {
    await context.close();
  }
}, 180_000);

test('sign-out ends the session on the server: the old cookie is refused', async () => {
  const cookie = (await keyContext.cookies(base)).find((c) => c.name === 'gw_session')!;
  const before = await fetch(`${base}/console/api/session`, { headers: { Cookie: `gw_session=${cookie.value}` } });
  expect(before.status).toBe(200);
  await keyPage.goto(`${base}/console`);
  await keyPage.locator('#sign-out').click();
  await keyPage.locator('#secret').waitFor({ timeout: UI_TIMEOUT });
  const after = await fetch(`${base}/console/api/session`, { headers: { Cookie: `gw_session=${cookie.value}` } });
  expect(after.status).toBe(401);
  const billing = await fetch(`${base}/v1/billing`, { headers: { Cookie: `gw_session=${cookie.value}` } });
  expect(billing.status).toBe(401);
});

test('no secret was ever in a URL the browser asked for', () => {
  expect(requested.length).toBeGreaterThan(50);
  const secrets = [keyHolder.key, gateway!.adminToken, createdSecret].filter((secret) => secret !== '');
  expect(secrets).toHaveLength(3);
  expect(requested.filter((url) => secrets.some((secret) => decodeURIComponent(url).includes(secret)))).toEqual([]);
});

test("npm start's banner prints the console's address", () => {
  const port = new URL(base).port;
  expect(fs.readFileSync(gateway!.logFile, 'utf8')).toMatch(new RegExp(`Console\\s+http://[^\\s/]+:${port}/console\\s`));
});

test('the screenshots were written at desktop and phone sizes', () => {
  for (const name of ['overview', 'tasks', 'create', 'ledger', 'characters', 'admin-keys', 'admin-channels', 'admin-tasks']) {
    expectPng(path.join(SHOTS_DIR, `${name}-desktop.png`), DESKTOP);
    expectPng(path.join(SHOTS_DIR, `${name}-phone.png`), PHONE);
  }
  for (const name of ['sign-in', 'task', 'task-dark', 'playground']) expectPng(path.join(SHOTS_DIR, `${name}-desktop.png`), DESKTOP);
  expectPng(path.join(SHOTS_DIR, 'menu-phone.png'), PHONE);
});
