/**
 * The provider registry is the one list: every provider's simulator module exists, every
 * provider has its simulated channel when nothing is configured, and the channel types a
 * CHANNELS_FILE accepts are the registry's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadChannels } from '../../src/config/channels';
import { loadConfig } from '../../src/config/env';
import { projectRoot } from '../../src/config/paths';
import { TEXT_CHANNEL_TYPES, TEXT_PROVIDERS, VIDEO_CHANNEL_TYPES, VIDEO_PROVIDERS } from '../../src/providers/registry';
import { retryAfterMs } from '../../src/providers/retry-after';

const PROVIDERS = [...VIDEO_PROVIDERS, ...TEXT_PROVIDERS];

test.each(PROVIDERS.map((p) => [p.type, p.simulatorModule]))('%s is imitated by %s, which exists', (_type, module) => {
  expect(fs.existsSync(path.join(projectRoot(), module))).toBe(true);
});

test('with no provider configured, each provider serves through its simulated channel', () => {
  const channels = loadChannels(loadConfig({ DATA_DIR: '/tmp/providers-test' }), {});
  expect(channels.map((c) => [c.name, c.type, c.simulated])).toEqual(PROVIDERS.map((p) => [p.simulated.name, p.type, true]));
});

test('the channel types are the registry types, video and text apart', () => {
  expect(VIDEO_CHANNEL_TYPES).toEqual(VIDEO_PROVIDERS.map((p) => p.type));
  expect(TEXT_CHANNEL_TYPES).toEqual(TEXT_PROVIDERS.map((p) => p.type));
  expect(VIDEO_CHANNEL_TYPES.filter((t) => (TEXT_CHANNEL_TYPES as readonly string[]).includes(t))).toEqual([]);
});

describe('Retry-After, as both HTTP stacks read it', () => {
  test('seconds', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs('0')).toBe(0);
  });

  test('an HTTP date, from now; a past one is 0', () => {
    const inTen = new Date(Date.now() + 10_000).toUTCString();
    expect(retryAfterMs(inTen)).toBeGreaterThan(8000);
    expect(retryAfterMs(inTen)).toBeLessThanOrEqual(10_000);
    expect(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT')).toBe(0);
  });

  test('absent or unreadable is undefined', () => {
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
  });
});
