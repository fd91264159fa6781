/**
 * Upstream channel configuration: the simulator fallback, the env shortcuts (Gemini, an
 * OpenAI-videos-compatible provider, Anthropic, an OpenAI-compatible text provider),
 * CHANNELS_FILE in YAML and JSON for video and text channels, and the ConfigErrors a bad
 * configuration must raise at start-up rather than at the first request.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  type Channel,
  channelsFor,
  failoverOrder,
  loadChannels,
  loadTextChannels,
  loadVideoChannels,
  SIMULATOR_API_KEY,
  type TextChannel,
  type VideoChannel,
} from '../../src/config/channels';
import { ConfigError, loadConfig } from '../../src/config/env';
import { seededRandom } from '../support/seeded-random';
import { DEFAULT_VEO_MODELS } from '../../src/providers/gemini-veo/provider';
import { DEFAULT_MOTION_MODELS } from '../../src/providers/openai-videos/provider';
import { RESPONSES_ONLY_MODELS } from '../../src/catalog/text-models';

type Env = Record<string, string>;

/** Channels for an env, with nothing taken from the process environment. */
function channels(env: Env): VideoChannel[] {
  return loadVideoChannels(loadConfig(env), env);
}

function textChannels(env: Env): TextChannel[] {
  return loadTextChannels(loadConfig(env), env);
}

function allChannels(env: Env): Channel[] {
  return loadChannels(loadConfig(env), env);
}

