import fs from 'node:fs';

/** fsync(2) of a file or a directory by path (a directory's: the names in it survive a power loss). */
export function fsyncPath(p: string): void {
  const fd = fs.openSync(p, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
