// Reading the JSON/YAML files the CLI takes (pod manifests, conntrack tables): size-capped reads
// and a parse that stays linear on large documents.
import { open } from 'node:fs/promises';
import { type Document, isScalar, parseAllDocuments, visit } from 'yaml';
import { badInput, CliExit } from './output.js';

/**
 * The API server's request body limit (k8s.io/apiserver `MaxRequestBodyBytes`, 3 MiB): no object
 * larger than this can exist in a cluster, so a bigger pod file is refused unread.
 */
export const MAX_OBJECT_BYTES = 3 * 1024 * 1024;

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
export async function readInput(
  path: string,
  what: string,
  limit?: number,
  why = "the API server's request body limit",
): Promise<string> {
  const tooLarge = () => badInput(`${what} ${path}: Request entity too large: limit is ${limit} (${why})`);
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

/**
 * Parses a JSON or YAML stream into its non-empty documents; throws with the parser's message. JSON (what the API server and
 * `kubectl get -o json` produce) takes the fast native path. YAML duplicate keys are refused as
 * go-yaml does, but with one set per map: the library's own check is quadratic in the number of
 * keys (a 3 MB pod took minutes).
 */
export function parseDocuments(text: string): unknown[] {
  if (/^\s*[[{]/.test(text)) {
    try {
      return [JSON.parse(text) as unknown];
    } catch {
      // Not JSON after all (e.g. a YAML flow mapping): the YAML parser reports the error.
    }
  }
  const docs = parseAllDocuments(text, { uniqueKeys: false });
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(d.errors[0]?.message);
    const dup = duplicateKey(d);
    if (dup !== undefined) throw new Error(`mapping key ${JSON.stringify(dup)} already defined`);
  }
  return docs.filter((d) => d.contents !== null).map((d) => d.toJS() as unknown);
}

function duplicateKey(doc: Document): string | undefined {
  let dup: string | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        const k = isScalar(key) ? key.value : key;
        if (seen.has(k)) {
          dup = String(k);
          return visit.BREAK;
        }
        seen.add(k);
      }
      return undefined;
    },
  });
  return dup;
}

/** A plain JSON object: not a list, a scalar, binary data or another tagged YAML value. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
