import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fsyncPath } from '../system/fsync';

/**
 * A local, append-only journal of text holds and settlements: what lets a text request take
 * its hold and end its answer without a statement to the database, and without a kill -9
 * losing either. Each line is written from this thread, synchronously (in the page cache once it
 * is written, which a killed process's files keep). A hold is recorded (record) at once, before
 * its request goes upstream, and reaches the disk with the next sync, SYNC_SOON_MS later at the
 * latest. A settlement is appended (append) before its answer ends, which waits for the line's
 * fdatasync for at most `syncWaitMs`: appends made while a sync runs are written together when
 * it ends and share the next (a group commit), and one whose wait ends first is written then.
 * UsageRecorder writes them to the store in batches. An entry stays on disk until the store has
 * committed it; the process that finds this one dead writes what it left
 * (UsageRecorder.recover): a settlement at its price, a hold with no settlement (its answer
 * never ended) in full. That is idempotent: a usage record's id is its hold's.
 *
 * Each process appends to files of its own, `<owner>-<n>.jsonl`, the owner being its id in
 * gateway_instances: whether a process is alive is told by its heartbeat there, as for its holds,
 * which holds for API processes on other hosts sharing the folder too (a pid does not). A file is
 * sealed once it is a second old or 1 MiB long, and deleted when every entry in it is committed.
 *
 * Nothing on the request's thread waits for the disk. Files are made ahead in the thread pool and
 * filled with zeros to the length they will take (a spare, made while the current file fills),
 * so that neither a file's creation nor its name's sync happens on a request, and lines
 * overwrite blocks the file already has: their fdatasync flushes data, not the filesystem's
 * metadata journal that an append growing a file commits. A reader takes a file's lines up to
 * its first NUL byte (completeLines). A sealed file's last sync runs in the thread pool too.
 */
export class SettlementJournal {
  private current: Segment | null = null;
  private sequence = 0;
  /** The sync that takes recorded lines to disk when no append does it sooner. */
  private soon: NodeJS.Timeout | null = null;
  /** Appends whose lines wait for the sync under way to end before they are written. */
  private queued: Waiter[] = [];
  /** flush() runs: an append queues its line rather than write it. */
  private flushing = false;
  /** Appends waiting for their sync, in the order their wait ends (syncWaitMs after each). */
  private bounded: Waiter[] = [];
  private boundTimer: NodeJS.Timeout | null = null;
  /** The next file, zero-filled ahead of need; null while none is being made. */
  private spare: Promise<SpareFile | null> | null = null;
  private spareReady: SpareFile | null = null;
  /** The sequence number of the last file put to use: a spare numbered before it is not used. */
  private lastUsed = 0;
  /** Bytes the next spare is made with, doubled while files fill before they are a second old. */
  private spareBytes = MIN_SPARE_BYTES;
  /** Sealed files whose last sync is under way; close() waits for them. */
  private sealing = new Set<Promise<void>>();
  private closed = false;
  /** How long an append waits for its line's fdatasync: 0 = not at all; Infinity = until it is done. */
  private readonly syncWaitMs: number;

  constructor(
    private readonly dir: string,
    /** This process's id in gateway_instances (no '-' in it). */
    private readonly owner: string,
    options: { syncWaitMs?: number } = {},
  ) {
    if (owner.includes('-')) throw new Error(`a journal owner has no '-': ${owner}`);
    this.syncWaitMs = options.syncWaitMs ?? Number.POSITIVE_INFINITY;
    fs.mkdirSync(dir, { recursive: true });
  }

  /**
   * Writes one line (no newline in it), at once or with the others that wait for the sync under
   * way, and resolves with the entry's mark when its fdatasync is done, or `syncWaitMs` after the
   * call if that comes first (the line is written then, in the page cache, and on disk with the
   * sync under way). Rejects when the file cannot take the line, or its sync fails within the
   * wait. Hand the mark to committed() when the store has the entry.
   */
  append(line: string): Promise<JournalMark> {
    if (this.syncWaitMs <= 0) {
      try {
        const segment = this.write([line]);
        this.syncSoon();
        return Promise.resolve(segment);
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { line, segment: null, ended: false, deadline: performance.now() + this.syncWaitMs, resolve, reject };
      if (Number.isFinite(this.syncWaitMs)) this.bound(waiter);
      // While a sync runs, lines wait for its end and go out together, in one write and the next sync.
      this.queued.push(waiter);
      if (!this.flushing) void this.flush();
    });
  }

