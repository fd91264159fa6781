/**
 * `npm start`'s embedded Temporal, supervised: when the dev server process ends without being
 * asked to (a crash, the OOM killer, a stray SIGKILL), it is started again on the same port and
 * the same SQLite file, so every task in flight resumes where its history stands. Restarts
 * follow a RestartBudget (exponential backoff inside a sliding window); when the budget is
 * spent, onGiveUp is called and the process is expected to exit non-zero, so that the
 * supervisor above it restarts the whole gateway.
 */
import { Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import { DevServerExitedAtStart, startDevServer, type DevServer, type DevServerExit, type DevServerOptions } from './dev-server';
import { watchReachability, type Watchdog } from './reachability-watchdog';
import { RestartBudget, restartDelayMs, type RestartPolicy } from './restart-budget';
import { sleepUnlessAborted } from '../system/abortable-sleep';

export type DevServerState = 'running' | 'restarting' | 'failed' | 'stopped';

export interface SupervisedDevServer {
  address: string;
  uiUrl: string;
  /** The current server process (changes with every restart). */
  pid(): number | undefined;
  state(): DevServerState;
  /**
   * The gateway has begun to stop: an exit from now on is no crash to restart from. A terminal's
   * Ctrl-C reaches the whole process group, so the server may exit before its turn to be stopped.
   */
  expectExit(): void;
  /**
   * Resolves once the server process has exited after expectExit(): from then on nothing reaches
   * Temporal, so a stop need not wait for what still tries to (a worker's drain).
   */
  readonly goneWhileStopping: Promise<void>;
  stop(): Promise<void>;
}

export interface DevServerSupervisorOptions extends Omit<DevServerOptions, 'signal'> {
  policy: RestartPolicy;
  /** After each successful restart (the worker checks that it polls again). */
  onRestarted?: () => void;
  /** The budget is spent: the dev server stays down. */
  onGiveUp: (err: Error) => void;
  /**
   * A server process that is alive but has not answered for this long (wedged, stopped) is
   * killed, and so restarted like a crashed one; 0 = only exits are noticed.
   */
  hungAfterMs: number;
}

/** How often the running server is asked whether it answers (getSystemInfo, 5 s deadline). */
const PROBE_EVERY_MS = 5000;

/** How often a first start whose server exited during start-up is tried in all. */
const FIRST_START_ATTEMPTS = 3;

/**
 * Starts the dev server and keeps it running. A first start whose process exited during start-up
 * is tried again (FIRST_START_ATTEMPTS in all, with the policy's backoff); any other failed
 * first start (no CLI, never ready, another gateway on the DATA_DIR) rejects at once.
 */
export async function superviseDevServer(opts: DevServerSupervisorOptions): Promise<SupervisedDevServer> {
  const logger: Logger = opts.logger;
  const budget = new RestartBudget(opts.policy);
  const stopping = new AbortController();
  let state: DevServerState = 'running';
  let server: DevServer = await firstStart(opts);
  let recovery: Promise<void> = Promise.resolve();
  // Lazy: it connects at the first probe and reconnects by itself to every restarted server.
  const probe = Connection.lazy({ address: server.address });
  let hungWatch: Watchdog | undefined;
  let markGone: () => void = () => undefined;
  const goneWhileStopping = new Promise<void>((resolve) => (markGone = resolve));

  const watch = (current: DevServer) => {
    hungWatch?.stop();
    if (opts.hungAfterMs > 0) {
      hungWatch = watchReachability({
        check: async () => {
          await probe.withDeadline(Date.now() + 5000, () => probe.workflowService.getSystemInfo({}));
        },
        lostAfterMs: opts.hungAfterMs,
        everyMs: PROBE_EVERY_MS,
        logger: logger.child({ component: 'dev-server-probe' }),
        onLost: (err) => {
          if (stopping.signal.aborted || current !== server || current.pid === undefined) return;
          logger.error({ serverPid: current.pid, err: err.message }, 'the temporal dev server runs but does not answer; killing it to restart it');
          try {
            process.kill(current.pid, 'SIGKILL');
          } catch {
            // exited meanwhile: its exit restarts it anyway
          }
        },
      });
    }
    void current.exited.then((exit) => {
      if (stopping.signal.aborted && current === server) markGone();
      if (stopping.signal.aborted || current !== server) return;
      hungWatch?.stop();
      recovery = recover(current, exit);
    });
  };

  async function recover(dead: DevServer, exit: DevServerExit): Promise<void> {
    state = 'restarting';
    logger.error({ serverPid: dead.pid, code: exit.code, signal: exit.signal }, 'temporal dev server exited unexpectedly; restarting it');
    for (;;) {
      const decision = budget.next();
      if (!decision.restart) {
        state = 'failed';
        const windowSeconds = Math.round(opts.policy.windowMs / 1000);
        opts.onGiveUp(new Error(`the temporal dev server could not be kept running: ${decision.restartsInWindow} restarts within ${windowSeconds} s`));
        return;
      }
      logger.warn({ attempt: decision.attempt, of: opts.policy.maxRestarts, delayMs: decision.delayMs }, 'restarting the temporal dev server');
      await sleepUnlessAborted(decision.delayMs, stopping.signal);
      if (stopping.signal.aborted) return;
      try {
        server = await startDevServer({ ...opts, signal: stopping.signal });
      } catch (err) {
        if (stopping.signal.aborted) return;
        logger.error({ attempt: decision.attempt, err: (err as Error).message }, 'temporal dev server restart failed');
        continue;
      }
      if (stopping.signal.aborted) {
        await server.stop();
        return;
      }
      state = 'running';
      logger.info({ serverPid: server.pid, attempt: decision.attempt }, 'temporal dev server restarted');
      watch(server);
      opts.onRestarted?.();
      return;
    }
  }

  const expectExit = () => {
    stopping.abort();
    hungWatch?.stop();
    // Down already (between a crash and its restart): as gone as an exit now.
    if (state !== 'running') markGone();
  };
  watch(server);
  return {
    address: server.address,
    uiUrl: server.uiUrl,
    pid: () => server.pid,
    state: () => state,
    expectExit,
    goneWhileStopping,
    async stop() {
      expectExit();
      await recovery;
      await server.stop();
      await probe.close();
      state = 'stopped';
    },
  };
}

async function firstStart(opts: DevServerSupervisorOptions): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer(opts);
    } catch (err) {
      if (!(err instanceof DevServerExitedAtStart) || attempt >= FIRST_START_ATTEMPTS) throw err;
      const delayMs = restartDelayMs(opts.policy, attempt - 1);
      opts.logger.warn({ attempt, of: FIRST_START_ATTEMPTS, delayMs, err: err.message }, 'the temporal dev server exited during start-up; starting it again');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
