import fs from 'node:fs';
import net from 'node:net';

/**
 * The first port of the kernel's ephemeral range. Processes under test (the Temporal dev server's
 * internal services, any client socket) take their ports from that range by asking for port 0,
 * so a port picked there could be taken between its pick and its use ("address already in use").
 */
function ephemeralFloor(): number {
  try {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 11_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

const PICK_FLOOR = 10_000;
const PICK_CEILING = ephemeralFloor();
/** Ports this process handed out: never twice, though each is free again once its test is done. */
const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, below the ephemeral range (see ephemeralFloor), so that no
 * process's port-0 bind takes it before the test's process listens on it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = PICK_FLOOR + Math.floor(Math.random() * (PICK_CEILING - PICK_FLOOR));
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port found between ${PICK_FLOOR} and ${PICK_CEILING}`);
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}
