// Parsing JSON or YAML input (pod manifests, policy files, conntrack tables) in time linear in
// its size, duplicate keys refused as go-yaml refuses them.
import type { Document } from 'yaml';
import { yaml } from './yaml-lazy.js';

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
  const docs = yaml().parseAllDocuments(text, { uniqueKeys: false });
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(d.errors[0]?.message);
    const dup = duplicateKey(d);
    if (dup !== undefined) throw new Error(`mapping key ${JSON.stringify(dup)} already defined`);
  }
  // yaml's own alias cap (100): past it `toJS` throws, so an alias bomb is refused, not expanded.
  return docs.filter((d) => d.contents !== null).map((d) => d.toJS({ maxAliasCount: 100 }) as unknown);
}

function duplicateKey(doc: Document): string | undefined {
  let dup: string | undefined;
  const { isScalar, visit } = yaml();
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
