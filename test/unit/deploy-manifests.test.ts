/**
 * deploy/kubernetes/ is configuration the code never reads, so nothing else notices when it
 * drifts from the code or from Kubernetes. Every YAML document under deploy/ is checked twice:
 *
 * - against Kubernetes' own schemas, offline (test/support/kubernetes-schema.mjs: the upstream
 *   OpenAPI definitions from the pinned kubernetes-models package, plus strict field checking,
 *   as kubectl applies it), parsed as Kubernetes parses YAML (1.1: `no` is a boolean);
 * - against the gateway: each rule below is a function returning the problems it finds. The real
 *   files must have none, and a mutated copy shows that every rule, and the schema check, can fail.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { ENV_KEYS, loadConfig } from '../../src/config/env';
import { projectRoot } from '../../src/config/paths';
import { startRouteApp, type RouteApp } from '../routes/harness';
import { parseDockerfile } from '../support/dockerfile';

const ROOT = projectRoot();
const DEPLOY = path.join(ROOT, 'deploy');
const API = 'gateway-api';
const WORKER = 'gateway-worker';

// ---------------------------------------------------------------------------------------------
// Reading the manifests

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Manifest {
  file: string; // relative to deploy/
  doc: JsonObject;
}

/** Every document of a YAML text, as Kubernetes reads it (YAML 1.1, like kubectl's parser). */
function parseManifests(file: string, text: string): Manifest[] {
  return parseAllDocuments(text, { version: '1.1' }).map((d, i) => {
    if (d.errors.length > 0) throw new Error(`${file} document ${i}: ${d.errors[0]!.message}`);
    const doc: unknown = d.toJS();
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`${file} document ${i} is not a mapping`);
    return { file, doc: doc as JsonObject };
  });
}

function yamlFilesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .flatMap((e) => (e.isFile() && /\.ya?ml$/.test(e.name) ? [path.relative(DEPLOY, path.join(e.parentPath, e.name)).split(path.sep).join('/')] : []));
}

// The parts of the objects the rules read; the schema check covers the rest.
const labels = z.record(z.string(), z.string());
const envVar = z.looseObject({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z
    .looseObject({
      secretKeyRef: z.looseObject({ name: z.string(), key: z.string(), optional: z.boolean().optional() }).optional(),
      configMapKeyRef: z.looseObject({ name: z.string(), key: z.string(), optional: z.boolean().optional() }).optional(),
    })
    .optional(),
});
const probe = z.looseObject({
  httpGet: z.looseObject({ path: z.string().optional(), port: z.union([z.string(), z.number()]) }).optional(),
  tcpSocket: z.looseObject({}).optional(),
  grpc: z.looseObject({}).optional(),
  exec: z.looseObject({}).optional(),
});
const securityContext = z.looseObject({
  runAsNonRoot: z.boolean().optional(),
  runAsUser: z.number().optional(),
  runAsGroup: z.number().optional(),
  allowPrivilegeEscalation: z.boolean().optional(),
  readOnlyRootFilesystem: z.boolean().optional(),
});
const quantities = z.looseObject({ cpu: z.union([z.string(), z.number()]).optional(), memory: z.union([z.string(), z.number()]).optional() });
const container = z.looseObject({
  name: z.string(),
  image: z.string().optional(),
  command: z.array(z.string()).optional(),
  ports: z.array(z.looseObject({ name: z.string().optional(), containerPort: z.number() })).default([]),
  env: z.array(envVar).default([]),
  envFrom: z
    .array(z.looseObject({ configMapRef: z.looseObject({ name: z.string() }).optional(), secretRef: z.looseObject({ name: z.string() }).optional() }))
    .default([]),
  startupProbe: probe.optional(),
  readinessProbe: probe.optional(),
  livenessProbe: probe.optional(),
  lifecycle: z
    .looseObject({
      preStop: z
        .looseObject({
          exec: z.looseObject({ command: z.array(z.string()) }).optional(),
          sleep: z.looseObject({ seconds: z.number() }).optional(),
        })
        .optional(),
    })
    .optional(),
  resources: z.looseObject({ requests: quantities.optional(), limits: quantities.optional() }).optional(),
  securityContext: securityContext.optional(),
  volumeMounts: z.array(z.looseObject({ name: z.string(), mountPath: z.string() })).default([]),
});
type Container = z.infer<typeof container>;
const podSpec = z.looseObject({
  containers: z.array(container).min(1),
  securityContext: securityContext.optional(),
  terminationGracePeriodSeconds: z.number().optional(),
  volumes: z
    .array(
      z.looseObject({ name: z.string(), persistentVolumeClaim: z.looseObject({ claimName: z.string() }).optional(), emptyDir: z.looseObject({}).optional() }),
    )
    .default([]),
});
type PodSpec = z.infer<typeof podSpec>;
const deploymentSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string() }),
  spec: z.looseObject({
    selector: z.looseObject({ matchLabels: labels }),
    template: z.looseObject({ metadata: z.looseObject({ labels }), spec: podSpec }),
  }),
});
type Deployment = z.infer<typeof deploymentSchema>;
const serviceSchema = z.looseObject({
  spec: z.looseObject({ selector: labels, ports: z.array(z.looseObject({ port: z.number(), targetPort: z.union([z.string(), z.number()]).optional() })) }),
});
const pdbSchema = z.looseObject({ spec: z.looseObject({ selector: z.looseObject({ matchLabels: labels }) }) });
const pvcSchema = z.looseObject({ metadata: z.looseObject({ name: z.string() }), spec: z.looseObject({ accessModes: z.array(z.string()) }) });
const secretSchema = z.looseObject({ metadata: z.looseObject({ name: z.string() }), stringData: z.record(z.string(), z.string()).default({}) });
const configMapSchema = z.looseObject({ metadata: z.looseObject({ name: z.string() }), data: z.record(z.string(), z.string()).default({}) });
/** kustomize's own file is no Kubernetes object (no upstream schema): these are the fields this folder may use. */
const kustomizationSchema = z.strictObject({
  apiVersion: z.literal('kustomize.config.k8s.io/v1beta1'),
  kind: z.literal('Kustomization'),
  labels: z.array(z.strictObject({ pairs: labels, includeSelectors: z.boolean().optional(), includeTemplates: z.boolean().optional() })).optional(),
  resources: z.array(z.string()).min(1),
  images: z
    .array(z.strictObject({ name: z.string(), newName: z.string().optional(), newTag: z.string().optional(), digest: z.string().optional() }))
    .optional(),
});

