import fs from 'node:fs';
import path from 'node:path';
import { fsyncPath } from '../system/fsync';

/**
 * A local, append-only journal of text holds and settlements: what lets a text request take
 * its hold and end its answer without a statement to the database, and without a kill -9
 * losing either. A hold is recorded with a synchronous write before its request goes upstream
 * (in the page cache when record() returns, which a killed process's files keep; on disk with
 * the next sync, SYNC_SOON_MS at the latest). A settlement is appended and fdatasync'ed
 * (appends arriving during one sync share the next: a group commit of a fraction of a
 * millisecond), the answer ends, and UsageRecorder writes it to the store in batches. An entry
 * stays on disk until the store has committed it; the process that finds this one dead writes
 * what it left (UsageRecorder.recover): a settlement at its price, a hold with no settlement
 * (its answer never ended) in full. That is idempotent: a usage record's id is its hold's.
 *
 * Each process appends to files of its own, `<owner>-<n>.jsonl`, the owner being its id in
 * gateway_instances: whether a process is alive is told by its heartbeat there, as for its holds,
 * which holds for API processes on other hosts sharing the folder too (a pid does not). A file is
 * sealed once it is a second old or 1 MiB long, and deleted when every entry in it is committed.
 */
export class SettlementJournal {
  private current: Segment | null = null;
  private sequence = 0;
  /** Lines waiting for the next write + sync (null: a sync only), and their callers. */
  private waiting: Array<{ line: string | null; done: (segment: Segment | Error) => void }> = [];
  private syncing = false;
  /** close() calls waiting for the sync under way to end. */
  private idleWaiters: Array<() => void> = [];
  /** The sync that takes recorded lines to disk when no append does it sooner. */
  private soon: NodeJS.Timeout | null = null;

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

  /**
   * Writes one line (no newline in it) at once, without waiting for the disk: it is in the
   * file's page cache when this returns, so a kill -9 after it keeps it, and on disk with the
   * next sync. Throws when the file cannot take it.
   */
  record(line: string): JournalMark {
    // A file with a write under way is not closed under it: it takes the line even if due to seal.
    const segment = this.syncing && this.current ? this.current : this.segment();
    if (segment.broken) throw new Error('the journal file is failing');
    const bytes = Buffer.from(line + '\n');
    try {
      writeAll(segment.fd, bytes);
    } catch (err) {
      // A torn line may be on disk: no whole line may follow it in this file.
      segment.broken = true;
      throw err;
    }
    segment.bytes += bytes.length;
    segment.outstanding++;
    segment.dirty = true;
    this.soon ??= setTimeout(() => {
      this.soon = null;
      if (this.current?.dirty) this.requestSync();
    }, SYNC_SOON_MS).unref();
    return segment;
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

  /**
   * Commits `mark` once the file holding `after` is deleted (now, if it is): a settlement's
   * line must outlive its hold's, or a restart would find the hold alone and bill it in full.
   */
  committedAfter(mark: JournalMark, after: JournalMark): void {
    const holder = after as Segment;
    if (holder.deleted || mark === after) this.committed([mark]);
    else holder.followers.push(mark);
  }

