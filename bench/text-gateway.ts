/**
 * The gateway's API process as the text benchmarks run it (bench:text, bench:text-ab,
 * bench:peers): as the checkout's `npm run api` runs it (its variables and node flags), the
 * simulator as its provider, no Temporal (text endpoints do not need it; the API connects
 * lazily, so an unused port will do), and a bench key issued through the admin API.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { freePort, waitFor } from '../test/support/ports';
import type { Child } from '../test/support/processes';
import { benchKeyBody, type BillingMode } from './billing';
import type { BenchChildren } from './child-guard';
import { runScript } from './script-command';

export interface TextGatewayOptions {
  bench: BenchChildren;
  /** The checkout whose build runs (dist/src/api/server.js). */
  root: string;
  dataDir: string;
  simUrl: string;
  logLevel: string;
  /** Truncated first: each run's log alone. */
  log: string;
  billing: BillingMode;
  /** Said in errors: "gateway", "the against gateway". */
  what: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
}

export interface TextGateway {
  child: Child;
  port: number;
  key: string;
  /** From spawn to the first key issued, seconds. */
  startSeconds: number;
}

const ADMIN_TOKEN = 'bench-admin-token';
/**
 * Above the load generator's 256 sockets per target: the per-key caps on text requests and streams
 * in flight (100 by default) answer 429 once a stall lets more than 100 pile up at 1,000 req/s,
 * and the bench measures the gateway's cost, not those caps (nor do the peers have them).
 */
const KEY_IN_FLIGHT = '100000';
const issuedKey = z.object({ key: z.string().min(1) });

export async function startTextGateway(opts: TextGatewayOptions): Promise<TextGateway> {
  const port = await freePort();
  fs.writeFileSync(opts.log, '');
  const started = Date.now();
  const child = opts.bench.add(
    runScript(
      'api',
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: opts.dataDir,
        ADMIN_TOKEN,
        SIMULATOR_URL: opts.simUrl,
        TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
        LOG_LEVEL: opts.logLevel,
        TEXT_MAX_IN_FLIGHT_PER_KEY: KEY_IN_FLIGHT,
        MAX_STREAMS_PER_KEY: KEY_IN_FLIGHT,
        ...opts.env,
      },
      opts.log,
      opts.root,
      opts.nodeArgs,
    ),
  );
  const key = await waitFor(
    `${opts.what}'s admin API`,
    async () => {
      if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
        throw new Error(`the ${opts.what} exited (${child.proc.exitCode ?? child.proc.signalCode}); see ${opts.log}`);
      }
      const res = await fetch(`http://127.0.0.1:${port}/admin/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify(benchKeyBody(opts.billing)),
      });
      return res.status === 201 ? issuedKey.parse(await res.json()).key : null;
    },
    60_000,
    200,
  );
  return { child, port, key, startSeconds: (Date.now() - started) / 1000 };
}
