import type fs from 'node:fs';

/**
 * Resolves once a file write stream has closed its descriptor. A pipeline into a new file can
 * fail while the stream is still opening the file; the stream then creates it, and closes it,
 * after the failure is reported. A cleanup that removes the file must wait for this, or the
 * file is made after it was removed and left behind.
 */
export function untilClosed(stream: fs.WriteStream): Promise<void> {
  if (stream.closed) return Promise.resolve();
  return new Promise((resolve) => stream.once('close', () => resolve()));
}