  /** Closes the current file once the appends under way are on disk (deleted if all committed). */
  async close(): Promise<void> {
    if (this.soon) clearTimeout(this.soon);
    this.soon = null;
    while (this.syncing) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
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
  async orphans(live: () => Promise<ReadonlySet<string>>): Promise<{ lines: OrphanLine[]; remove: () => void }> {
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
      .map(({ f, owner }) => ({ file: path.join(this.dir, f), owner }));
    const lines: OrphanLine[] = [];
    for (const { file, owner } of files) {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        // Another process recovering the same dead owner deleted it first: it has the lines.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
      for (const line of complete.split('\n')) if (line.length > 0) lines.push({ owner, line });
    }
    return { lines, remove: () => files.forEach(({ file }) => fs.rmSync(file, { force: true })) };
  }

  private requestSync(): void {
    this.waiting.push({ line: null, done: () => undefined });
    if (!this.syncing) void this.sync();
  }

  private async sync(): Promise<void> {
    this.syncing = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting;
        this.waiting = [];
        const lines = group.flatMap((w) => (w.line === null ? [] : [w.line]));
        // A sync with nothing to sync opens no file for it.
        if (lines.length === 0 && !this.current?.dirty) {
          for (const w of group) w.done(new Error('nothing to sync'));
          continue;
        }
        try {
          const segment = this.segment();
          // Cleared before the sync starts: a line recorded while it runs waits for the next one.
          segment.dirty = false;
          if (lines.length > 0) {
            const bytes = Buffer.from(lines.join('\n') + '\n');
            segment.bytes += bytes.length;
            segment.outstanding += lines.length;
            try {
              // Written from this thread, as record() does: a page-cache write costs less than
              // a trip through libuv's thread pool; only the datasync below waits for the disk.
              writeAll(segment.fd, bytes);
            } catch (err) {
              segment.outstanding -= lines.length;
              throw err;
            }
          }
          await datasync(segment.fd);
          for (const w of group) w.done(segment);
        } catch (err) {
          // A write that failed part-way may have left a torn line: later lines go to a new file,
          // so that no whole line ever follows it.
          try {
            if (this.current) {
              this.current.broken = true;
              this.seal(this.current);
            }
          } catch {
            // The disk is failing: the next append tries a new file all the same.
          }
          this.current = null;
          for (const w of group) w.done(err as Error);
        }
      }
    } finally {
      this.syncing = false;
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /** The file to append to: a new one when the current is old or long enough. */
  private segment(): Segment {
    const now = Date.now();
    if (this.current && (this.current.broken || this.current.bytes >= MAX_SEGMENT_BYTES || now - this.current.openedAt >= MAX_SEGMENT_MS)) {
      this.seal(this.current);
      this.current = null;
    }
    if (!this.current) {
      const file = path.join(this.dir, `${this.owner}-${++this.sequence}.jsonl`);
      const fd = fs.openSync(file, 'a');
      // The file's name must survive a power loss as its lines do.
      fsyncPath(this.dir);
      this.current = {
        file,
        fd,
        bytes: 0,
        outstanding: 0,
        openedAt: now,
        sealed: false,
        dirty: false,
        broken: false,
        deleted: false,
        followers: [],
      };
    }
    return this.current;
  }

  private seal(segment: Segment): void {
    // Once only: a second close could hit a descriptor number the process has reused since.
    if (segment.sealed) return;
    segment.sealed = true;
    // Lines recorded since the last sync reach the disk before the file is let go (once a second).
    if (segment.dirty && !segment.broken) fs.fdatasyncSync(segment.fd);
    segment.dirty = false;
    fs.closeSync(segment.fd);
    this.dropIfDone(segment);
  }

  private dropIfDone(segment: Segment): void {
    if (!segment.sealed || segment.outstanding > 0 || segment.deleted) return;
    fs.rmSync(segment.file, { force: true });
    segment.deleted = true;
    const followers = segment.followers;
    segment.followers = [];
    this.committed(followers);
  }
}

/** Where an entry was written; opaque to callers. */
export type JournalMark = object;

/** A line of a stopped process's journal, and that process (its id in gateway_instances). */
export interface OrphanLine {
  owner: string;
  line: string;
}

const MAX_SEGMENT_BYTES = 1024 * 1024;
const MAX_SEGMENT_MS = 1000;
/** A recorded line is on disk this long after it was written, at the latest. */
const SYNC_SOON_MS = 50;

interface Segment {
  file: string;
  /** Written and synced with the fs calls on the raw descriptor (a FileHandle would close itself on GC). */
  fd: number;
  bytes: number;
  /** Entries appended to this file that the store has not committed yet. */
  outstanding: number;
  openedAt: number;
  sealed: boolean;
  /** Lines recorded since the last sync started. */
  dirty: boolean;
  /** A write to it failed: nothing more goes to it. */
  broken: boolean;
  deleted: boolean;
  /** Marks committed when this file is deleted (committedAfter). */
  followers: JournalMark[];
}

function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

function writeAll(fd: number, bytes: Buffer): void {
  for (let at = 0; at < bytes.length;) at += fs.writeSync(fd, bytes, at, bytes.length - at);
}

function segmentNumber(file: string): number {
  return Number(file.slice(file.lastIndexOf('-') + 1, -'.jsonl'.length));
}
