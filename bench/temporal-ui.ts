/**
 * npm run screenshot:temporal-ui -- [--out docs/temporal-ui] [--chromium /usr/bin/chromium]
 *                                   [--api-url URL --ui-url URL --admin-token TOKEN --namespace NS]
 *
 * Screenshots of the Temporal Web UI on the gateway's tasks (docs/temporal-ui.md): the list
 * filtered by owner, one task found by its id, a failed task's result and history, a running
 * task's progress. Starts `npm start`'s process (dist/src/main.js) on a temporary data folder
 * with free ports, makes two keys and four tasks through the API against the provider
 * simulator, photographs the pages in headless chromium and stops everything it started, how
 * ever it ends. --api-url uses a running gateway instead (its video models on the simulator:
 * the tasks' fates come from the simulator's prompt markers); --ui-url defaults to
 * http://localhost:8233, --admin-token to the contents of ./data/admin-token.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../src/config/paths';
import { optionOf } from './ab-options';
import { BenchChildren } from './child-guard';
import { findChromium } from './temporal-ui/chromium';
import { startEmbeddedGateway } from './temporal-ui/embedded-gateway';
import { runTemporalUiTour } from './temporal-ui/tour';

const Options = z.object({
  out: z.string().min(1),
  chromium: z.string().optional(),
  apiUrl: z.url().optional(),
  uiUrl: z.url(),
  adminToken: z.string().optional(),
  namespace: z.string().min(1),
});
type Options = z.infer<typeof Options>;

const KNOWN = ['--out', '--chromium', '--api-url', '--ui-url', '--admin-token', '--namespace'];

function parseArgs(argv: string[]): Options {
  for (let i = 0; i < argv.length; i += 2) {
    if (!KNOWN.includes(argv[i]!)) throw new Error(`unknown argument ${argv[i]} (known: ${KNOWN.join(' ')})`);
    if (argv[i + 1] === undefined) throw new Error(`${argv[i]} needs a value`);
  }
  const get = optionOf(argv);
  const parsed = Options.safeParse({
    out: path.resolve(get('out', path.join(projectRoot(), 'docs', 'temporal-ui'))),
    chromium: get('chromium', '') || undefined,
    apiUrl: get('api-url', '') || undefined,
    uiUrl: get('ui-url', 'http://localhost:8233'),
    adminToken: get('admin-token', '') || undefined,
    namespace: get('namespace', 'default'),
  });
  if (!parsed.success) {
    const flag = (key: PropertyKey | undefined) => `--${String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    throw new Error(`bad arguments: ${parsed.error.issues.map((i) => `${flag(i.path[0])}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** The admin token of a running gateway: the flag, or the one `npm start` generated into ./data. */
function adminTokenOf(opts: Options): string {
  if (opts.adminToken) return opts.adminToken;
  const file = path.join(process.cwd(), 'data', 'admin-token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    throw new Error(`--admin-token is required with --api-url (no ${file} to read it from)`);
  }
}

const log = (line: string) => console.log(line);
const guard = new BenchChildren('the Temporal UI tour');

guard.run(async () => {
  const opts = parseArgs(process.argv.slice(2));
  const chromiumPath = findChromium(opts.chromium); // a missing browser fails before anything is started
  let target: { apiUrl: string; uiUrl: string; adminToken: string };
  if (opts.apiUrl) {
    target = { apiUrl: opts.apiUrl.replace(/\/$/, ''), uiUrl: opts.uiUrl.replace(/\/$/, ''), adminToken: adminTokenOf(opts) };
  } else {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-ui-tour-'));
    log(`starting the gateway (dist/src/main.js) on ${dataDir}`);
    const gateway = await startEmbeddedGateway(dataDir);
    process.once('exit', gateway.killNow);
    guard.atEnd(gateway.stop);
    guard.removeAtEnd(dataDir);
    log(`gateway ${gateway.apiUrl}, Temporal Web UI ${gateway.uiUrl}`);
    target = gateway;
  }
  const { shots } = await runTemporalUiTour({ ...target, namespace: opts.namespace, outDir: opts.out, chromiumPath, log });
  for (const shot of Object.values(shots)) log(`wrote ${path.relative(process.cwd(), shot.file)} (${fs.statSync(shot.file).size} bytes)`);
});