/** The objects a cluster may be given: GA APIs only, served by every Kubernetes release still supported. */
const STABLE_KINDS: Record<string, string[]> = {
  v1: ['ConfigMap', 'Secret', 'Service', 'PersistentVolumeClaim'],
  'apps/v1': ['Deployment'],
  'policy/v1': ['PodDisruptionBudget'],
};

// ---------------------------------------------------------------------------------------------
// The model the rules read

interface Model {
  manifests: Manifest[]; // every document under deploy/
  dockerfile: string;
  apiServerSource: string; // src/api/server.ts: its drain
  workerSource: string; // src/worker.ts: its shutdown grace
  sourceExists: (relPath: string) => boolean;
  fileExists: (relToDeploy: string) => boolean;
}

type Rule = (m: Model) => string[];

const kindOf = (m: Manifest) => `${String(m.doc.apiVersion)} ${String(m.doc.kind)}`;
const objects = (m: Model, kind: string) =>
  m.manifests.filter((x) => x.doc.kind === kind && x.file.startsWith('kubernetes/') && x.file !== 'kubernetes/kustomization.yaml');
const isTemplate = (x: Manifest) => x.file.endsWith('.example.yaml');

function parsed<T>(schema: z.ZodType<T>, x: Manifest | undefined, what: string, problems: string[]): T | undefined {
  if (!x) {
    problems.push(`${what} is missing`);
    return undefined;
  }
  const result = schema.safeParse(x.doc);
  if (!result.success) {
    problems.push(`${x.file}: ${what} is malformed: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    return undefined;
  }
  return result.data;
}

const named = (m: Model, kind: string, name: string) => objects(m, kind).find((x) => (x.doc.metadata as JsonObject | undefined)?.name === name);

function deployment(m: Model, name: string, problems: string[]): Deployment | undefined {
  return parsed(deploymentSchema, named(m, 'Deployment', name), `Deployment ${name}`, problems);
}

const matches = (selector: Record<string, string>, podLabels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => podLabels[k] === v);

/** The image's final-stage ENV defaults (NAME=value pairs). */
function imageEnv(dockerfile: string): Record<string, string> {
  const final = parseDockerfile(dockerfile).at(-1);
  const env: Record<string, string> = {};
  for (const i of final?.instructions.filter((x) => x.op === 'ENV') ?? []) {
    for (const m of i.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
  }
  return env;
}

/** The environment a container starts with: the image's ENV, then envFrom, then env (Kubernetes' order of precedence). */
function containerEnv(m: Model, c: Container, problems: string[]): Record<string, string> {
  const env = imageEnv(m.dockerfile);
  const configMap = (name: string) => parsed(configMapSchema, named(m, 'ConfigMap', name), `ConfigMap ${name}`, problems);
  const secret = (name: string) =>
    parsed(
      secretSchema,
      objects(m, 'Secret').find((x) => (x.doc.metadata as JsonObject | undefined)?.name === name),
      `Secret ${name}`,
      problems,
    );
  for (const from of c.envFrom) {
    if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name)?.data ?? {});
    if (from.secretRef) Object.assign(env, secret(from.secretRef.name)?.stringData ?? {});
  }
  for (const v of c.env) {
    if (v.value !== undefined) {
      env[v.name] = v.value;
      continue;
    }
    const fromSecret = v.valueFrom?.secretKeyRef;
    const fromMap = v.valueFrom?.configMapKeyRef;
    const ref = fromSecret ?? fromMap;
    if (!ref) continue;
    const value = fromSecret ? secret(ref.name)?.stringData[ref.key] : configMap(ref.name)?.data[ref.key];
    if (value !== undefined) env[v.name] = value;
    else if (!ref.optional)
      problems.push(`${c.name}: ${v.name} reads key ${ref.key} of ${fromSecret ? 'Secret' : 'ConfigMap'} ${ref.name}, which does not have it`);
  }
  return env;
}

/** The port a probe or Service names, as a number: a container port's name, or the number itself. */
function resolvePort(c: Container, port: string | number | undefined): number | undefined {
  if (typeof port === 'number') return port;
  if (port === undefined) return undefined;
  return /^\d+$/.test(port) ? Number(port) : c.ports.find((p) => p.name === port)?.containerPort;
}

function preStopSeconds(c: Container): number {
  const preStop = c.lifecycle?.preStop;
  if (preStop?.sleep) return preStop.sleep.seconds;
  const command = preStop?.exec?.command ?? [];
  return command[0] === 'sleep' && /^\d+$/.test(command[1] ?? '') ? Number(command[1]) : 0;
}

const PROBE_KINDS = ['startupProbe', 'readinessProbe', 'livenessProbe'] as const;
type ProbeKind = (typeof PROBE_KINDS)[number];

function httpProbes(c: Container): { kind: ProbeKind; path: string; port: string | number }[] {
  return PROBE_KINDS.flatMap((kind) => {
    const get = c[kind]?.httpGet;
    return get ? [{ kind, path: get.path ?? '/', port: get.port }] : [];
  });
}

// ---------------------------------------------------------------------------------------------
// The rules

const onlyStableApis: Rule = (m) =>
  m.manifests
    .filter((x) => x.file !== 'kubernetes/kustomization.yaml')
    .filter((x) => !(STABLE_KINDS[String(x.doc.apiVersion)] ?? []).includes(String(x.doc.kind)))
    .map((x) => `${x.file}: ${kindOf(x)} is not one of the GA APIs these manifests use`);

const namespaceAgnostic: Rule = (m) => [
  ...m.manifests
    .filter((x) => (x.doc.metadata as JsonObject | undefined)?.namespace !== undefined)
    .map((x) => `${x.file}: sets metadata.namespace (the namespace is chosen at apply time)`),
  ...m.manifests.filter((x) => x.doc.kind === 'Kustomization' && x.doc.namespace !== undefined).map((x) => `${x.file}: sets a namespace`),
];

const kustomizationIsComplete: Rule = (m) => {
  const problems: string[] = [];
  const k = parsed(
    kustomizationSchema,
    m.manifests.find((x) => x.file === 'kubernetes/kustomization.yaml'),
    'deploy/kubernetes/kustomization.yaml',
    problems,
  );
  if (!k) return problems;
  for (const r of k.resources) if (!m.fileExists(`kubernetes/${r}`)) problems.push(`kustomization lists ${r}, which does not exist`);
  const inFolder = [...new Set(m.manifests.map((x) => x.file))].filter((f) => f.startsWith('kubernetes/') && f !== 'kubernetes/kustomization.yaml');
  for (const file of inFolder) {
    const listed = k.resources.includes(file.slice('kubernetes/'.length));
    if (file.endsWith('.example.yaml') && listed) problems.push(`kustomization applies the template ${file}: its placeholders would overwrite real values`);
    if (!file.endsWith('.example.yaml') && !listed) problems.push(`kustomization does not list ${file}`);
  }
  const images = new Set(
    objects(m, 'Deployment').flatMap((x) => parsed(deploymentSchema, x, 'Deployment', problems)?.spec.template.spec.containers.map((c) => c.image) ?? []),
  );
  if (images.size !== 1) problems.push(`the Deployments run ${images.size} different images; both run the one Dockerfile image`);
  for (const image of images) {
    if (!k.images?.some((i) => i.name === image)) problems.push(`kustomization's images: does not say where ${image} comes from`);
  }
  return problems;
};

const envIsKnown: Rule = (m) => {
  const problems: string[] = [];
  const known = (where: string, key: string) => {
    if (!ENV_KEYS.includes(key)) problems.push(`${where} sets ${key}, which src/config/env.ts does not read`);
  };
  for (const x of objects(m, 'ConfigMap')) for (const key of Object.keys(parsed(configMapSchema, x, 'ConfigMap', problems)?.data ?? {})) known(x.file, key);
  for (const x of objects(m, 'Secret')) for (const key of Object.keys(parsed(secretSchema, x, 'Secret', problems)?.stringData ?? {})) known(x.file, key);
  for (const x of objects(m, 'Deployment')) {
    for (const c of parsed(deploymentSchema, x, 'Deployment', problems)?.spec.template.spec.containers ?? [])
      for (const v of c.env) known(`${x.file} (${c.name})`, v.name);
  }
  return problems;
};

const configIsAccepted: Rule = (m) => {
  const problems: string[] = [];
  const envs = [API, WORKER].map((name) => {
    const c = deployment(m, name, problems)?.spec.template.spec.containers[0];
    if (!c) return undefined;
    const env = containerEnv(m, c, problems);
    try {
      const config = loadConfig(env);
      if (config.embeddedTemporal) problems.push(`${name} would start its own Temporal dev server (no TEMPORAL_ADDRESS)`);
      if (!config.env.DATABASE_URL) problems.push(`${name} has no DATABASE_URL: the replicas would not share keys, balances and the ledger`);
    } catch (err) {
      problems.push(`${name}: loadConfig rejects its environment: ${(err as Error).message}`);
    }
    return env;
  });
  const [api, worker] = envs;
  if (api && worker) {
    for (const key of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE', 'DATABASE_URL', 'DATA_DIR', 'STORAGE_DIR']) {
      if (api[key] !== worker[key]) problems.push(`${key} differs: api ${api[key]}, worker ${worker[key]}`);
    }
    if (!api.ADMIN_TOKEN) problems.push('the API gets no ADMIN_TOKEN (it would generate one per replica)');
    if (!api.URL_SIGNING_SECRET) problems.push('the API gets no URL_SIGNING_SECRET (each replica would sign links with its own)');
    if (worker.ADMIN_TOKEN !== undefined) problems.push('the worker gets ADMIN_TOKEN, which it never uses');
  }
  return problems;
};

const runsAsImageUser: Rule = (m) => {
  const problems: string[] = [];
  const user = parseDockerfile(m.dockerfile)
    .at(-1)
    ?.instructions.filter((i) => i.op === 'USER')
    .at(-1)?.args;
  const ids = /^(\d+)(?::(\d+))?$/.exec(user ?? '');
  if (!ids) return [`the image's USER is ${user ?? 'unset'}, not a numeric uid[:gid] that runAsNonRoot can verify`];
  const [uid, gid] = [Number(ids[1]), ids[2] === undefined ? undefined : Number(ids[2])];
  if (uid === 0) problems.push('the image runs as root');
  for (const name of [API, WORKER]) {
    const pod = deployment(m, name, problems)?.spec.template.spec;
    for (const c of pod?.containers ?? []) {
      const sc = { ...pod?.securityContext, ...c.securityContext };
      if (sc.runAsNonRoot !== true) problems.push(`${name}/${c.name}: runAsNonRoot is not true`);
      if (sc.runAsUser !== uid) problems.push(`${name}/${c.name}: runAsUser ${sc.runAsUser} is not the image's user ${uid}`);
      if (gid !== undefined && sc.runAsGroup !== undefined && sc.runAsGroup !== gid)
        problems.push(`${name}/${c.name}: runAsGroup ${sc.runAsGroup} is not the image's group ${gid}`);
      if (c.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${name}/${c.name}: allowPrivilegeEscalation is not false`);
    }
  }
  return problems;
};

const apiPortsAndProbes: Rule = (m) => {
  const problems: string[] = [];
  const api = deployment(m, API, problems);
  const c = api?.spec.template.spec.containers[0];
  if (!api || !c) return problems;
  const env = containerEnv(m, c, problems);
  const port = Number(env.PORT ?? '8080');
  if (env.HOST !== '0.0.0.0') problems.push(`the API listens on ${env.HOST}, unreachable from outside its pod (HOST must be 0.0.0.0)`);
  if (!c.ports.some((p) => p.containerPort === port))
    problems.push(`the API container declares ports ${c.ports.map((p) => p.containerPort).join(', ')}, not its PORT ${port}`);
  const expected = { startupProbe: '/livez', readinessProbe: '/readyz', livenessProbe: '/livez' } as const;
  for (const kind of ['readinessProbe', 'livenessProbe'] as const) if (!c[kind]?.httpGet) problems.push(`the API has no HTTP ${kind}`);
  for (const p of httpProbes(c)) {
    // Liveness on /readyz or /healthz would restart healthy pods whenever the store or Temporal is away.
    if (p.path !== expected[p.kind]) problems.push(`the API's ${p.kind} probes ${p.path}, not ${expected[p.kind]}`);
    const target = resolvePort(c, p.port);
    if (target !== port) problems.push(`the API's ${p.kind} probes port ${String(p.port)} (${target}), the API listens on ${port}`);
  }
  const podLabels = api.spec.template.metadata.labels;
  if (!matches(api.spec.selector.matchLabels, podLabels)) problems.push(`${API}'s selector does not match its own pods`);
  const workerLabels = deployment(m, WORKER, problems)?.spec.template.metadata.labels ?? {};
  const service = parsed(serviceSchema, named(m, 'Service', API), `Service ${API}`, problems);
  if (service) {
    if (!matches(service.spec.selector, podLabels)) problems.push(`Service ${API} does not select the API pods`);
    if (matches(service.spec.selector, workerLabels)) problems.push(`Service ${API} selects the worker pods too, which serve no HTTP`);
    for (const p of service.spec.ports) {
      const target = resolvePort(c, p.targetPort ?? p.port);
      if (target !== port) problems.push(`Service ${API} port ${p.port} targets ${String(p.targetPort)} (${target}), the API listens on ${port}`);
    }
  }
  const pdb = parsed(pdbSchema, named(m, 'PodDisruptionBudget', API), `PodDisruptionBudget ${API}`, problems);
  if (pdb) {
    if (!matches(pdb.spec.selector.matchLabels, podLabels)) problems.push(`PodDisruptionBudget ${API} does not select the API pods`);
    if (matches(pdb.spec.selector.matchLabels, workerLabels)) problems.push(`PodDisruptionBudget ${API} counts the worker pods too`);
  }
  return problems;
};

/** The worker's only HTTP surface is its metrics listeners: each declared port is one of them, and each of them is declared. */
const workerServesOnlyMetrics: Rule = (m) => {
  const problems: string[] = [];
  const worker = deployment(m, WORKER, problems);
  if (!worker) return problems;
  if (!matches(worker.spec.selector.matchLabels, worker.spec.template.metadata.labels)) problems.push(`${WORKER}'s selector does not match its own pods`);
  for (const c of worker.spec.template.spec.containers) {
    const env = containerEnv(m, c, problems);
    const metricsPorts = ['METRICS_ADDRESS', 'TEMPORAL_METRICS_ADDRESS'].flatMap((k) => (env[k] ? [Number(env[k].slice(env[k].lastIndexOf(':') + 1))] : []));
    for (const p of c.ports) {
      if (!metricsPorts.includes(p.containerPort))
        problems.push(`${WORKER}/${c.name} declares port ${p.containerPort}, which no metrics listener of the worker serves`);
    }
    for (const port of metricsPorts) {
      if (!c.ports.some((p) => p.containerPort === port)) problems.push(`${WORKER}/${c.name} serves metrics on ${port} but does not declare the port`);
    }
    for (const kind of PROBE_KINDS) {
      const p = c[kind];
      if (p && (p.httpGet || p.tcpSocket || p.grpc)) problems.push(`${WORKER}/${c.name} has a network ${kind}, which nothing in the worker answers`);
    }
  }
  return problems;
};

const commandsAreBuilt: Rule = (m) => {
  const problems: string[] = [];
  for (const [name, script] of [
    [API, 'dist/src/api/server.js'],
    [WORKER, 'dist/src/worker.js'],
  ] as const) {
    const c = deployment(m, name, problems)?.spec.template.spec.containers[0];
    if (!c) continue;
    const command = c.command ?? [];
    if (command[0] !== 'node' || command[1] !== script || command.length !== 2)
      problems.push(`${name} runs ${JSON.stringify(command)}, not ["node", "${script}"]`);
    else if (!m.sourceExists(script.replace(/^dist\//, '').replace(/\.js$/, '.ts'))) problems.push(`${name} runs ${script}, which nothing compiles`);
  }
  return problems;
};

const storageIsShared: Rule = (m) => {
  const problems: string[] = [];
  const pvcs = new Map(
    objects(m, 'PersistentVolumeClaim')
      .map((x) => parsed(pvcSchema, x, 'PersistentVolumeClaim', problems))
      .flatMap((p) => (p ? [[p.metadata.name, p] as const] : [])),
  );
  const found = [API, WORKER].map((name) => {
    const pod = deployment(m, name, problems)?.spec.template.spec;
    const c = pod?.containers[0];
    if (!pod || !c) return undefined;
    const env = containerEnv(m, c, problems);
    const dataDir = path.posix.resolve('/app', env.DATA_DIR ?? './data');
    const storageDir = env.STORAGE_DIR ? path.posix.resolve('/app', env.STORAGE_DIR) : path.posix.join(dataDir, 'storage');
    const within = (dir: string, parent: string) => dir === parent || dir.startsWith(`${parent}/`);
    const mount = c.volumeMounts.find((vm) => within(dataDir, vm.mountPath));
    const claim = pod.volumes.find((v) => v.name === mount?.name)?.persistentVolumeClaim?.claimName;
    if (!mount || !claim) problems.push(`${name}: DATA_DIR ${dataDir} is not on a PersistentVolumeClaim`);
    else if (!within(storageDir, mount.mountPath)) problems.push(`${name}: STORAGE_DIR ${storageDir} is outside the volume at ${mount.mountPath}`);
    else if (!pvcs.get(claim)) problems.push(`${name} mounts claim ${claim}, which no manifest defines`);
    else if (!pvcs.get(claim)!.spec.accessModes.includes('ReadWriteMany'))
      problems.push(`claim ${claim} is not ReadWriteMany: API and worker pods on different nodes could not share it`);
    if (c.securityContext?.readOnlyRootFilesystem === true && !c.volumeMounts.some((vm) => vm.mountPath === '/tmp')) {
      problems.push(`${name}: a read-only root filesystem without a writable /tmp`);
    }
    return { claim, mountPath: mount?.mountPath, storageDir };
  });
  const [api, worker] = found;
  if (api && worker) {
    if (api.claim !== worker.claim) problems.push(`the API stores on claim ${api.claim}, the worker on ${worker.claim}`);
    if (api.mountPath !== worker.mountPath) problems.push(`the volume is mounted at ${api.mountPath} and ${worker.mountPath}`);
    if (api.storageDir !== worker.storageDir) problems.push(`storage dirs differ: ${api.storageDir} vs ${worker.storageDir}`);
  }
  return problems;
};

/** How long the processes take to stop after SIGTERM, read from their sources. */
function drainSeconds(m: Model): { api: number; worker: number } | string {
  const api = /closeAllConnections\(\),\s*(\d+)\)/.exec(m.apiServerSource);
  const worker = /shutdownGraceTime:\s*'(\d+)s'/.exec(m.workerSource);
  if (!api || !worker) return 'cannot find the drain of src/api/server.ts or the shutdownGraceTime of src/worker.ts: update this test with them';
  return { api: Number(api[1]) / 1000, worker: Number(worker[1]) };
}
/** After their drain: the API flushes usage and closes its store; a worker's cancelled activities wind down (about 25 s towards an absent Temporal, docs/operations.md). */
const API_CLOSE_MARGIN_S = 10;
const WORKER_CLOSE_MARGIN_S = 25;

const drainFitsGracePeriod: Rule = (m) => {
  const problems: string[] = [];
  const drain = drainSeconds(m);
  if (typeof drain === 'string') return [drain];
  const api = deployment(m, API, problems)?.spec.template.spec;
  const worker = deployment(m, WORKER, problems)?.spec.template.spec;
  const grace = (pod: PodSpec) => pod.terminationGracePeriodSeconds ?? 30;
  if (api) {
    const c = api.containers[0]!;
    const preStop = preStopSeconds(c);
    // Endpoints are removed while the pod terminates; without a pause, new connections still arrive after the listener closed.
    if (preStop < 1) problems.push('the API has no preStop pause before SIGTERM');
    const needed = preStop + drain.api + API_CLOSE_MARGIN_S;
    if (grace(api) < needed)
      problems.push(`the API's grace period ${grace(api)} s is shorter than preStop ${preStop} + drain ${drain.api} + ${API_CLOSE_MARGIN_S} s`);
  }
  if (worker) {
    const needed = preStopSeconds(worker.containers[0]!) + drain.worker + WORKER_CLOSE_MARGIN_S;
    if (grace(worker) < needed)
      problems.push(`the worker's grace period ${grace(worker)} s is shorter than its shutdown grace ${drain.worker} + ${WORKER_CLOSE_MARGIN_S} s`);
  }
  return problems;
};

const resourcesAreBounded: Rule = (m) => {
  const problems: string[] = [];
  for (const name of [API, WORKER]) {
    for (const c of deployment(m, name, problems)?.spec.template.spec.containers ?? []) {
      for (const side of ['requests', 'limits'] as const) {
        for (const r of ['cpu', 'memory'] as const)
          if (c.resources?.[side]?.[r] === undefined) problems.push(`${name}/${c.name} has no ${r} ${side.slice(0, -1)}`);
      }
    }
  }
  return problems;
};

const secretIsATemplate: Rule = (m) => {
  const problems: string[] = [];
  const secrets = objects(m, 'Secret');
  if (secrets.length === 0) problems.push('no Secret template');
  for (const x of secrets) {
    if (!isTemplate(x)) problems.push(`${x.file}: a Secret outside a *.example.yaml template`);
    if (x.doc.data !== undefined) problems.push(`${x.file}: base64 data (a template has readable stringData placeholders only)`);
    for (const [key, value] of Object.entries(parsed(secretSchema, x, 'Secret', problems)?.stringData ?? {})) {
      if (value !== '' && !value.includes('REPLACE-ME')) problems.push(`${x.file}: ${key} holds a value that is not a REPLACE-ME placeholder`);
    }
  }
  return problems;
};

const RULES: Record<string, Rule> = {
  onlyStableApis,
  namespaceAgnostic,
  kustomizationIsComplete,
  envIsKnown,
  configIsAccepted,
  runsAsImageUser,
  apiPortsAndProbes,
  workerServesOnlyMetrics,
  commandsAreBuilt,
  storageIsShared,
  drainFitsGracePeriod,
  resourcesAreBounded,
  secretIsATemplate,
};

function loadModel(): Model {
  const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
  return {
    manifests: yamlFilesUnder(DEPLOY).flatMap((file) => parseManifests(file, fs.readFileSync(path.join(DEPLOY, file), 'utf8'))),
    dockerfile: read('Dockerfile'),
    apiServerSource: read('src/api/server.ts'),
    workerSource: read('src/worker.ts'),
    sourceExists: (rel) => fs.existsSync(path.join(ROOT, rel)),
    fileExists: (rel) => fs.existsSync(path.join(DEPLOY, rel)),
  };
}

/** A deep copy to mutate. */
function variant(base: Model, mutate: (m: Model) => void): Model {
  const copy: Model = { ...base, manifests: structuredClone(base.manifests) };
  mutate(copy);
  return copy;
}

// Mutation helpers: typed paths into the copies (a wrong path throws, failing the mutation's test).
const doc = (m: Model, kind: string, name: string): JsonObject => {
  const found = m.manifests.find((x) => x.doc.kind === kind && (x.doc.metadata as JsonObject | undefined)?.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found.doc;
};
const at = (node: Json | undefined, ...keys: (string | number)[]): JsonObject => {
  let current: Json | undefined = node;
  for (const key of keys) {
    if (Array.isArray(current) && typeof key === 'number') current = current[key];
    else if (current && typeof current === 'object' && !Array.isArray(current) && typeof key === 'string') current = current[key];
    else current = undefined;
  }
  if (!current || typeof current !== 'object' || Array.isArray(current)) throw new Error(`no object at ${keys.join('.')}`);
  return current;
};
const pod = (m: Model, name: string) => at(doc(m, 'Deployment', name), 'spec', 'template', 'spec');
const apiContainer = (m: Model) => at(pod(m, API), 'containers', 0);
const workerContainer = (m: Model) => at(pod(m, WORKER), 'containers', 0);
const envList = (c: JsonObject) => c.env as JsonObject[];
const configData = (m: Model) => at(doc(m, 'ConfigMap', 'gateway-config'), 'data');

// ---------------------------------------------------------------------------------------------
// The schema check, in its own process (test/support/kubernetes-schema.mjs)

const resultsSchema = z.array(z.object({ id: z.string(), errors: z.array(z.string()) }));

function schemaProblems(documents: { id: string; document: JsonObject }[]): Map<string, string[]> {
  const run = spawnSync(process.execPath, [path.join(ROOT, 'test', 'support', 'kubernetes-schema.mjs')], {
    input: JSON.stringify(documents),
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`the schema check failed to run (exit ${run.status}): ${run.stderr}`);
  return new Map(resultsSchema.parse(JSON.parse(run.stdout)).map((r) => [r.id, r.errors]));
}

const kubernetesObjects = (m: Model) => m.manifests.filter((x) => x.file !== 'kubernetes/kustomization.yaml');

const model = loadModel();

describe('deploy/ matches Kubernetes and the gateway', () => {
  test('every YAML file under deploy/ is read, and deploy/kubernetes has the objects the deployment needs', () => {
    expect(yamlFilesUnder(DEPLOY).length).toBeGreaterThanOrEqual(8);
    expect(kubernetesObjects(model).map(kindOf).sort()).toEqual(
      [
        'apps/v1 Deployment',
        'apps/v1 Deployment',
        'policy/v1 PodDisruptionBudget',
        'v1 ConfigMap',
        'v1 PersistentVolumeClaim',
        'v1 Secret',
        'v1 Service',
      ].sort(),
    );
  });

  test("every Kubernetes object is valid against Kubernetes' schemas, unknown fields included", () => {
    const problems = schemaProblems(kubernetesObjects(model).map((x, i) => ({ id: `${x.file}#${i}`, document: x.doc })));
    expect([...problems].filter(([, errors]) => errors.length > 0)).toEqual([]);
    expect(problems.size).toBe(kubernetesObjects(model).length);
  });

  // Each must be refused by the schema check: the check validates, it does not only parse.
  const schemaMutations: [string, (m: Model) => void, RegExp][] = [
    ['a misspelt field', (m) => (apiContainer(m).readinesProbe = apiContainer(m).readinessProbe!), /containers\/0\/readinesProbe: unknown field/],
    ['a field deep down that the schema lacks', (m) => (at(apiContainer(m), 'readinessProbe', 'httpGet').paht = '/readyz'), /httpGet\/paht: unknown field/],
    ['an unknown top-level field', (m) => (doc(m, 'Service', API).specs = {}), /\/specs: unknown field/],
    ['a string where an integer belongs', (m) => (at(doc(m, 'Deployment', API), 'spec').replicas = '2'), /\/spec\/replicas: type/],
    ['a number where a string belongs', (m) => (envList(workerContainer(m))[0]!.value = 300), /env\/0\/value: type/],
    ['a quantity that is not one', (m) => (at(apiContainer(m), 'resources', 'limits').memory = '512 megabytes'), /limits\/memory: .*quantity/],
    ['a value outside an enum', (m) => (apiContainer(m).imagePullPolicy = 'Sometimes'), /imagePullPolicy: enum/],
    ['a required field removed', (m) => delete at(doc(m, 'Deployment', WORKER), 'spec').selector, /\/spec: required .*selector/],
    ['a kind Kubernetes does not have', (m) => (doc(m, 'PodDisruptionBudget', API).kind = 'PodDisruptionBudgets'), /no Kubernetes schema/],
    [
      "an unquoted `no`, which Kubernetes' YAML 1.1 reads as a boolean",
      (m) => (configData(m).TRUST_PROXY = parseManifests('x.yaml', 'a: no')[0]!.doc.a!),
      /data\/TRUST_PROXY: type/,
    ],
  ];
  test.each(schemaMutations)('the schema check refuses %s', (_what, mutate, expected) => {
    const mutated = variant(model, mutate);
    const problems = schemaProblems(kubernetesObjects(mutated).map((x, i) => ({ id: String(i), document: x.doc })));
    expect([...problems.values()].flat().join('\n')).toMatch(expected);
  });

  test.each(Object.keys(RULES))('%s', (rule) => {
    expect(RULES[rule]!(model)).toEqual([]);
  });

  // One mutation per rule (several for the rules with several clauses): each must be caught.
  const mutations: [string, string, (m: Model) => void][] = [
    ['onlyStableApis', 'a beta API', (m) => (doc(m, 'PodDisruptionBudget', API).apiVersion = 'policy/v1beta1')],
    ['namespaceAgnostic', 'a fixed namespace', (m) => (at(doc(m, 'Service', API), 'metadata').namespace = 'gateway')],
    [
      'kustomizationIsComplete',
      'a file left out',
      (m) => (m.manifests.find((x) => x.file === 'kubernetes/kustomization.yaml')!.doc.resources as string[]).pop(),
    ],
    [
      'kustomizationIsComplete',
      'the Secret template applied',
      (m) => (m.manifests.find((x) => x.file === 'kubernetes/kustomization.yaml')!.doc.resources as string[]).push('secret.example.yaml'),
    ],
    ['kustomizationIsComplete', 'a listed file that does not exist', (m) => (m.fileExists = (rel) => rel !== 'kubernetes/api-pdb.yaml')],
    [
      'kustomizationIsComplete',
      'an unknown kustomization field',
      (m) => (m.manifests.find((x) => x.file === 'kubernetes/kustomization.yaml')!.doc.commonLabel = {}),
    ],
    ['kustomizationIsComplete', 'the worker on another image', (m) => (workerContainer(m).image = 'other-image')],
    ['envIsKnown', 'a misspelt ConfigMap key', (m) => (configData(m).TEMPORAL_TASKQUEUE = 'x')],
    ['envIsKnown', 'a misspelt container variable', (m) => envList(workerContainer(m)).push({ name: 'WORKER_MAX_ACTIVITIES', value: '1' })],
    ['envIsKnown', 'a misspelt Secret key', (m) => (at(doc(m, 'Secret', 'gateway-secrets'), 'stringData').GEMINI_KEY = '')],
    ['configIsAccepted', 'an invalid value', (m) => (configData(m).LOG_LEVEL = 'loud')],
    ['configIsAccepted', 'no TEMPORAL_ADDRESS', (m) => delete configData(m).TEMPORAL_ADDRESS],
    ['configIsAccepted', 'the worker on another task queue', (m) => envList(workerContainer(m)).push({ name: 'TEMPORAL_TASK_QUEUE', value: 'other' })],
    [
      'configIsAccepted',
      'the worker without the store',
      (m) => (workerContainer(m).env = envList(workerContainer(m)).filter((v) => v.name !== 'DATABASE_URL')),
    ],
    [
      'configIsAccepted',
      'a key the Secret does not have',
      (m) =>
        (at(
          envList(apiContainer(m)).find((v) => v.name === 'ADMIN_TOKEN')!,
          'valueFrom',
          'secretKeyRef',
        ).key = 'TOKEN'),
    ],
    [
      'configIsAccepted',
      'the worker given the admin token',
      (m) => envList(workerContainer(m)).push(envList(apiContainer(m)).find((v) => v.name === 'ADMIN_TOKEN')!),
    ],
    ['runsAsImageUser', 'another uid', (m) => (at(pod(m, WORKER), 'securityContext').runAsUser = 1001)],
    ['runsAsImageUser', 'root allowed', (m) => delete at(pod(m, API), 'securityContext').runAsNonRoot],
    ['runsAsImageUser', 'the image user by name', (m) => (m.dockerfile = m.dockerfile.replace(/^USER .*$/m, 'USER node'))],
    ['runsAsImageUser', 'privilege escalation allowed', (m) => (at(workerContainer(m), 'securityContext').allowPrivilegeEscalation = true)],
    ['apiPortsAndProbes', 'PORT moved, container port not', (m) => (envList(apiContainer(m)).find((v) => v.name === 'PORT')!.value = '9090')],
    ['apiPortsAndProbes', 'listens on loopback', (m) => (envList(apiContainer(m)).find((v) => v.name === 'HOST')!.value = '127.0.0.1')],
    ['apiPortsAndProbes', 'readiness on /healthz', (m) => (at(apiContainer(m), 'readinessProbe', 'httpGet').path = '/healthz')],
    ['apiPortsAndProbes', 'liveness on /readyz', (m) => (at(apiContainer(m), 'livenessProbe', 'httpGet').path = '/readyz')],
    ['apiPortsAndProbes', 'a probe on a port nobody names', (m) => (at(apiContainer(m), 'livenessProbe', 'httpGet').port = 'metrics')],
    ['apiPortsAndProbes', 'no readiness probe', (m) => delete apiContainer(m).readinessProbe],
    ['apiPortsAndProbes', 'the Service targets another port', (m) => (at(doc(m, 'Service', API), 'spec', 'ports', 0).targetPort = 9000)],
    ['apiPortsAndProbes', 'the Service selects the workers too', (m) => delete at(doc(m, 'Service', API), 'spec', 'selector')['app.kubernetes.io/component']],
    [
      'apiPortsAndProbes',
      'the PDB selects nothing',
      (m) => (at(doc(m, 'PodDisruptionBudget', API), 'spec', 'selector', 'matchLabels')['app.kubernetes.io/component'] = 'web'),
    ],
    [
      'apiPortsAndProbes',
      'selector and pod labels disagree',
      (m) => (at(doc(m, 'Deployment', API), 'spec', 'template', 'metadata', 'labels')['app.kubernetes.io/component'] = 'edge'),
    ],
    ['workerServesOnlyMetrics', 'an HTTP probe on the worker', (m) => (workerContainer(m).livenessProbe = { httpGet: { path: '/livez', port: 8080 } })],
    [
      'workerServesOnlyMetrics',
      'a port on the worker that nothing serves',
      (m) => (workerContainer(m).ports = [{ containerPort: 9465 }, { containerPort: 9464 }, { containerPort: 8080 }]),
    ],
    [
      'workerServesOnlyMetrics',
      "a metrics port the worker's listener does not use",
      (m) => (workerContainer(m).ports = [{ containerPort: 9999 }, { containerPort: 9464 }]),
    ],
    ['commandsAreBuilt', 'the worker runs the API', (m) => (workerContainer(m).command = ['node', 'dist/src/api/server.js'])],
    ['commandsAreBuilt', 'another script', (m) => (apiContainer(m).command = ['node', 'dist/src/api/main.js'])],
    ['commandsAreBuilt', 'a script whose source is gone', (m) => (m.sourceExists = (rel) => rel !== 'src/worker.ts')],
    ['storageIsShared', 'the worker on another claim', (m) => (at(pod(m, WORKER), 'volumes', 0, 'persistentVolumeClaim').claimName = 'worker-data')],
    ['storageIsShared', 'mounted elsewhere on the worker', (m) => (at(workerContainer(m), 'volumeMounts', 0).mountPath = '/srv/data')],
    ['storageIsShared', 'STORAGE_DIR off the volume', (m) => (configData(m).STORAGE_DIR = '/tmp/storage')],
    ['storageIsShared', 'a ReadWriteOnce claim', (m) => (at(doc(m, 'PersistentVolumeClaim', 'gateway-data'), 'spec').accessModes = ['ReadWriteOnce'])],
    [
      'storageIsShared',
      'no writable /tmp',
      (m) => (apiContainer(m).volumeMounts = (apiContainer(m).volumeMounts as JsonObject[]).filter((vm) => vm.mountPath !== '/tmp')),
    ],
    ['drainFitsGracePeriod', 'the API killed before it drains', (m) => (pod(m, API).terminationGracePeriodSeconds = 8)],
    ['drainFitsGracePeriod', 'no preStop pause', (m) => delete apiContainer(m).lifecycle],
    ['drainFitsGracePeriod', 'the worker killed mid-shutdown', (m) => (pod(m, WORKER).terminationGracePeriodSeconds = 20)],
    [
      'drainFitsGracePeriod',
      'a longer worker grace in the code',
      (m) => (m.workerSource = m.workerSource.replace(/shutdownGraceTime: '\d+s'/, "shutdownGraceTime: '50s'")),
    ],
    ['resourcesAreBounded', 'no memory limit', (m) => delete at(workerContainer(m), 'resources', 'limits').memory],
    ['secretIsATemplate', 'a real-looking secret', (m) => (at(doc(m, 'Secret', 'gateway-secrets'), 'stringData').ADMIN_TOKEN = 'c0ffee'.repeat(10))],
    ['secretIsATemplate', 'base64 data', (m) => (doc(m, 'Secret', 'gateway-secrets').data = { ADMIN_TOKEN: 'YWJj' })],
  ];
  test.each(mutations)('%s catches: %s', (rule, _what, mutate) => {
    expect(RULES[rule]!(variant(model, mutate)).length).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------------------------
// The probes' paths, asked of the real app (the Koa app in process, test/routes/harness.ts)

describe('the probes the manifests declare answer on the app', () => {
  let app: RouteApp;
  beforeAll(async () => {
    app = await startRouteApp();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  const probesOf = (m: Model) =>
    [API, WORKER].flatMap((name) => {
      const d = deploymentSchema.safeParse(named(m, 'Deployment', name)?.doc);
      return d.success ? d.data.spec.template.spec.containers.flatMap((c) => httpProbes(c).map((p) => ({ name, kind: p.kind, path: p.path }))) : [];
    });

  async function unanswered(m: Model): Promise<string[]> {
    const problems: string[] = [];
    for (const p of probesOf(m)) {
      const res = await fetch(`${app.url}${p.path}`);
      await res.arrayBuffer();
      // A healthy process answers 200 on each probe the manifests use (the harness's store is up).
      if (res.status !== 200) problems.push(`${p.name} ${p.kind} ${p.path}: ${res.status}`);
    }
    return problems;
  }

  test('every HTTP probe path answers 200', async () => {
    expect(probesOf(model).length).toBeGreaterThanOrEqual(3);
    expect(await unanswered(model)).toEqual([]);
  });

  test('a probe path the app does not serve is caught', async () => {
    const mutated = variant(model, (m) => (at(apiContainer(m), 'readinessProbe', 'httpGet').path = '/ready'));
    expect(await unanswered(mutated)).toEqual([`${API} readinessProbe /ready: 404`]);
  });
});
