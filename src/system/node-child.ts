/**
 * A compiled Node entry point run as a child process of this one, tied to it: its stdin is a
 * pipe from this process, which the kernel closes when this process ends however it ends
 * (SIGKILL included), so a child that exits when its stdin ends never outlives its parent.
 * Its output goes to this process's stdout/stderr (inherited: its lines interleave with ours).
 *
 * `npm start` runs the provider simulator (a tool apart from the product, never imported by it)
 * this way when no provider credentials are configured.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface NodeChildOptions {
  /** What the child is, for errors: "the provider simulator". */
  what: string;
  /** The compiled entry point (an absolute path). */
  script: string;
  /** Said when the script is missing: how to build it. */
  missingHint: string;
  /** Set on top of this process's environment. */
  env: Record<string, string>;
  /**
   * Ready when a GET of this URL answers 2xx with the header `pidHeader` naming the child's pid
   * (so a process already holding the port does not pass for the child).
   */
  healthUrl: string;
  pidHeader: string;
  /** How long start-up may take; default 20 s. */
  startDeadlineMs?: number;
  /** Between SIGTERM and SIGKILL on stop; default 10 s. */
  stopGraceMs?: number;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NodeChild {
  pid: number | undefined;
  /** Settles when the child ends, for whatever reason (stop() included). */
  exited: Promise<ChildExit>;
  /** SIGTERM, then SIGKILL after the grace; resolves when the child has exited. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function describeExit(exit: ChildExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

/** Starts the child and resolves once its health URL answers for it; rejects (the child stopped) otherwise. */
export async function startNodeChild(opts: NodeChildOptions): Promise<NodeChild> {
  if (!fs.existsSync(opts.script)) throw new Error(`${opts.what} is missing at ${opts.script}: ${opts.missingHint}`);
  const child = spawn(process.execPath, [opts.script], {
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'inherit', 'inherit'],
  });
  // Nothing is ever written; the pipe only tells the child that this process is still there.
  // An EPIPE once the child is gone is of no interest.
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<ChildExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const running: NodeChild = { pid: child.pid, exited, stop: () => stopChild(child, exited, opts.stopGraceMs ?? 10_000) };
  try {
    await waitForHealth(opts, child, exited, spawnError);
  } catch (err) {
    await running.stop();
    throw err;
  }
  return running;
}

async function waitForHealth(opts: NodeChildOptions, child: ChildProcess, exited: Promise<ChildExit>, spawnError: Promise<Error>): Promise<void> {
  const deadlineMs = opts.startDeadlineMs ?? 20_000;
  const deadline = Date.now() + deadlineMs;
  let exit: ChildExit | undefined;
  let failed: Error | undefined;
  void exited.then((e) => (exit = e));
  void spawnError.then((e) => (failed = e));
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (failed) throw new Error(`cannot start ${opts.what}: ${failed.message}`);
    if (exit) throw new Error(`${opts.what} exited during start-up (${describeExit(exit)}); its log lines are above`);
    try {
      const res = await fetch(opts.healthUrl, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      const pid = res.headers.get(opts.pidHeader);
      if (res.ok && pid === String(child.pid)) return;
      last = res.ok ? `answered by another process (pid ${pid ?? 'unknown'}) on its port` : `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(100);
  }
  throw new Error(`${opts.what} did not become ready within ${deadlineMs / 1000} s at ${opts.healthUrl}: ${last}`);
}

async function stopChild(child: ChildProcess, exited: Promise<ChildExit>, graceMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
  child.stdin?.destroy();
}
