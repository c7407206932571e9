// Reading the JSON/YAML files the CLI takes (pod manifests, policy files, conntrack tables):
// size-capped reads, and the parse of ../yaml-documents.ts that stays linear on large documents.
import { open } from 'node:fs/promises';
import { badInput, CliExit } from './output.js';

export { parseDocuments } from '../yaml-documents.js';

/**
 * The API server's request body limit (k8s.io/apiserver `MaxRequestBodyBytes`, 3 MiB): no object
 * larger than this can exist in a cluster, so a bigger pod file is refused unread.
 */
export const MAX_OBJECT_BYTES = 3 * 1024 * 1024;

/** Reads `path` (`-` is stdin) as UTF-8; with `limit`, refuses input beyond that many bytes. */
export async function readInput(path: string, what: string, limit?: number): Promise<string> {
  const tooLarge = () =>
    badInput(
      `${what} ${path}: Request entity too large: limit is ${limit} (the API server's request body limit)`,
    );
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    if (path === '-') {
      for await (const c of process.stdin) {
        total += (c as Buffer).length;
        if (limit !== undefined && total > limit) tooLarge();
        chunks.push(c as Buffer);
      }
    } else {
      const fh = await open(path, 'r');
      try {
        // Reads in chunks rather than trusting the size from fstat, which /proc and pipes lie about.
        for (;;) {
          const buf = Buffer.allocUnsafe(1 << 20);
          const { bytesRead } = await fh.read(buf, 0, buf.length, null);
          if (bytesRead === 0) break;
          total += bytesRead;
          if (limit !== undefined && total > limit) tooLarge();
          chunks.push(buf.subarray(0, bytesRead));
        }
      } finally {
        await fh.close();
      }
    }
  } catch (e) {
    if (e instanceof CliExit) throw e;
    badInput(`cannot read ${what} ${path}: ${(e as Error).message}`);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/** A plain JSON object: not a list, a scalar, binary data or another tagged YAML value. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
