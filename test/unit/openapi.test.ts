/**
 * The OpenAPI document (src/api/openapi): valid OpenAPI 3.1 by the OpenAPI project's own
 * schemas, and docs/openapi.json exactly what the code generates. What it says about the routes
 * is checked against the running app in test/routes/openapi.test.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../../src/api/openapi/document';
import { OPENAPI_DOCS_FILE, openApiDocsPath, openApiDocsText } from '../../src/api/openapi/docs-file';
import { projectRoot } from '../../src/config/paths';

const VALIDATOR = path.join(projectRoot(), 'test', 'support', 'validate-openapi.mjs');

/** The validator's verdict on a document (it runs in a child process: it is an ES module). */
function validate(doc: unknown): { valid: boolean; errors: unknown } {
  const run = spawnSync(process.execPath, [VALIDATOR], { input: JSON.stringify(doc), encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`the validator failed to run: ${run.stderr}`);
  return JSON.parse(run.stdout) as { valid: boolean; errors: unknown };
}

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

describe('the document', () => {
  const doc = buildOpenApiDocument('https://gateway.example.test');

  test('is valid OpenAPI 3.1, every $ref resolving', () => {
    const verdict = validate(doc);
    expect(verdict).toEqual({ valid: true, errors: null });
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.servers).toEqual([{ url: 'https://gateway.example.test', description: expect.any(String) }]);
  });

  test('the validator rejects broken documents (the check above can fail)', () => {
    const noVersion = copy(doc) as { info: { version?: string } };
    delete noVersion.info.version;
    const danglingRef = copy(doc);
    danglingRef.paths['/v1/billing']!.get!.responses['200']!.content!['application/json']!.schema = { $ref: '#/components/schemas/Nowhere' };
    const noDescription = copy(doc) as unknown as { paths: Record<string, Record<string, { responses: Record<string, { description?: string }> }>> };
    delete noDescription.paths['/livez']!.get!.responses['200']!.description;
    const badParameter = copy(doc) as unknown as { paths: Record<string, Record<string, { parameters: { in: string }[] }>> };
    badParameter.paths['/v1/video/query']!.get!.parameters[0]!.in = 'body';
    const verdicts = Object.fromEntries(
      Object.entries({ noVersion, danglingRef, noDescription, badParameter }).map(([name, broken]) => [name, validate(broken).valid]),
    );
    expect(verdicts).toEqual({ noVersion: false, danglingRef: false, noDescription: false, badParameter: false });
  });

  test('names the package version and every operation once, each with a unique operationId', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
    expect(doc.info.version).toBe(pkg.version);
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('authenticates each family as the middleware does', () => {
    const security = (method: 'get' | 'post', p: string) => doc.paths[p]?.[method]?.security;
    expect(security('post', '/v1/video/create')).toEqual([{ apiKey: [] }]);
    expect(security('post', '/motion/v1/characters')).toEqual([{ apiKey: [] }]);
    expect(security('post', '/v1/messages')).toEqual([{ apiKeyHeader: [] }, { apiKey: [] }]);
    expect(security('get', '/v1/models')).toEqual([{ apiKeyHeader: [] }, { apiKey: [] }]);
    expect(security('get', '/admin/keys')).toEqual([{ adminToken: [] }]);
    expect(security('get', '/livez')).toEqual([]);
    expect(security('get', '/files/{path}')).toEqual([]);
    expect(doc.components.securitySchemes.apiKeyHeader).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
  });
});

test(`${OPENAPI_DOCS_FILE} is what the code generates`, () => {
  const expected = openApiDocsText();
  const actual = fs.existsSync(openApiDocsPath()) ? fs.readFileSync(openApiDocsPath(), 'utf8') : '';
  if (actual !== expected) {
    const a = actual.split('\n');
    const e = expected.split('\n');
    const line = e.findIndex((l, i) => l !== a[i]);
    throw new Error(
      `${OPENAPI_DOCS_FILE} is out of date: run \`npm run openapi\` and commit the file.\n` +
        `First difference at line ${line + 1}:\n  committed: ${a[line] ?? '(end of file)'}\n  generated: ${e[line] ?? '(end of file)'}`,
    );
  }
});