/** The ConfigError a call throws (fails the test when it throws nothing or something else). */
function configError(fn: () => unknown): ConfigError {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  return thrown as ConfigError;
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-channels-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

let fileCount = 0;
function writeFile(ext: string, text: string): string {
  const file = path.join(dir, `channels-${++fileCount}.${ext}`);
  fs.writeFileSync(file, text);
  return file;
}

describe('no provider credentials: the simulator', () => {
  test('two simulated channels, one per protocol, on SIMULATOR_URL with the simulator key', () => {
    const list = channels({ SIMULATOR_URL: 'http://sim.test:9999/' });
    expect(list).toHaveLength(2);
    const [veo, openai] = list;
    expect(veo).toEqual({
      name: 'sim-veo',
      type: 'gemini-veo',
      baseUrl: 'http://sim.test:9999',
      apiKey: SIMULATOR_API_KEY,
      models: DEFAULT_VEO_MODELS,
      priority: 0,
      weight: 1,
      pollMs: 1000,
      expectedJobMs: 20_000,
      sendExtensions: true,
      pollByList: false,
      submitAttempts: 3,
      simulated: true,
    });
    expect(openai).toEqual({
      name: 'sim-openai-videos',
      type: 'openai-videos',
      baseUrl: 'http://sim.test:9999',
      apiKey: SIMULATOR_API_KEY,
      models: DEFAULT_MOTION_MODELS,
      priority: 0,
      weight: 1,
      pollMs: 1000,
      expectedJobMs: 20_000,
      sendExtensions: true,
      pollByList: false,
      submitAttempts: 3,
      simulated: true,
    });
  });

  test('without SIMULATOR_URL: 127.0.0.1 on SIMULATOR_PORT (default 8090)', () => {
    expect(channels({}).map((c) => c.baseUrl)).toEqual(['http://127.0.0.1:8090', 'http://127.0.0.1:8090']);
    expect(channels({ SIMULATOR_PORT: '9123' }).map((c) => c.baseUrl)).toEqual(['http://127.0.0.1:9123', 'http://127.0.0.1:9123']);
  });

  test('UPSTREAM_POLL_MS and SIMULATOR_JOB_MS carry over to the simulated channels', () => {
    const list = channels({ UPSTREAM_POLL_MS: '250', SIMULATOR_JOB_MS: '1500' });
    expect(list.map((c) => c.pollMs)).toEqual([250, 250]);
    expect(list.map((c) => c.expectedJobMs)).toEqual([1500, 1500]);
  });

  test('empty credentials count as unset', () => {
    const list = channels({ GEMINI_API_KEY: '   ', OPENAI_VIDEOS_BASE_URL: '', OPENAI_VIDEOS_API_KEY: '' });
    expect(list.map((c) => [c.name, c.simulated])).toEqual([
      ['sim-veo', true],
      ['sim-openai-videos', true],
    ]);
  });

  test('every video model is routed to a simulated channel of the matching protocol', () => {
    const list = channels({});
    expect(channelsFor(list, 'vidgen3').map((c) => c.name)).toEqual(['sim-veo']);
    expect(channelsFor(list, 'motion-2').map((c) => c.name)).toEqual(['sim-openai-videos']);
    expect(channelsFor(list, 'no-such-model')).toEqual([]);
  });
});

describe('env shortcuts', () => {
  test('GEMINI_API_KEY: one real gemini-veo channel and no simulator', () => {
    const list = channels({ GEMINI_API_KEY: 'g-key', SIMULATOR_URL: 'http://sim.test:9999' });
    expect(list).toEqual([
      {
        name: 'gemini',
        type: 'gemini-veo',
        baseUrl: 'https://generativelanguage.googleapis.com',
        apiKey: 'g-key',
        models: DEFAULT_VEO_MODELS,
        priority: 0,
        weight: 1,
        pollMs: 10_000,
        expectedJobMs: 90_000,
        sendExtensions: false,
        pollByList: false,
        submitAttempts: 3,
        simulated: false,
      },
    ]);
    expect(list[0]?.models['vidgen3']).toBe('veo-3.0-generate-001');
    expect(list[0]?.models['vidgen2-fast-components']).toBe('veo-3.1-fast-generate-preview');
    // Motion models now have no channel: nothing falls back to the simulator.
    expect(channelsFor(list, 'motion-2')).toEqual([]);
    expect(channelsFor(list, 'vidgen3.1').map((c) => c.name)).toEqual(['gemini']);
  });

  test('GEMINI_BASE_URL (trailing slash dropped) and UPSTREAM_POLL_MS apply to the Gemini channel', () => {
    const [gemini] = channels({ GEMINI_API_KEY: 'g-key', GEMINI_BASE_URL: 'https://veo-proxy.test/', UPSTREAM_POLL_MS: '3000' });
    expect(gemini?.baseUrl).toBe('https://veo-proxy.test');
    expect(gemini?.pollMs).toBe(3000);
  });

  test('OPENAI_VIDEOS_BASE_URL + OPENAI_VIDEOS_API_KEY: one openai-videos channel', () => {
    const list = channels({ OPENAI_VIDEOS_BASE_URL: 'https://videos.test/api/', OPENAI_VIDEOS_API_KEY: 'o-key' });
    expect(list).toEqual([
      {
        name: 'openai-videos',
        type: 'openai-videos',
        baseUrl: 'https://videos.test/api',
        apiKey: 'o-key',
        models: DEFAULT_MOTION_MODELS,
        priority: 0,
        weight: 1,
        pollMs: 10_000,
        expectedJobMs: 90_000,
        sendExtensions: true,
        pollByList: false,
        submitAttempts: 3,
        simulated: false,
      },
    ]);
    expect(channelsFor(list, 'motion-2-pro').map((c) => c.models['motion-2-pro'])).toEqual(['sora-2-pro']);
    expect(channelsFor(list, 'vidgen3')).toEqual([]);
  });

  test('both shortcuts: both channels, Gemini first', () => {
    const list = channels({ GEMINI_API_KEY: 'g', OPENAI_VIDEOS_BASE_URL: 'https://videos.test', OPENAI_VIDEOS_API_KEY: 'o' });
    expect(list.map((c) => [c.name, c.type, c.simulated])).toEqual([
      ['gemini', 'gemini-veo', false],
      ['openai-videos', 'openai-videos', false],
    ]);
  });

  test.each([
    ['only the base URL', { OPENAI_VIDEOS_BASE_URL: 'https://videos.test' }],
    ['only the key', { OPENAI_VIDEOS_API_KEY: 'o-key' }],
    ['the key next to a Gemini key', { GEMINI_API_KEY: 'g', OPENAI_VIDEOS_API_KEY: 'o-key' }],
  ])('OpenAI videos with %s is a ConfigError', (_what, env: Env) => {
    const err = configError(() => channels(env));
    expect(err.message).toMatch(/OPENAI_VIDEOS_BASE_URL and OPENAI_VIDEOS_API_KEY/);
  });
});

describe('CHANNELS_FILE', () => {
  const yamlFile = () =>
    writeFile(
      'yaml',
      [
        'channels:',
        '  - name: veo-backup',
        '    type: gemini-veo',
        '    base_url: https://backup.test/',
        '    api_key: backup-key',
        '    models:',
        '      vidgen3: veo-3.0-generate-001',
        '    priority: 1',
        '  - name: veo-main',
        '    type: gemini-veo',
        '    base_url: https://main.test',
        '    api_key_env: MAIN_VEO_KEY',
        '    models:',
        '      vidgen3: veo-3.0-fast-generate-001',
        '      vidgen3.1: veo-3.1-generate-preview',
        '    priority: 10',
        '    poll_ms: 500',
        '    expected_job_seconds: 45',
        '    submit_attempts: 5',
        '  - name: motion',
        '    type: openai-videos',
        '    base_url: http://motion.test:8000',
        '    api_key: motion-key',
        '    models: { motion-2: sora-2 }',
        '    send_extensions: false',
        '',
      ].join('\n'),
    );

  test('YAML: every field read, defaults filled in, api_key_env resolved from the given env', () => {
    const file = yamlFile();
    const list = channels({ CHANNELS_FILE: file, MAIN_VEO_KEY: 'from-env' });
    expect(list).toEqual([
      {
        name: 'veo-backup',
        type: 'gemini-veo',
        baseUrl: 'https://backup.test',
        apiKey: 'backup-key',
        models: { vidgen3: 'veo-3.0-generate-001' },
        priority: 1,
        weight: 1,
        pollMs: 10_000,
        expectedJobMs: 90_000,
        sendExtensions: true,
        pollByList: false,
        submitAttempts: 3,
        simulated: false,
      },
      {
        name: 'veo-main',
        type: 'gemini-veo',
        baseUrl: 'https://main.test',
        apiKey: 'from-env',
        models: { vidgen3: 'veo-3.0-fast-generate-001', 'vidgen3.1': 'veo-3.1-generate-preview' },
        priority: 10,
        weight: 1,
        pollMs: 500,
        expectedJobMs: 45_000,
        sendExtensions: true,
        pollByList: false,
        submitAttempts: 5,
        simulated: false,
      },
      {
        name: 'motion',
        type: 'openai-videos',
        baseUrl: 'http://motion.test:8000',
        apiKey: 'motion-key',
        models: { 'motion-2': 'sora-2' },
        priority: 0,
        weight: 1,
        pollMs: 10_000,
        expectedJobMs: 90_000,
        sendExtensions: false,
        pollByList: false,
        submitAttempts: 3,
        simulated: false,
      },
    ]);
  });

  test('channelsFor: only channels serving the model, highest priority first', () => {
    const list = channels({ CHANNELS_FILE: yamlFile(), MAIN_VEO_KEY: 'from-env' });
    expect(channelsFor(list, 'vidgen3').map((c) => c.name)).toEqual(['veo-main', 'veo-backup']);
    expect(channelsFor(list, 'vidgen3.1').map((c) => c.name)).toEqual(['veo-main']);
    expect(channelsFor(list, 'motion-2').map((c) => c.name)).toEqual(['motion']);
    // Models the file does not map have no channel (no simulator next to a file).
    expect(channelsFor(list, 'vidgen2')).toEqual([]);
    // channelsFor does not reorder the list it is given.
    expect(list.map((c) => c.name)).toEqual(['veo-backup', 'veo-main', 'motion']);
  });

  test('channelsFor: negative priorities sort last, equal priorities keep file order', () => {
    const file = writeFile(
      'yaml',
      [
        'channels:',
        '  - { name: low, type: gemini-veo, base_url: "https://a.test", api_key: k, models: { vidgen3: m }, priority: -5 }',
        '  - { name: first-zero, type: gemini-veo, base_url: "https://b.test", api_key: k, models: { vidgen3: m } }',
        '  - { name: second-zero, type: gemini-veo, base_url: "https://c.test", api_key: k, models: { vidgen3: m }, priority: 0 }',
        '  - { name: high, type: gemini-veo, base_url: "https://d.test", api_key: k, models: { vidgen3: m }, priority: 3 }',
      ].join('\n'),
    );
    expect(channelsFor(channels({ CHANNELS_FILE: file }), 'vidgen3').map((c) => c.name)).toEqual(['high', 'first-zero', 'second-zero', 'low']);
  });

  test('failoverOrder: priority first, then a weighted draw among equals; `last` ones behind all others', () => {
    const file = writeFile(
      'yaml',
      [
        'channels:',
        '  - { name: heavy, type: gemini-veo, base_url: "https://a.test", api_key: k, models: { vidgen3: m }, weight: 9 }',
        '  - { name: light, type: gemini-veo, base_url: "https://b.test", api_key: k, models: { vidgen3: m }, weight: 1 }',
        '  - { name: top, type: gemini-veo, base_url: "https://c.test", api_key: k, models: { vidgen3: m }, priority: 2 }',
        '  - { name: backup, type: gemini-veo, base_url: "https://d.test", api_key: k, models: { vidgen3: m }, priority: -1 }',
      ].join('\n'),
    );
    const list = channelsFor(channels({ CHANNELS_FILE: file }), 'vidgen3');
    const random = seededRandom(7);
    const seconds = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const order = failoverOrder(list, random).map((c) => c.name);
      expect([order[0], order[3]]).toEqual(['top', 'backup']);
      const second = order[1] ?? '';
      seconds.set(second, (seconds.get(second) ?? 0) + 1);
    }
    // weight 9 against 1: heavy comes first among the priority-0 pair about 90 % of the time.
    expect(seconds.get('heavy')).toBeGreaterThan(800);
    expect(seconds.get('light')).toBeGreaterThan(50);
    expect(
      failoverOrder(list, random, (c) => c.name === 'top')
        .map((c) => c.name)
        .at(-1),
    ).toBe('top');
  });

  test('JSON: the same file format, with UPSTREAM_POLL_MS as the default poll interval', () => {
    const file = writeFile(
      'json',
      JSON.stringify({
        channels: [
          { name: 'json-motion', type: 'openai-videos', base_url: 'https://m.test', api_key_env: 'MOTION_KEY', models: { 'motion-2': 'sora-2' }, priority: 2 },
          { name: 'json-veo', type: 'gemini-veo', base_url: 'https://v.test', api_key: 'veo-key', models: { vidgen2: 'veo-2.0-generate-001' }, poll_ms: 2000 },
        ],
      }),
    );
    const list = channels({ CHANNELS_FILE: file, MOTION_KEY: 'motion-from-env', UPSTREAM_POLL_MS: '700' });
    expect(list.map((c) => [c.name, c.type, c.apiKey, c.priority, c.pollMs, c.simulated])).toEqual([
      ['json-motion', 'openai-videos', 'motion-from-env', 2, 700, false],
      ['json-veo', 'gemini-veo', 'veo-key', 0, 2000, false],
    ]);
    expect(channelsFor(list, 'vidgen2').map((c) => c.baseUrl)).toEqual(['https://v.test']);
  });

  test('poll_by_list: UPSTREAM_POLL_BY_LIST is the default of every video channel, a file channel may set its own', () => {
    const file = writeFile(
      'json',
      JSON.stringify({
        channels: [
          { name: 'listed', type: 'openai-videos', base_url: 'https://m.test', api_key: 'k', models: ['motion-2'], poll_by_list: true },
          { name: 'single', type: 'openai-videos', base_url: 'https://n.test', api_key: 'k', models: ['motion-2'], poll_by_list: false },
          { name: 'default', type: 'openai-videos', base_url: 'https://o.test', api_key: 'k', models: ['motion-2'] },
        ],
      }),
    );
    const byName = (env: Env) => Object.fromEntries(channels(env).map((c) => [c.name, c.pollByList]));
    expect(byName({ CHANNELS_FILE: file })).toEqual({ listed: true, single: false, default: false });
    expect(byName({ CHANNELS_FILE: file, UPSTREAM_POLL_BY_LIST: 'true', OPENAI_VIDEOS_BASE_URL: 'https://v.test', OPENAI_VIDEOS_API_KEY: 'o' })).toEqual({
      listed: true,
      single: false,
      default: true,
      'openai-videos': true,
    });
    expect(channels({ UPSTREAM_POLL_BY_LIST: '1' }).map((c) => [c.name, c.pollByList])).toEqual([
      ['sim-veo', true],
      ['sim-openai-videos', true],
    ]);
    expect(configError(() => channels({ UPSTREAM_POLL_BY_LIST: 'sometimes' })).message).toMatch(/UPSTREAM_POLL_BY_LIST/);
  });

  test('env shortcuts are added after the file channels', () => {
    const file = writeFile(
      'json',
      JSON.stringify({ channels: [{ name: 'filed', type: 'gemini-veo', base_url: 'https://f.test', api_key: 'k', models: { vidgen3: 'x' }, priority: 5 }] }),
    );
    const list = channels({ CHANNELS_FILE: file, GEMINI_API_KEY: 'g' });
    expect(list.map((c) => c.name)).toEqual(['filed', 'gemini']);
    expect(channelsFor(list, 'vidgen3').map((c) => c.name)).toEqual(['filed', 'gemini']);
  });

  const channel = (extra: Record<string, unknown>) => ({
    name: 'c1',
    type: 'gemini-veo',
    base_url: 'https://x.test',
    api_key: 'k',
    models: { vidgen3: 'm' },
    ...extra,
  });

  test.each<[string, () => string, RegExp]>([
    ['an unknown channel type', () => writeFile('json', JSON.stringify({ channels: [channel({ type: 'runway' })] })), /channels\.0\.type/],
    ['no api_key and no api_key_env', () => writeFile('json', JSON.stringify({ channels: [channel({ api_key: undefined })] })), /channel c1 has no api_key/],
    [
      'an api_key_env naming an unset variable',
      () =>
        writeFile(
          'yaml',
          'channels:\n  - name: c1\n    type: gemini-veo\n    base_url: https://x.test\n    api_key_env: NOT_SET_ANYWHERE\n    models: { vidgen3: m }\n',
        ),
      /channel c1 has no api_key/,
    ],
    ['a missing base_url', () => writeFile('json', JSON.stringify({ channels: [channel({ base_url: undefined })] })), /channels\.0\.base_url/],
    ['an unknown channel field', () => writeFile('json', JSON.stringify({ channels: [channel({ apikey: 'typo' })] })), /apikey/],
    ['an unknown top-level field', () => writeFile('yaml', 'channels: []\nchanels: []\n'), /chanels/],
    ['invalid YAML', () => writeFile('yaml', 'channels:\n  - name: [unclosed\n    type: gemini-veo\n'), /at line \d+, column \d+/],
    ['invalid JSON', () => writeFile('json', '{"channels": [ {"name": "c1", }'), /at line 1, column \d+/],
    ['a base_url with another scheme', () => writeFile('json', JSON.stringify({ channels: [channel({ base_url: 'ftp://x.test' })] })), /base_url/],
    ['poll_ms below 50', () => writeFile('json', JSON.stringify({ channels: [channel({ poll_ms: 10 })] })), /poll_ms/],
    ['poll_by_list on a gemini-veo channel', () => writeFile('json', JSON.stringify({ channels: [channel({ poll_by_list: true })] })), /poll_by_list/],
    ['submit_attempts of 0', () => writeFile('json', JSON.stringify({ channels: [channel({ submit_attempts: 0 })] })), /submit_attempts/],
    ['an upper-case channel name', () => writeFile('json', JSON.stringify({ channels: [channel({ name: 'Main' })] })), /name/],
  ])('%s is a ConfigError naming the file', (_what, make, detail) => {
    const file = make();
    const err = configError(() => channels({ CHANNELS_FILE: file, GEMINI_API_KEY: 'g' }));
    expect(err.message).toContain(`CHANNELS_FILE ${file}`);
    expect(err.message).toMatch(detail);
  });

  test('a file that does not exist is a ConfigError naming it', () => {
    const file = path.join(dir, 'missing.yaml');
    const err = configError(() => channels({ CHANNELS_FILE: file }));
    expect(err.message).toContain(file);
    expect(err.message).toMatch(/ENOENT/);
  });
});

