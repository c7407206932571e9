// Reading the small files a daemon's configuration names (kubeconfig, service-account token, CA,
// namespace) by the rule the namespace and subordinate-id files follow: look before opening and
// refuse anything but a regular file (a FIFO would block start-up before any log line, a device
// such as /dev/zero would be read without end), open non-blocking, check again what was opened
// (the path may have been swapped meanwhile), and read no more than a cap.
import type { Stats } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { fs } from '../node-builtins.js';

/** The cap for every such file: far above any real kubeconfig, token or CA bundle. */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

function notRegular(st: Stats): Error {
  return new Error(`not a regular file (${kindOf(st)})`);
}

/**
 * The contents of the regular file `path` (symbolic links followed, as projected volumes use
 * them), at most `limit` bytes. Throws a plain Error saying why not; callers name the file.
 */
export async function readRegularFile(path: string, limit = MAX_CONFIG_FILE_BYTES): Promise<Buffer> {
  const before = await stat(path);
  if (!before.isFile()) throw notRegular(before);
  const fh = await open(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw notRegular(st);
    const chunks: Buffer[] = [];
    let total = 0;
    // Read to the end rather than trusting st.size, which may change while reading.
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.min(64 * 1024, limit + 1 - total));
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > limit) throw new Error(`larger than ${limit} bytes`);
      chunks.push(buf.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks, total);
  } finally {
    await fh.close();
  }
}
