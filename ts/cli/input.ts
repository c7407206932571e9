// Reading the JSON/YAML files the CLI takes (pod manifests, policy files, conntrack tables): the
// size-capped reads of ../read-capped.ts and the linear parse of ../yaml-documents.ts, with
// failures as bad input (exit 2).
import { InputTooLargeError, readCapped } from '../read-capped.js';
import { badInput } from './output.js';

export { MAX_OBJECT_BYTES } from '../read-capped.js';
export { parseDocuments } from '../yaml-documents.js';

/** Reads `path` (`-` is stdin) as UTF-8; with `limit`, refuses input beyond that many bytes. */
export async function readInput(path: string, what: string, limit?: number): Promise<string> {
  try {
    return await readCapped(path, limit);
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
