import fs from 'node:fs';
import type { Child } from '../test/support/processes';

/**
 * The child processes (and their data folders, and whatever else must be undone: a dev
 * server, a database) of a benchmark, which stop with it whatever way it ends: after main,
 * after a throw (message printed, exit code 1), on Ctrl-C or SIGTERM; a child still running at
 * exit (an uncaught throw in a callback) is killed.
 */
export class BenchChildren {
  private readonly children: Child[] = [];
  private readonly dirs: string[] = [];
  private readonly undo: Array<() => Promise<void>> = [];
  private cleaning: Promise<void> | null = null;

  /** How long each child has between SIGTERM and SIGKILL when the bench stops it. */
  stopGraceMs = 5000;

  constructor(private readonly what: string) {}

  add(child: Child): Child {
    this.children.push(child);
    return child;
  }

  /** A folder removed once the children have stopped. */
  removeAtEnd(dir: string): void {
    this.dirs.push(dir);
  }

  /** Undone once the children have stopped, last registered first (a database, the dev server). */
  atEnd(step: () => Promise<void>): void {
    this.undo.push(step);
  }

  /** Stops every child, then runs the atEnd steps, then removes the folders; once, however often it is called. */
  cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      await Promise.all(this.children.map((c) => c.stop(this.stopGraceMs)));
      for (const step of [...this.undo].reverse()) {
        await step().catch((err: unknown) => console.error(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
      }
      for (const dir of this.dirs) fs.rmSync(dir, { recursive: true, force: true });
    })();
    return this.cleaning;
  }

  /** Runs the benchmark's main and cleans up after it, however it ends. */
  run(main: () => Promise<void>): void {
    const onSignal = (signal: NodeJS.Signals) => {
      console.error(`\n${signal}: stopping ${this.what}`);
      void this.cleanup().finally(() => process.exit(130));
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    process.once('exit', () => {
      for (const c of this.children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    });
    main().then(
      () => this.cleanup(),
      async (err: unknown) => {
        console.error(err instanceof Error ? err.message : err);
        await this.cleanup();
        process.exit(1);
      },
    );
  }
}
