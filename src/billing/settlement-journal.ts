import fs from 'node:fs';
import path from 'node:path';
import { fsyncPath } from '../system/fsync';

/**
 * A local, append-only journal of text settlements: what lets an answer end before its usage
 * reaches the database without a kill -9 losing that usage. A settlement is appended and
 * fdatasync'ed (appends arriving during one sync share the next: a group commit of a fraction
 * of a millisecond), the answer ends, and UsageRecorder writes it to the store in batches. An
 * entry stays on disk until the store has committed it; the process that finds this one dead
 * writes what it left (UsageRecorder.recover), which is idempotent: the settle deletes its
 * hold, and a hold already gone is not billed again.
 *
 * Each process appends to files of its own, `<owner>-<n>.jsonl`, the owner being its id in
 * gateway_instances: whether a process is alive is told by its heartbeat there, as for its holds,
 * which holds for API processes on other hosts sharing the folder too (a pid does not). A file is
 * sealed once it is a second old or 1 MiB long, and deleted when every entry in it is committed.
 */
export class SettlementJournal {
  private current: Segment | null = null;
  private sequence = 0;
  /** Lines waiting for the next write + sync, and their callers. */
  private waiting: Array<{ line: string; done: (segment: Segment | Error) => void }> = [];
  private syncing = false;

  constructor(
    private readonly dir: string,
    /** This process's id in gateway_instances (no '-' in it). */
    private readonly owner: string,
  ) {
    if (owner.includes('-')) throw new Error(`a journal owner has no '-': ${owner}`);
    fs.mkdirSync(dir, { recursive: true });
  }

  /**
   * Appends one line (no newline in it); resolves with the entry's mark once it is on disk.
   * Hand the mark to committed() when the store has the entry.
   */
  append(line: string): Promise<JournalMark> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ line, done: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
      if (!this.syncing) void this.sync();
    });
  }

  /** The store has committed these entries: a sealed file whose entries all are is deleted. */
  committed(marks: readonly JournalMark[]): void {
    for (const mark of marks) {
      const segment = mark as Segment;
      segment.outstanding--;
      this.dropIfDone(segment);
    }
    // An idle process does not keep a file of committed entries for the next start to replay.
    const current = this.current;
    if (current && !this.syncing && current.outstanding === 0 && Date.now() - current.openedAt >= MAX_SEGMENT_MS) {
      this.seal(current);
      this.current = null;
    }
  }

  /** Closes the current file once the appends under way are on disk (deleted if all committed). */
  async close(): Promise<void> {
    while (this.syncing) await new Promise((r) => setTimeout(r, 5));
    if (this.current) this.seal(this.current);
    this.current = null;
  }

  /**
   * The lines of every journal file in the folder whose owner is neither this process nor one
   * of `live()` (asked only when the folder holds another owner's files, so a sweep with nothing
   * to recover costs one directory read), oldest file first, with a function that deletes those
   * files once the store has the lines. A torn last line (the process died mid-write) is left
   * out: its answer never ended.
   */
  async orphans(live: () => Promise<ReadonlySet<string>>): Promise<{ lines: string[]; remove: () => void }> {
    const others = fs
      .readdirSync(this.dir)
      .filter((f) => f.endsWith('.jsonl'))
      .map((f) => ({ f, owner: f.slice(0, f.lastIndexOf('-')), n: segmentNumber(f) }))
      .filter(({ owner }) => owner !== this.owner);
    if (others.length === 0) return { lines: [], remove: () => undefined };
    const alive = await live();
    const files = others
      .filter(({ owner }) => !alive.has(owner))
      .sort((a, b) => (a.owner === b.owner ? a.n - b.n : a.owner < b.owner ? -1 : 1))
      .map(({ f }) => path.join(this.dir, f));
    const lines: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        // Another process recovering the same dead owner deleted it first: it has the lines.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
      for (const line of complete.split('\n')) if (line.length > 0) lines.push(line);
    }
    return { lines, remove: () => files.forEach((file) => fs.rmSync(file, { force: true })) };
  }

  private async sync(): Promise<void> {
    this.syncing = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting;
        this.waiting = [];
        try {
          const segment = this.segment();
          const bytes = Buffer.from(group.map((w) => w.line).join('\n') + '\n');
          await segment.handle.append(bytes);
          await segment.handle.datasync();
          segment.bytes += bytes.length;
          segment.outstanding += group.length;
          for (const w of group) w.done(segment);
        } catch (err) {
          // A write that failed part-way may have left a torn line: later lines go to a new file,
          // so that no whole line ever follows it.
          try {
            if (this.current) this.seal(this.current);
          } catch {
            // The disk is failing: the next append tries a new file all the same.
          }
          this.current = null;
          for (const w of group) w.done(err as Error);
        }
      }
    } finally {
      this.syncing = false;
    }
  }

  /** The file to append to: a new one when the current is old or long enough. */
  private segment(): Segment {
    const now = Date.now();
    if (this.current && (this.current.bytes >= MAX_SEGMENT_BYTES || now - this.current.openedAt >= MAX_SEGMENT_MS)) {
      this.seal(this.current);
      this.current = null;
    }
    if (!this.current) {
      const file = path.join(this.dir, `${this.owner}-${++this.sequence}.jsonl`);
      const fd = fs.openSync(file, 'a');
      // The file's name must survive a power loss as its lines do.
      fsyncPath(this.dir);
      this.current = { file, handle: new FileHandleLike(fd), bytes: 0, outstanding: 0, openedAt: now, sealed: false };
    }
    return this.current;
  }

  private seal(segment: Segment): void {
    segment.sealed = true;
    segment.handle.close();
    this.dropIfDone(segment);
  }

  private dropIfDone(segment: Segment): void {
    if (segment.sealed && segment.outstanding === 0) fs.rmSync(segment.file, { force: true });
  }
}

/** Where an entry was written; opaque to callers. */
export type JournalMark = object;

const MAX_SEGMENT_BYTES = 1024 * 1024;
const MAX_SEGMENT_MS = 1000;

interface Segment {
  file: string;
  handle: FileHandleLike;
  bytes: number;
  /** Entries appended to this file that the store has not committed yet. */
  outstanding: number;
  openedAt: number;
  sealed: boolean;
}

/** A file descriptor written with the async fs calls (a FileHandle would close itself on GC). */
class FileHandleLike {
  private closed = false;
  constructor(readonly fd: number) {}
  async append(bytes: Buffer): Promise<void> {
    for (let at = 0; at < bytes.length;) {
      at += await new Promise<number>((resolve, reject) =>
        fs.write(this.fd, bytes, at, bytes.length - at, null, (err, written) => (err ? reject(err) : resolve(written))),
      );
    }
  }
  datasync(): Promise<void> {
    return new Promise((resolve, reject) => fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }
}

function segmentNumber(file: string): number {
  return Number(file.slice(file.lastIndexOf('-') + 1, -'.jsonl'.length));
}
