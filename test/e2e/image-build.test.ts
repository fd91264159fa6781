/**
 * The image's build, reproduced without a Docker engine: the build context, exactly as
 * .dockerignore filters this checkout, is copied into a temporary folder and the build stage's
 * RUN commands run there, in order; any that fails fails the test. One substitution: the
 * dependency install (`npm ci`) is a link to this checkout's node_modules, installed from the
 * same lock file (a registry round trip in every test run would test the registry), and so
 * `npm prune`, which would prune the linked tree, does not run. Then the runtime stage's inputs
 * must exist: what it copies from the build, and the scripts its CMD and the compose services run.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../src/config/paths';
import { dockerignoreMatches, dockerignorePatterns, parseDockerfile } from '../support/dockerfile';

const ROOT = projectRoot();

/** Every file of the context, relative with /, as the engine sends it. */
function contextFiles(patterns: string[]): string[] {
  const reincludes = patterns.some((p) => p.startsWith('!'));
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const file = rel ? `${rel}/${entry.name}` : entry.name;
      const ignored = dockerignoreMatches(patterns, file);
      if (entry.isDirectory()) {
        // An ignored folder is skipped whole unless a ! pattern could bring something back.
        if (!ignored || reincludes) walk(file);
      } else if (!ignored && (entry.isFile() || entry.isSymbolicLink())) out.push(file);
    }
  };
  walk('');
  return out;
}

/** The build stage's RUN commands split at && and ||, as the shell runs them (the first of an || chain). */
function buildCommands(dockerfile: string): string[] {
  const [build] = parseDockerfile(dockerfile);
  if (!build) throw new Error('the Dockerfile has no stage');
  return build.instructions
    .filter((i) => i.op === 'RUN')
    .flatMap((i) => i.args.split(/\s*&&\s*/))
    .map((c) => c.split(/\s*\|\|\s*/)[0]!.trim());
}

const isInstall = (command: string) => /^npm (ci|install|prune)\b/.test(command);

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'image-build-'));
  const patterns = dockerignorePatterns(fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8'));
  for (const file of contextFiles(patterns)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
});

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('the context holds the product only: no tests, benchmarks, build output or secrets', () => {
  const files = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => !f.startsWith('node_modules'));
  expect(files).toContain(path.join('src', 'api', 'server.ts'));
  expect(files).toContain('package-lock.json');
  expect(files.filter((f) => /^(test|bench|dist|data|\.tools|\.git)(\/|$)/.test(f) || /(^|\/)\.env/.test(f))).toEqual([]);
});

test("the build stage's commands succeed on that context and produce what the runtime stage runs", () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const commands = buildCommands(dockerfile);
  expect(commands.filter((c) => !isInstall(c)).length).toBeGreaterThanOrEqual(2);
  for (const command of commands.filter((c) => !isInstall(c))) {
    const run = spawnSync('sh', ['-c', command], { cwd: dir, encoding: 'utf8', timeout: 300_000 });
    if (run.status !== 0) throw new Error(`\`${command}\` failed (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);
  }
  const runtime = parseDockerfile(dockerfile).at(-1)!;
  // Every source of each COPY --from=build (all but the flags and the destination).
  const copied = runtime.instructions
    .filter((i) => i.op === 'COPY' && i.args.startsWith('--from='))
    .flatMap((i) =>
      i.args
        .split(' ')
        .filter((a) => !a.startsWith('--'))
        .slice(0, -1),
    )
    .map((source) => source.replace(/^\/app\//, ''));
  expect(copied).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'node_modules', 'dist']));
  for (const input of copied) expect(fs.existsSync(path.join(dir, input))).toBe(true);
  const cmd = JSON.parse(runtime.instructions.filter((i) => i.op === 'CMD').at(-1)!.args) as string[];
  for (const script of [cmd[1]!, 'dist/src/worker.js', 'dist/workflow-bundle.js', 'dist/simulator/main.js', 'dist/console/index.html']) {
    expect(fs.existsSync(path.join(dir, script))).toBe(true);
  }
  // Nothing but the product was compiled (and both workflow bundles: the traced one runs when
  // tracing is on), and the console was bundled (the API serves it at /console).
  expect(fs.readdirSync(path.join(dir, 'dist')).sort()).toEqual(
    [
      '.tsbuildinfo.product',
      'console',
      'scripts',
      'simulator',
      'src',
      'workflow-bundle.js',
      'workflow-bundle.js.sha256',
      'workflow-bundle-traced.js',
      'workflow-bundle-traced.js.sha256',
    ].sort(),
  );
}, 300_000);