describe('text channels: the simulator', () => {
  const simText = (url: string): TextChannel[] => [
    {
      name: 'sim-anthropic',
      type: 'anthropic-native',
      baseUrl: url,
      apiKey: SIMULATOR_API_KEY,
      models: { 'cm-opus-4-5-20251101': 'cm-opus-4-5-20251101', 'cm-sonnet-4.5': 'cm-sonnet-4.5', 'cm-haiku-4.5': 'cm-haiku-4.5' },
      priority: 0,
      weight: 1,
      simulated: true,
    },
    {
      name: 'sim-openai-chat',
      type: 'openai-compatible',
      baseUrl: `${url}/v1`,
      apiKey: SIMULATOR_API_KEY,
      models: { 'gpt-4o-mini': 'gpt-4o-mini', 'gpt-4o': 'gpt-4o', 'gpt-4.1-mini': 'gpt-4.1-mini', 'gpt-4.1': 'gpt-4.1' },
      priority: 0,
      weight: 1,
      simulated: true,
    },
    {
      name: 'sim-openai-responses',
      type: 'openai-responses',
      baseUrl: `${url}/v1`,
      apiKey: SIMULATOR_API_KEY,
      models: Object.fromEntries([...RESPONSES_ONLY_MODELS, 'gpt-4o-mini', 'gpt-4o', 'gpt-4.1-mini', 'gpt-4.1'].map((m) => [m, m])),
      priority: 0,
      weight: 1,
      simulated: true,
      pollMs: 1000,
      submitAttempts: 3,
    },
  ];

  test('no credentials: loadChannels is the two video and the three text simulator channels, in that order', () => {
    expect(allChannels({ SIMULATOR_URL: 'http://sim.test:9999/' }).map((c) => [c.name, c.type, c.simulated])).toEqual([
      ['sim-veo', 'gemini-veo', true],
      ['sim-openai-videos', 'openai-videos', true],
      ['sim-anthropic', 'anthropic-native', true],
      ['sim-openai-chat', 'openai-compatible', true],
      ['sim-openai-responses', 'openai-responses', true],
    ]);
  });

  test('loadTextChannels: sim-anthropic on the simulator URL, sim-openai-chat and sim-openai-responses on its /v1, identity model maps', () => {
    expect(textChannels({ SIMULATOR_URL: 'http://sim.test:9999/' })).toEqual(simText('http://sim.test:9999'));
    expect(textChannels({ SIMULATOR_PORT: '9123' })).toEqual(simText('http://127.0.0.1:9123'));
  });

  test('text simulator channels carry no video-only fields; the responses one its background-response settings', () => {
    for (const c of textChannels({})) {
      const background = c.type === 'openai-responses' ? ['pollMs', 'submitAttempts'] : [];
      expect(Object.keys(c).sort()).toEqual(['apiKey', 'baseUrl', 'models', 'name', 'priority', 'simulated', 'type', 'weight', ...background].sort());
    }
  });

  test('every text model is routed to the simulated channel of its protocol', () => {
    const list = textChannels({});
    expect(channelsFor(list, 'cm-sonnet-4.5').map((c) => c.name)).toEqual(['sim-anthropic']);
    expect(channelsFor(list, 'cm-opus-4-5-20251101').map((c) => c.models['cm-opus-4-5-20251101'])).toEqual(['cm-opus-4-5-20251101']);
    expect(channelsFor(list, 'gpt-4.1-mini').map((c) => c.name)).toEqual(['sim-openai-chat', 'sim-openai-responses']);
    expect(channelsFor(list, 'o3-pro').map((c) => c.name)).toEqual(['sim-openai-responses']);
    expect(channelsFor(list, 'vidgen3')).toEqual([]);
    expect(channelsFor(list, 'gpt-5')).toEqual([]);
  });

  test.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__'])('channelsFor(%s) matches no channel', (name) => {
    expect(channelsFor(allChannels({}), name)).toEqual([]);
    expect(channelsFor(allChannels({ ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o', GEMINI_API_KEY: 'g' }), name)).toEqual([]);
  });
});

describe('text channels: env shortcuts', () => {
  test('ANTHROPIC_API_KEY: one anthropic-native channel on api.anthropic.com, cm-* mapped to claude-*', () => {
    expect(textChannels({ ANTHROPIC_API_KEY: 'a-key', SIMULATOR_URL: 'http://sim.test:9999' })).toEqual([
      {
        name: 'anthropic',
        type: 'anthropic-native',
        baseUrl: 'https://api.anthropic.com',
        apiKey: 'a-key',
        models: {
          'cm-opus-4-5-20251101': 'claude-opus-4-5-20251101',
          'cm-sonnet-4.5': 'claude-sonnet-4-5',
          'cm-haiku-4.5': 'claude-haiku-4-5',
        },
        priority: 0,
        weight: 1,
        simulated: false,
      },
    ]);
  });

  test('ANTHROPIC_BASE_URL replaces the default (trailing slash dropped)', () => {
    expect(textChannels({ ANTHROPIC_API_KEY: 'a', ANTHROPIC_BASE_URL: 'https://claude-proxy.test/' }).map((c) => c.baseUrl)).toEqual([
      'https://claude-proxy.test',
    ]);
  });

  test('OPENAI_API_KEY: an openai-compatible channel on api.openai.com/v1 with the four default models, and an openai-responses one with the responses-only models too', () => {
    const list = textChannels({ OPENAI_API_KEY: 'o-key' });
    expect(list[1]).toEqual({
      name: 'openai-responses',
      type: 'openai-responses',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: 'o-key',
      models: Object.fromEntries([...RESPONSES_ONLY_MODELS, 'gpt-4o-mini', 'gpt-4o', 'gpt-4.1-mini', 'gpt-4.1'].map((m) => [m, m])),
      priority: 0,
      weight: 1,
      simulated: false,
      pollMs: 10_000,
      submitAttempts: 3,
    });
    expect(list.slice(0, 1)).toEqual([
      {
        name: 'openai',
        type: 'openai-compatible',
        baseUrl: 'https://api.openai.com/v1',
        apiKey: 'o-key',
        models: { 'gpt-4o-mini': 'gpt-4o-mini', 'gpt-4o': 'gpt-4o', 'gpt-4.1-mini': 'gpt-4.1-mini', 'gpt-4.1': 'gpt-4.1' },
        priority: 0,
        weight: 1,
        simulated: false,
      },
    ]);
  });

  test('OPENAI_BASE_URL and OPENAI_MODELS (a comma list, blanks trimmed and empty items skipped)', () => {
    const [openai] = textChannels({
      OPENAI_API_KEY: 'o',
      OPENAI_BASE_URL: 'https://llm.test/api/v1/',
      OPENAI_MODELS: ' llama-3.1-70b, qwen2.5 ,,mistral-large',
    });
    expect(openai?.baseUrl).toBe('https://llm.test/api/v1');
    expect(openai?.models).toEqual({ 'llama-3.1-70b': 'llama-3.1-70b', 'qwen2.5': 'qwen2.5', 'mistral-large': 'mistral-large' });
  });

  test('both text shortcuts: anthropic then openai, and no simulator channel of either kind', () => {
    const list = allChannels({ ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' });
    expect(list.map((c) => [c.name, c.type, c.simulated])).toEqual([
      ['anthropic', 'anthropic-native', false],
      ['openai', 'openai-compatible', false],
      ['openai-responses', 'openai-responses', false],
    ]);
  });

  test('only text credentials: the video models have no channel (no silent simulator)', () => {
    const env = { ANTHROPIC_API_KEY: 'a' };
    expect(channels(env)).toEqual([]);
    expect(channelsFor(allChannels(env), 'vidgen3')).toEqual([]);
    expect(channelsFor(allChannels(env), 'motion-2')).toEqual([]);
    // ...and the OpenAI-compatible models have none either.
    expect(channelsFor(allChannels(env), 'gpt-4o')).toEqual([]);
    expect(channelsFor(allChannels(env), 'cm-haiku-4.5').map((c) => c.name)).toEqual(['anthropic']);
  });

  test('only video credentials: the text models have no channel', () => {
    expect(textChannels({ GEMINI_API_KEY: 'g' })).toEqual([]);
  });

  test('video and text shortcuts together: video ones first, each list filtered by kind', () => {
    const env = { GEMINI_API_KEY: 'g', OPENAI_API_KEY: 'o' };
    expect(allChannels(env).map((c) => c.name)).toEqual(['gemini', 'openai', 'openai-responses']);
    expect(channels(env).map((c) => c.name)).toEqual(['gemini']);
    expect(textChannels(env).map((c) => c.name)).toEqual(['openai', 'openai-responses']);
  });

  test('empty text credentials count as unset', () => {
    expect(textChannels({ ANTHROPIC_API_KEY: '  ', OPENAI_API_KEY: '' }).map((c) => c.name)).toEqual([
      'sim-anthropic',
      'sim-openai-chat',
      'sim-openai-responses',
    ]);
  });
});

describe('text channels: CHANNELS_FILE', () => {
  test('YAML: anthropic-native with a models map, openai-compatible with a models list, weight and priority', () => {
    const file = writeFile(
      'yaml',
      [
        'channels:',
        '  - name: claude-main',
        '    type: anthropic-native',
        '    base_url: https://claude.test/',
        '    api_key_env: CLAUDE_KEY',
        '    models:',
        '      cm-sonnet-4.5: claude-sonnet-4-5-20250929',
        '      cm-haiku-4.5: claude-haiku-4-5',
        '    priority: 5',
        '    weight: 3',
        '  - name: chat',
        '    type: openai-compatible',
        '    base_url: http://vllm.test:8000/v1',
        '    api_key: chat-key',
        '    models: [llama-3.1-8b, gpt-4o]',
        '',
      ].join('\n'),
    );
    expect(allChannels({ CHANNELS_FILE: file, CLAUDE_KEY: 'from-env' })).toEqual([
      {
        name: 'claude-main',
        type: 'anthropic-native',
        baseUrl: 'https://claude.test',
        apiKey: 'from-env',
        models: { 'cm-sonnet-4.5': 'claude-sonnet-4-5-20250929', 'cm-haiku-4.5': 'claude-haiku-4-5' },
        priority: 5,
        weight: 3,
        simulated: false,
      },
      {
        name: 'chat',
        type: 'openai-compatible',
        baseUrl: 'http://vllm.test:8000/v1',
        apiKey: 'chat-key',
        models: { 'llama-3.1-8b': 'llama-3.1-8b', 'gpt-4o': 'gpt-4o' },
        priority: 0,
        weight: 1,
        simulated: false,
      },
    ]);
  });

  test('JSON: text and video channels side by side, each loader keeps its own kind', () => {
    const file = writeFile(
      'json',
      JSON.stringify({
        channels: [
          { name: 'veo', type: 'gemini-veo', base_url: 'https://v.test', api_key: 'v', models: { vidgen3: 'veo-3.0-generate-001' }, weight: 2 },
          { name: 'claude', type: 'anthropic-native', base_url: 'https://c.test', api_key: 'c', models: ['cm-haiku-4.5'], priority: -1, weight: 1000 },
          { name: 'oai', type: 'openai-compatible', base_url: 'https://o.test/v1', api_key: 'o', models: { 'gpt-4o': 'gpt-4o-2024-11-20' } },
        ],
      }),
    );
    const env = { CHANNELS_FILE: file };
    expect(allChannels(env).map((c) => c.name)).toEqual(['veo', 'claude', 'oai']);
    expect(channels(env).map((c) => [c.name, c.weight, c.pollMs])).toEqual([['veo', 2, 10_000]]);
    expect(textChannels(env).map((c) => [c.name, c.type, c.priority, c.weight, c.models])).toEqual([
      ['claude', 'anthropic-native', -1, 1000, { 'cm-haiku-4.5': 'cm-haiku-4.5' }],
      ['oai', 'openai-compatible', 0, 1, { 'gpt-4o': 'gpt-4o-2024-11-20' }],
    ]);
  });

  test('text file channels and text shortcuts: file first, channelsFor orders by priority', () => {
    const file = writeFile(
      'json',
      JSON.stringify({
        channels: [{ name: 'backup', type: 'anthropic-native', base_url: 'https://b.test', api_key: 'b', models: ['cm-haiku-4.5'], priority: -1 }],
      }),
    );
    const list = textChannels({ CHANNELS_FILE: file, ANTHROPIC_API_KEY: 'a' });
    expect(list.map((c) => c.name)).toEqual(['backup', 'anthropic']);
    expect(channelsFor(list, 'cm-haiku-4.5').map((c) => [c.name, c.models['cm-haiku-4.5']])).toEqual([
      ['anthropic', 'claude-haiku-4-5'],
      ['backup', 'cm-haiku-4.5'],
    ]);
  });

  test.each([1, 7, 1000])('weight %d is accepted', (weight) => {
    const file = writeFile(
      'json',
      JSON.stringify({ channels: [{ name: 'w', type: 'openai-compatible', base_url: 'https://o.test', api_key: 'k', models: ['m'], weight }] }),
    );
    expect(textChannels({ CHANNELS_FILE: file }).map((c) => c.weight)).toEqual([weight]);
  });

  const textChannel = (extra: Record<string, unknown>) => ({
    name: 't1',
    type: 'anthropic-native',
    base_url: 'https://t.test',
    api_key: 'k',
    models: ['cm-haiku-4.5'],
    ...extra,
  });
  const fileOf = (...list: Record<string, unknown>[]) => writeFile('json', JSON.stringify({ channels: list }));

  test.each<[string, () => string, RegExp]>([
    ['weight 0', () => fileOf(textChannel({ weight: 0 })), /channels\.0\.weight: Too small/],
    ['weight 1001', () => fileOf(textChannel({ weight: 1001 })), /channels\.0\.weight: Too big/],
    ['a fractional weight', () => fileOf(textChannel({ weight: 1.5 })), /channels\.0\.weight: .*int/],
    ['an empty models list', () => fileOf(textChannel({ models: [] })), /channels\.0\.models: must name at least one model/],
    ['an empty models map', () => fileOf(textChannel({ models: {} })), /channels\.0\.models: must name at least one model/],
    ['an empty upstream model name', () => fileOf(textChannel({ models: { 'cm-haiku-4.5': '' } })), /channels\.0\.models/],
    [
      'two text channels with one name',
      () => fileOf(textChannel({}), textChannel({ type: 'openai-compatible', base_url: 'https://o.test' })),
      /two channels are named t1/,
    ],
    [
      'a video and a text channel with one name',
      () => fileOf({ name: 't1', type: 'gemini-veo', base_url: 'https://v.test', api_key: 'k', models: { vidgen3: 'm' } }, textChannel({})),
      /two channels are named t1/,
    ],
    [
      'a text channel with poll_ms',
      () => fileOf(textChannel({ poll_ms: 500 })),
      /channels\.0\.poll_ms: poll_ms and submit_attempts are settings of openai-responses channels/,
    ],
    ['a responses channel with poll_ms below 50', () => fileOf(textChannel({ type: 'openai-responses', poll_ms: 10 })), /poll_ms/],
    [
      'a text channel with send_extensions',
      () => fileOf(textChannel({ type: 'openai-compatible', send_extensions: false })),
      /channels\.0: Unrecognized key: "send_extensions"/,
    ],
    [
      'a text channel with expected_job_seconds',
      () => fileOf(textChannel({ expected_job_seconds: 30 })),
      /channels\.0: Unrecognized key: "expected_job_seconds"/,
    ],
    ['both api_key and api_key_env', () => fileOf(textChannel({ api_key_env: 'SOME_KEY' })), /channels\.0\.api_key: give api_key or api_key_env, not both/],
  ])('%s is a ConfigError naming the file', (_what, make, detail) => {
    const file = make();
    const err = configError(() => allChannels({ CHANNELS_FILE: file, SOME_KEY: 'x' }));
    expect(err.message).toContain(`CHANNELS_FILE ${file}`);
    expect(err.message).toMatch(detail);
  });
});

describe('loadConfig', () => {
  test('an empty environment is valid and gets the documented defaults', () => {
    const config = loadConfig({});
    expect(config.env.PORT).toBe(8080);
    expect(config.env.FETCH_ALLOW_PRIVATE).toBe(false);
    expect(config.env.UPSTREAM_POLL_MS).toBeUndefined();
    expect(config.embeddedTemporal).toBe(true);
  });

  test.each([
    ['true', true],
    ['1', true],
    ['yes', true],
    ['false', false],
    ['0', false],
    ['no', false],
  ])('FETCH_ALLOW_PRIVATE=%s reads as %s', (value, expected) => {
    expect(loadConfig({ FETCH_ALLOW_PRIVATE: value }).env.FETCH_ALLOW_PRIVATE).toBe(expected);
  });

  test.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['FETCH_ALLOW_PRIVATE', 'maybe'],
    ['UPSTREAM_POLL_MS', '10'],
    ['GEMINI_BASE_URL', 'not a url'],
    ['LOG_LEVEL', 'verbose'],
  ])('%s=%s is a ConfigError naming the variable', (name, value) => {
    const err = configError(() => loadConfig({ [name]: value }));
    expect(err.message).toMatch(new RegExp(`^\\s+${name}: `, 'm'));
    // Only the bad variable is reported.
    expect(err.message.split('\n').filter((line) => /^\s+\w+: /.test(line))).toHaveLength(1);
  });

  test('every bad variable is reported at once', () => {
    const err = configError(() => loadConfig({ PORT: 'abc', FETCH_ALLOW_PRIVATE: 'maybe', HOST: '0.0.0.0' }));
    expect(err.message).toMatch(/^\s+PORT: /m);
    expect(err.message).toMatch(/^\s+FETCH_ALLOW_PRIVATE: /m);
    expect(err.message).not.toMatch(/HOST/);
  });

  test('variables the gateway does not read are ignored', () => {
    expect(() => loadConfig({ PATH: '/usr/bin', SOME_OTHER_PORT: 'abc' })).not.toThrow();
  });
});

describe('channel names and model lists across the file and the env shortcuts', () => {
  test('a file channel named like an env shortcut channel is a ConfigError', () => {
    const file = writeFile(
      'json',
      JSON.stringify({ channels: [{ name: 'anthropic', type: 'anthropic-native', base_url: 'https://a.test', api_key: 'k', models: ['cm-haiku-4.5'] }] }),
    );
    const err = configError(() => loadChannels(loadConfig({ CHANNELS_FILE: file, ANTHROPIC_API_KEY: 'a-key' }), {}));
    expect(err.message).toMatch(/Two channels are named anthropic/);
  });

  test('OPENAI_MODELS naming no model is a ConfigError', () => {
    const err = configError(() => loadChannels(loadConfig({ OPENAI_API_KEY: 'o-key', OPENAI_MODELS: ' , ' }), {}));
    expect(err.message).toMatch(/OPENAI_MODELS names no model/);
  });
});
