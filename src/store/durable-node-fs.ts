import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { fsyncPath } from '../system/fsync';

/**
 * PGlite runs PostgreSQL in WebAssembly; on Node its files go through Emscripten's NODEFS,
 * which writes each block with a plain write(2) (so a crash of the process loses nothing that
 * PostgreSQL wrote) but has no fsync: fsync(2) from PostgreSQL reaches Emscripten's fd_sync,
 * which calls the stream's `fsync` operation when there is one, and NODEFS has none, while
 * fdatasync(2) is a no-op outright. PGlite also starts PostgreSQL with `-F` (fsync off). So
 * out of the box a commit is acknowledged with its WAL in the kernel's page cache only, and a
 * power loss or kernel crash can take acknowledged commits with it.
 *
 * This filesystem gives NODEFS streams an `fsync` that is a real fsync(2) of the file, and
 * DURABLE_START_PARAMS turn PostgreSQL's fsync back on with `wal_sync_method=fsync` (the
 * method that reaches fd_sync). PostgreSQL then syncs the WAL before it acknowledges each
 * commit (synchronous_commit), the data files and directories at each checkpoint, and the
 * whole data directory when it starts after a crash, as it does on a real server.
 */
export class DurableNodeFS extends NodeFS {
  /** Real fsyncs issued for PostgreSQL; openEmbeddedDb checks that a commit makes one. */
  fsyncs = 0;

  override async init(...args: Parameters<NodeFS['init']>): ReturnType<NodeFS['init']> {
    const result = await super.init(...args);
    const preRun = result.emscriptenOpts.preRun ?? [];
    result.emscriptenOpts.preRun = [
      ...preRun,
      (mod: unknown) => {
        nodeFsStreamOps(mod).fsync = (stream) => {
          fs.fsyncSync(stream.nfd);
          this.fsyncs += 1;
          return 0;
        };
      },
    ];
    return result;
  }
}

/** The part of Emscripten's NODEFS this file relies on (the package ships no types for it). */
interface NodeFsStream {
  /** The real file descriptor behind the Emscripten stream. */
  nfd: number;
}
interface NodeFsStreamOps {
  fsync?: (stream: NodeFsStream) => number;
}

function nodeFsStreamOps(mod: unknown): NodeFsStreamOps {
  const ops = (mod as { NODEFS?: { stream_ops?: NodeFsStreamOps } } | null)?.NODEFS?.stream_ops;
  if (!ops) throw new Error('this PGlite build has no NODEFS stream operations: the embedded store cannot be made durable');
  return ops;
}

/**
 * PGlite's own start parameters without `-F`, with fsync, synchronous commits and full-page
 * writes set explicitly (command-line settings win over postgresql.conf, so a later PGlite
 * cannot turn them off by configuration), and the WAL synced by fsync(2).
 */
export const DURABLE_START_PARAMS: readonly string[] = [
  ...PGlite.defaultStartParams.filter((p) => p !== '-F'),
  '-c',
  'fsync=on',
  '-c',
  'synchronous_commit=on',
  '-c',
  'full_page_writes=on',
  '-c',
  'wal_sync_method=fsync',
];

/**
 * fsyncs every file and directory under `dir`, then `dir`'s parent (which holds its entry).
 * PGlite creates a new data directory by unpacking an initdb image through NODEFS without a
 * single fsync; this makes a new store durable before its first commit is acknowledged.
 */
export function fsyncTree(dir: string): void {
  const visit = (p: string): void => {
    const stat = fs.lstatSync(p);
    if (stat.isDirectory()) for (const entry of fs.readdirSync(p)) visit(path.join(p, entry));
    else if (!stat.isFile()) return;
    fsyncPath(p);
  };
  visit(dir);
  fsyncPath(path.dirname(dir));
}