  /**
   * Writes one line (no newline in it) at once, without waiting for the disk: it is in the
   * file's page cache when this returns, so a kill -9 after it keeps it, and on disk with the
   * next sync. Throws when the file cannot take it.
   */
  record(line: string): JournalMark {
    const segment = this.write([line]);
    this.syncSoon();
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
    if (current && current.outstanding === 0 && Date.now() - current.openedAt >= MAX_SEGMENT_MS) {
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

  /**
   * Closes the current file once its lines are on disk (deleted if all committed), and removes
   * the spare. An append after it opens a file again.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.writeQueued();
    if (this.soon) clearTimeout(this.soon);
    this.soon = null;
    if (this.current) this.seal(this.current);
    this.current = null;
    const spare = await this.spare;
    this.spare = null;
    this.spareReady = null;
    if (spare) discard(spare);
    while (this.sealing.size > 0) await Promise.all([...this.sealing]);
    this.closed = false;
  }

  /**
   * The lines of every journal file in the folder whose owner is neither this process nor one
   * of `live()` (asked only when the folder holds another owner's files, so a sweep with nothing
   * to recover costs one directory read), oldest file first, with a function that deletes those
   * files once the store has the lines. A torn last line (the process died mid-write) is left
   * out: its answer never ended; so is a spare that was never written to.
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
      for (const line of completeLines(text)) lines.push({ owner, line });
    }
    return { lines, remove: () => files.forEach(({ file }) => fs.rmSync(file, { force: true })) };
  }

  /** Writes lines into the current file, from this thread: a page-cache write costs less than a trip through the thread pool. */
  private write(lines: readonly string[]): Segment {
    const bytes = Buffer.from(lines.join('\n') + '\n');
    const segment = this.segment(bytes.length);
    try {
      writeAll(segment.fd, bytes, segment.bytes);
    } catch (err) {
      // A torn line may be on disk: no whole line may follow it in this file.
      segment.broken = true;
      throw err;
    }
    segment.bytes += bytes.length;
    segment.outstanding += lines.length;
    segment.dirty = true;
    return segment;
  }

  /** Writes the appends' lines waiting for a sync to end, in one write, and hands them to that file's next sync. */
  private writeQueued(): void {
    const batch = this.queued;
    if (batch.length === 0) return;
    this.queued = [];
    let segment: Segment;
    try {
      segment = this.write(batch.map((w) => w.line));
    } catch (err) {
      for (const w of batch) end(w, err as Error);
      return;
    }
    for (const w of batch) {
      w.segment = segment;
      segment.waiters.push(w);
    }
  }

  /** Writes what waits and syncs the current file, until no append waits: one sync at a time, each for all lines before it. */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      for (;;) {
        this.writeQueued();
        const segment = this.current;
        if (!segment?.dirty) break;
        await this.sync(segment);
      }
    } finally {
      this.flushing = false;
    }
  }

  /** A sync of the current file SYNC_SOON_MS from now, unless one is due already. */
  private syncSoon(): void {
    this.soon ??= setTimeout(() => {
      this.soon = null;
      if (this.current?.dirty) void this.sync(this.current);
    }, SYNC_SOON_MS).unref();
  }

  /**
   * Takes what was written to the file to disk, in the thread pool, until nothing written is
   * left unsynced (lines written during one fdatasync share the next); each append waiting on
   * it ends when a sync that started after its write does. Never rejects: a failed sync fails
   * the appends still waiting, and the file takes no more lines.
   */
  private sync(segment: Segment): Promise<void> {
    if (segment.syncing) return segment.syncing;
    if (!segment.dirty) return Promise.resolve();
    const run = (async () => {
      try {
        while (segment.dirty) {
          // Cleared before the sync starts: a line written while it runs waits for the next one.
          segment.dirty = false;
          const waiters = segment.waiters;
          segment.waiters = [];
          try {
            await datasync(segment.fd);
          } catch (err) {
            segment.broken = true;
            segment.dirty = false;
            for (const w of [...waiters, ...segment.waiters.splice(0)]) end(w, err as Error);
            return;
          }
          for (const w of waiters) end(w, null);
        }
      } finally {
        // In the same turn as the last look at `dirty`: a line written after it starts a new sync.
        segment.syncing = null;
      }
    })();
    segment.syncing = run;
    return run;
  }

