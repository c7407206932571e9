// Reading the JSON/YAML files the CLI takes (pod manifests, policy files, conntrack tables): the
// size-capped reads of ../read-capped.ts and the linear parse of ../yaml-documents.ts, with
// failures as bad input (exit 2).
import { InputTooLargeError, readCapped } from '../read-capped.js';
import { badInput } from './output.js';

export { MAX_OBJECT_BYTES } from '../read-capped.js';
export { parseDocuments } from '../yaml-documents.js';

/**
 * The most a conntrack table file may hold: well above `kubectl get endpointslices -A -o json`
 * of a large cluster, and below what one JavaScript string can hold, so `/dev/zero` or an
 * endless pipe is refused rather than read until memory runs out.
 */
export const MAX_TABLE_BYTES = 256 * 1024 * 1024;

/**
 * Reads `path` (`-` is stdin) as UTF-8; with `limit`, refuses input beyond that many bytes
 * (`why` says where the limit comes from).
 */
export async function readInput(path: string, what: string, limit?: number, why?: string): Promise<string> {
  try {
    return await readCapped(path, limit, why);
  } catch (e) {
    if (e instanceof InputTooLargeError) badInput(`${what} ${path}: ${e.message}`);
    badInput(`cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

/** A plain JSON object: not a list, a scalar, binary data or another tagged YAML value. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
