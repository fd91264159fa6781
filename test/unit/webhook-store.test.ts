/**
 * The webhook store on both databases (PGlite and PostgreSQL): the secret made once and shown
 * once, rotation keeping the previous secret for 24 hours, one event per id however often it is
 * recorded, attempts listed per event and per key.
 */
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { PREVIOUS_SECRET_VALID_MS, WebhookStore } from '../../src/store/webhooks';
import { BOTH_STORES, type OpenedStore } from '../support/stores';

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keys: KeyStore;
  let webhooks: WebhookStore;
  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    keys = new KeyStore(opened.db);
    webhooks = new WebhookStore(opened.db);
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  test('the first PUT makes the secret and shows it; later ones do not; rotation keeps the previous one for 24 h', async () => {
    const key = await keys.issue('hooks');
    expect(await webhooks.endpoint(key.id)).toBeNull();
    expect(await webhooks.signingSecrets(key.id)).toEqual([]);
    const first = await webhooks.setEndpoint(key.id, 'https://hooks.example.com/a');
    expect(first.secret).toMatch(/^whsec_/);
    expect(first.endpoint).toMatchObject({
      url: 'https://hooks.example.com/a',
      previousSecretExpiresAt: null,
      secretHint: `whsec_...${first.secret!.slice(-4)}`,
    });
    const again = await webhooks.setEndpoint(key.id, null);
    expect(again.secret).toBeNull();
    expect(again.endpoint.url).toBeNull();
    expect(await webhooks.signingSecrets(key.id)).toEqual([first.secret]);

    const before = Date.now();
    const rotated = await webhooks.rotate(key.id);
    expect(rotated.secret).not.toBe(first.secret);
    expect(await webhooks.signingSecrets(key.id)).toEqual([rotated.secret, first.secret]);
    const expires = rotated.endpoint.previousSecretExpiresAt! * 1000;
    expect(expires).toBeGreaterThanOrEqual(before + PREVIOUS_SECRET_VALID_MS - 5000);
    expect(expires).toBeLessThanOrEqual(Date.now() + PREVIOUS_SECRET_VALID_MS + 5000);
    // Past its expiry, the previous secret no longer signs.
    await opened.db.query("update webhook_endpoints set previous_expires_at = now() - interval '1 second' where key_id = $1", [key.id]);
    expect(await webhooks.signingSecrets(key.id)).toEqual([rotated.secret]);
    expect((await webhooks.endpoint(key.id))?.previousSecretExpiresAt).toBeNull();
  });

  test('an event is recorded once; attempts are kept in order; finishing is once', async () => {
    const key = await keys.issue('events');
    const payload = { type: 'video.completed' as const, timestamp: new Date().toISOString(), data: { id: 'video_1' } };
    const event = { id: `evt_video_${key.id}_completed`, keyId: key.id, type: payload.type, subjectId: 'video_1', url: 'https://hooks.example.com/e', payload };
    const made = await webhooks.recordEvent(event);
    const again = await webhooks.recordEvent({ ...event, payload: { ...payload, timestamp: 'later' } });
    expect(again).toEqual(made);
    expect(made).toMatchObject({ state: 'pending', payload });
    await webhooks.recordAttempt({ eventId: event.id, attempt: 1, httpStatus: 500, error: 'HTTP 500', durationMs: 12 });
    await webhooks.recordAttempt({ eventId: event.id, attempt: 2, httpStatus: 200, error: null, durationMs: 8 });
    await webhooks.finish(event.id, 'delivered');
    await webhooks.finish(event.id, 'failed');
    const [listed, ...rest] = await webhooks.deliveries(key.id, { limit: 10 });
    expect(rest).toEqual([]);
    expect(listed).toMatchObject({ id: event.id, state: 'delivered' });
    expect(listed!.attempts.map((a) => [a.attempt, a.httpStatus, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 200, null],
    ]);
    expect(await webhooks.deliveries(key.id, { limit: 10, eventId: 'evt_other' })).toEqual([]);
    const other = await keys.issue('other');
    expect(await webhooks.deliveries(other.id, { limit: 10 })).toEqual([]);
  });

  test('prune removes finished events past the retention with their attempts, never pending ones', async () => {
    const key = await keys.issue('prune');
    const payload = { type: 'video.failed' as const, timestamp: new Date().toISOString(), data: {} };
    for (const id of ['old-done', 'old-pending', 'new-done']) {
      await webhooks.recordEvent({ id: `${key.id}-${id}`, keyId: key.id, type: payload.type, subjectId: id, url: 'https://hooks.example.com/p', payload });
      await webhooks.recordAttempt({ eventId: `${key.id}-${id}`, attempt: 1, httpStatus: 500, error: 'HTTP 500', durationMs: 1 });
    }
    await webhooks.finish(`${key.id}-old-done`, 'failed');
    await webhooks.finish(`${key.id}-new-done`, 'delivered');
    await opened.db.query("update webhook_events set created_at = now() - interval '31 days' where id in ($1, $2)", [
      `${key.id}-old-done`,
      `${key.id}-old-pending`,
    ]);
    expect(await webhooks.prune(30)).toBe(1);
    expect((await webhooks.deliveries(key.id, { limit: 10 })).map((e) => e.subjectId).sort()).toEqual(['new-done', 'old-pending']);
    expect(await opened.db.query('select id from webhook_attempts where event_id = $1', [`${key.id}-old-done`])).toEqual([]);
  });
});
