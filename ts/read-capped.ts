// Size-capped reads of the files kubenode takes (pod manifests, policy files, conntrack tables),
// for the CLI and the library alike.
import { open } from 'node:fs/promises';
import { KubenodeRangeError } from './errors.js';

/**
 * The API server's request body limit (k8s.io/apiserver `MaxRequestBodyBytes`, 3 MiB): no object
 * larger than this can exist in a cluster, so a bigger pod or policy file is refused unread.
 */
export const MAX_OBJECT_BYTES = 3 * 1024 * 1024;

/** Input beyond the limit of `readCapped`; nothing past the limit was read. */
export class InputTooLargeError extends KubenodeRangeError {
  constructor(
    readonly limit: number,
    why = "the API server's request body limit",
  ) {
    super(`Request entity too large: limit is ${limit} (${why})`);
    this.name = 'InputTooLargeError';
  }
}

/**
 * Reads `path` (`-` is stdin) as UTF-8; with `limit`, throws `InputTooLargeError` once the input
 * passes that many bytes (`why` says where the limit comes from). I/O errors propagate as they are.
 */
export async function readCapped(path: string, limit?: number, why?: string): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  const add = (c: Buffer) => {
    total += c.length;
    if (limit !== undefined && total > limit) throw new InputTooLargeError(limit, why);
    chunks.push(c);
  };
  if (path === '-') {
    for await (const c of process.stdin) add(c as Buffer);
  } else {
    const fh = await open(path, 'r');
    try {
      // Reads in chunks rather than trusting the size from fstat, which /proc and pipes lie about.
      for (;;) {
        const buf = Buffer.allocUnsafe(1 << 20);
        const { bytesRead } = await fh.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        add(buf.subarray(0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  }
  return Buffer.concat(chunks, total).toString('utf8');
}
