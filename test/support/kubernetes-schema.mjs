// Validates Kubernetes objects against the upstream OpenAPI schemas, offline, for
// test/unit/deploy-manifests.test.ts. Reads a JSON array of { id, document } on stdin and
// writes a JSON array of { id, errors } (an empty list: valid).
//
// The schemas are the kubernetes-models package's (a pinned devDependency): Kubernetes' own
// OpenAPI definitions, compiled to ajv validators. They check types, formats (quantities,
// int32), enums and required fields. They do not reject fields the schema does not name, and
// kubectl does (strict field validation), so this file adds that: each object is watched while
// the validator walks it, and a key the validator neither looked up by name nor enumerated as
// a map's entry is a field the schema does not have.
//
// A separate process because kubernetes-models is ESM only, which Jest's CommonJS module
// loader cannot import.

/** @typedef {{ path: string, keys: string[], read: Set<string>, enumerated: boolean }} Visit */

/** The ajv validator of an apiVersion and kind, e.g. apps/v1 Deployment -> IoK8sApiAppsV1Deployment. */
async function validatorOf(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z]+$/.test(kind)) return undefined;
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['core', apiVersion];
  const pascal = (s) => s.charAt(0).toUpperCase() + s.slice(1);
  const groupName = group.split('.')[0];
  if (!/^[a-z0-9]+$/.test(groupName) || !/^v\d+((alpha|beta)\d+)?$/.test(version)) return undefined;
  try {
    const module = await import(`kubernetes-models/_schemas/IoK8sApi${pascal(groupName)}${pascal(version)}${kind}`);
    return module.validate;
  } catch {
    return undefined;
  }
}

/** A copy of `value` whose objects record, in `visits`, which of their keys the validator reads. */
function watched(value, path, visits) {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item, i) => watched(item, `${path}/${i}`, visits));
  const copy = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, watched(v, `${path}/${k}`, visits)]));
  /** @type {Visit} */
  const visit = { path, keys: Object.keys(copy), read: new Set(), enumerated: false };
  visits.push(visit);
  return new Proxy(copy, {
    get(target, key, receiver) {
      if (typeof key === 'string') visit.read.add(key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key === 'string') visit.read.add(key);
      return Reflect.has(target, key);
    },
    // A map (labels, ConfigMap data, resource limits): the validator enumerates its keys to check each value.
    ownKeys(target) {
      visit.enumerated = true;
      return Reflect.ownKeys(target);
    },
  });
}

async function problemsOf(document) {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) return ['not an object'];
  const validate = await validatorOf(document.apiVersion, document.kind);
  if (!validate) return [`no Kubernetes schema for apiVersion ${document.apiVersion}, kind ${document.kind}`];
  /** @type {Visit[]} */
  const visits = [];
  const valid = validate(watched(document, '', visits));
  const errors = valid ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.keyword} ${JSON.stringify(e.params)}`);
  const unknown = visits.filter((v) => !v.enumerated).flatMap((v) => v.keys.filter((k) => !v.read.has(k)).map((k) => `${v.path}/${k}`));
  // The fields inside an unknown field were never read either: name the outermost one only.
  const outermost = unknown.filter((p) => !unknown.some((q) => p.startsWith(`${q}/`)));
  return [...errors, ...outermost.map((p) => `${p}: unknown field (not in the schema)`)];
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', async () => {
  const items = JSON.parse(input);
  const results = [];
  for (const { id, document } of items) results.push({ id, errors: await problemsOf(document) });
  process.stdout.write(JSON.stringify(results));
});
