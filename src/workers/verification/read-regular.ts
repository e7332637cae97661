/**
 * One bounded read of a file an agent may have written: opened without following a final symlink
 * (`O_NOFOLLOW`; `O_NONBLOCK`, so a FIFO never blocks), judged by fstat of what was opened, and
 * read to at most the size fstat gave. A file that is not regular, is over `max` bytes, or grew
 * between the fstat and the read is null: the caller then takes its careful path.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

export function readRegularFile(path: string, max: number): { body: Buffer; mode: number } | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > max) return null;
    // One byte more than fstat said: filling it means the file grew under the read.
    const buffer = Buffer.allocUnsafe(st.size + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n)
      n = readSync(fd, buffer, length, buffer.length - length, null);
    return length < buffer.length ? { body: buffer.subarray(0, length), mode: st.mode } : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