  /** Ends the append's wait `syncWaitMs` after its write, if its sync has not ended it sooner. */
  private bound(waiter: Waiter): void {
    this.bounded.push(waiter);
    this.boundTimer ??= setTimeout(() => this.endDueWaits(), this.syncWaitMs).unref();
  }

  private endDueWaits(): void {
    this.boundTimer = null;
    const now = performance.now();
    // An append is let go only with its line written: in the page cache, which a kill -9 keeps.
    if (this.bounded.some((w) => !w.ended && w.deadline <= now && w.segment === null)) this.writeQueued();
    let due = 0;
    while (due < this.bounded.length && (this.bounded[due].ended || this.bounded[due].deadline <= now)) end(this.bounded[due++], null);
    this.bounded.splice(0, due);
    const next = this.bounded.find((w) => !w.ended);
    if (!next) this.bounded = [];
    else this.boundTimer = setTimeout(() => this.endDueWaits(), Math.max(1, next.deadline - now)).unref();
  }

  /**
   * The file to append to: a new one when the current is a second old or 1 MiB long, or has no
   * zeros left for the `more` bytes about to be written while a spare is ready.
   */
  private segment(more = 0): Segment {
    const now = Date.now();
    const current = this.current;
    if (current) {
      const young = now - current.openedAt < MAX_SEGMENT_MS;
      // Lines beyond the zeros it was made with (all of a file made when needed) grow the file.
      const growing = current.outstanding > 0 && current.bytes + more > current.capacity;
      // A spare that filled before it was a second old: the next one is made twice as long.
      if (growing && current.capacity > 0 && young && !current.outgrown) this.spareBytes = Math.min(this.spareBytes * 2, MAX_SPARE_BYTES);
      if (growing) current.outgrown = true;
      // A growing file is left as soon as a spare is ready, not before: making a file here
      // would wait for the disk on this thread.
      if (current.broken || current.bytes >= MAX_SEGMENT_BYTES || !young || (growing && this.spareReady)) {
        this.seal(current);
        this.current = null;
      }
    }
    if (!this.current) {
      const spare = this.takeSpare();
      this.current = spare ? newSegment(spare, now) : this.createNow(now);
      this.lastUsed = this.current.n;
      this.prepareSpare();
    }
    return this.current;
  }

  /** The spare, if one is ready and numbered after every file used so far. */
  private takeSpare(): SpareFile | null {
    const spare = this.spareReady;
    if (!spare) return null;
    this.spareReady = null;
    this.spare = null;
    if (spare.n > this.lastUsed) return spare;
    discard(spare);
    return null;
  }

  /** A file made here and now (no spare was ready): it grows as lines are appended. */
  private createNow(now: number): Segment {
    const n = ++this.sequence;
    const file = path.join(this.dir, `${this.owner}-${n}.jsonl`);
    const fd = fs.openSync(file, 'wx');
    // The file's name must survive a power loss as its lines do.
    fsyncPath(this.dir);
    return newSegment({ n, file, fd, capacity: 0 }, now);
  }

  /** Starts making the next file in the background, unless one is made or being made. */
  private prepareSpare(): void {
    if (this.spare || this.closed) return;
    const n = ++this.sequence;
    const file = path.join(this.dir, `${this.owner}-${n}.jsonl`);
    const made = makeSpare(this.dir, file, n, this.spareBytes).then(
      (spare) => {
        if (this.spare === made) this.spareReady = spare;
        // Let go of meanwhile (close() takes the one it awaits): nobody else holds it.
        else discard(spare);
        return spare;
      },
      // Not fatal: the next file is then made when it is needed, as a growing one.
      () => {
        if (this.spare === made) this.spare = null;
        return null;
      },
    );
    this.spare = made;
  }

  /**
   * No more lines go to the file. Its lines reach the disk before the file is let go (in the
   * thread pool, after any sync under way: the descriptor is not closed under it); then it is
   * closed, and deleted if every entry in it is committed.
   */
  private seal(segment: Segment): void {
    // Once only: a second close could hit a descriptor number the process has reused since.
    if (segment.sealed) return;
    segment.sealed = true;
    const closing = this.sync(segment).then(() => {
      fs.closeSync(segment.fd);
      segment.closed = true;
      this.sealing.delete(closing);
      this.dropIfDone(segment);
    });
    this.sealing.add(closing);
  }

