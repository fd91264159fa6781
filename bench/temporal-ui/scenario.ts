import { randomBytes } from 'node:crypto';
import type { GatewayClient, IssuedKey, TaskStatus } from './gateway-client';

/**
 * The tasks the Temporal UI tour shows, made through the gateway's API against the provider
 * simulator (its prompt markers choose each task's fate, simulator/README.md): two keys, so
 * that a list filtered by one owner can be seen to leave the other's task out.
 */
export interface UiScenario {
  owner: IssuedKey;
  otherOwner: IssuedKey;
  /** The owner's task that completed. */
  completed: string;
  /**
   * The owner's task whose submit failed three times (its first attempt in the workflow task,
   * then the submit step's first two: the history shows the step's third) and whose provider job then failed.
   */
  failed: string;
  /** The owner's task still running (its job takes 2 minutes); deleted by cleanup(). */
  running: string;
  /** The owner's task whose submit keeps failing (HTTP 500) and is retried; deleted by cleanup(). */
  retrying: string;
  /** The other owner's task (completed). */
  otherOwnersTask: string;
  /** Cancels the running and the retrying task (refunded); safe to call more than once. */
  cleanup(): Promise<void>;
}

const SETTLE_TIMEOUT_MS = 120_000;

export async function createUiScenario(gateway: GatewayClient, log: (line: string) => void = () => undefined): Promise<UiScenario> {
  // The simulator counts [sim:submit-5xx=N] per prompt text: a tag of this run's own makes a
  // second tour against the same gateway retry its submit again.
  const run = randomBytes(2).toString('hex');
  const owner = await gateway.issueKey(`ui-tour-${run}-a`);
  const otherOwner = await gateway.issueKey(`ui-tour-${run}-b`);
  log(`keys ${owner.id} (tour owner) and ${otherOwner.id} (another owner)`);

  const [completed, failed, running, retrying, otherOwnersTask] = await Promise.all([
    gateway.createTask(owner.key, { model: 'vidgen3', prompt: `a red fox running through snow (tour ${run}) [sim:ms=3000]`, aspect_ratio: '16:9' }),
    gateway.createTask(owner.key, { model: 'motion-2', prompt: `a kite over the sea (tour ${run}) [sim:submit-5xx=3][sim:fail][sim:ms=3000]`, images: [] }),
    gateway.createTask(owner.key, { model: 'motion-2', prompt: `a lighthouse at dusk (tour ${run}) [sim:ms=120000][sim:cancellable]`, images: [] }),
    gateway.createTask(owner.key, { model: 'motion-2', prompt: `a paper boat on a river (tour ${run}) [sim:submit-5xx=1000]`, images: [] }),
    gateway.createTask(otherOwner.key, { model: 'vidgen3', prompt: `a harbour at night (tour ${run}) [sim:ms=3000]` }),
  ]);
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    await Promise.all([gateway.deleteTask(owner.key, running), gateway.deleteTask(owner.key, retrying)]);
  };
  try {
    log(`tasks ${completed} (completes), ${failed} (fails), ${running} (keeps running), ${retrying} (submit retried), ${otherOwnersTask} (other owner)`);
    await Promise.all([
      waitForTask(gateway, owner.key, completed, (t) => t.status === 'completed', 'completed'),
      waitForTask(gateway, owner.key, failed, (t) => t.status === 'failed', 'failed'),
      waitForTask(gateway, otherOwner.key, otherOwnersTask, (t) => t.status === 'completed', 'completed'),
      // A heartbeat with progress has reached the server: the pending activity shows it.
      waitForTask(gateway, owner.key, running, (t) => t.status === 'processing' && (t.progress ?? 0) > 0, 'processing with progress'),
    ]);
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
  return { owner, otherOwner, completed, failed, running, retrying, otherOwnersTask, cleanup };
}

async function waitForTask(gateway: GatewayClient, key: string, id: string, done: (t: TaskStatus) => boolean, what: string): Promise<TaskStatus> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let last: TaskStatus | undefined;
  while (Date.now() < deadline) {
    last = await gateway.task(key, id);
    if (done(last)) return last;
    if (last.status === 'completed' || last.status === 'failed') break; // ended otherwise: waiting longer will not help
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`task ${id} did not become ${what} (last seen: ${JSON.stringify(last)})`);
}