  private dropIfDone(segment: Segment): void {
    if (!segment.closed || segment.outstanding > 0 || segment.deleted) return;
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
/**
 * A spare's length: the first is short (an idle process writes 64 KiB of zeros a second at most,
 * while it has traffic), and each file that fills within its second doubles the next.
 */
const MIN_SPARE_BYTES = 64 * 1024;
const MAX_SPARE_BYTES = MAX_SEGMENT_BYTES;

/** A file made ahead: named, zero-filled to `capacity` bytes, its data and name on disk. */
interface SpareFile {
  n: number;
  file: string;
  fd: number;
  /** Bytes of zeros the file was made with (0: made when needed, it grows as it is written). */
  capacity: number;
}

interface Segment extends SpareFile {
  /** Where the next line goes: the bytes of lines written so far. */
  bytes: number;
  /** Entries appended to this file that the store has not committed yet. */
  outstanding: number;
  openedAt: number;
  sealed: boolean;
  /** Its descriptor is closed (after its last sync): it may be deleted. */
  closed: boolean;
  /** Lines written since the last sync started. */
  dirty: boolean;
  /** A write to it failed: nothing more goes to it. */
  broken: boolean;
  /** Lines were written past its zeros. */
  outgrown: boolean;
  deleted: boolean;
  /** Marks committed when this file is deleted (committedAfter). */
  followers: JournalMark[];
  /** Appends waiting for a sync that starts after their write. */
  waiters: Waiter[];
  /** The sync loop under way, if any. */
  syncing: Promise<void> | null;
}

/** An append waiting for its sync, until `deadline` (performance.now()) at most. */
interface Waiter {
  line: string;
  /** The file its line was written to; null while it waits for the sync under way to end. */
  segment: Segment | null;
  ended: boolean;
  deadline: number;
  resolve: (mark: JournalMark) => void;
  reject: (err: Error) => void;
}

/** Ends an append's wait, once: by its sync, its failure, or its deadline. */
function end(waiter: Waiter, err: Error | null): void {
  if (waiter.ended) return;
  waiter.ended = true;
  if (err || !waiter.segment) waiter.reject(err ?? new Error('the line was not written'));
  else waiter.resolve(waiter.segment);
}

function newSegment(file: SpareFile, now: number): Segment {
  return {
    ...file,
    bytes: 0,
    outstanding: 0,
    openedAt: now,
    sealed: false,
    closed: false,
    dirty: false,
    broken: false,
    outgrown: false,
    deleted: false,
    followers: [],
    waiters: [],
    syncing: null,
  };
}

/**
 * The whole lines of a journal file's text: up to its first NUL (the zeros a file was made
 * with, never written over), and without a last line that has no newline (torn by a crash).
 */
export function completeLines(text: string): string[] {
  const nul = text.indexOf('\0');
  const written = nul === -1 ? text : text.slice(0, nul);
  return written
    .slice(0, written.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line.length > 0);
}

/** Makes a spare in the thread pool: created, zero-filled, its data and its name synced. */
async function makeSpare(dir: string, file: string, n: number, capacity: number): Promise<SpareFile> {
  const fd = await promisify(fs.open)(file, 'wx');
  try {
    const zeros = Buffer.alloc(capacity);
    for (let at = 0; at < capacity;) at += (await promisify(fs.write)(fd, zeros, at, capacity - at, at)).bytesWritten;
    await datasync(fd);
    const dirFd = await promisify(fs.open)(dir, 'r');
    try {
      await promisify(fs.fsync)(dirFd);
    } finally {
      fs.closeSync(dirFd);
    }
    return { n, file, fd, capacity };
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw err;
  }
}

/** A spare that will not be used: it holds no line. */
function discard(spare: SpareFile): void {
  fs.closeSync(spare.fd);
  fs.rmSync(spare.file, { force: true });
}

function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

/** Writes `bytes` at `position`, over the zeros of a spare or past the end of a growing file. */
function writeAll(fd: number, bytes: Buffer, position: number): void {
  for (let at = 0; at < bytes.length;) at += fs.writeSync(fd, bytes, at, bytes.length - at, position + at);
}

function segmentNumber(file: string): number {
  return Number(file.slice(file.lastIndexOf('-') + 1, -'.jsonl'.length));
}
