// Accepts what operators have at hand: `kubectl get services|endpointslices -A -o json|yaml`
// output (a v1 `List`, or a typed `ServiceList`/`EndpointSliceList`), converted to the compact
// cleanup tables with the same functions the reconciler uses. Anything else passes through.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { describe, KubenodeTypeError } from '../errors.js';
import { endpointsTable, serviceEntries } from './k8s.js';
import type { IPFamily } from './tables.js';

const ITEM_KIND = { services: 'Service', endpoints: 'EndpointSlice' } as const;

/** True for an object that looks like a Kubernetes list (`kind` ending in `List` and `items`). */
function isKubeList(doc: unknown): doc is { kind: string; items: unknown } {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return false;
  const kind = (doc as { kind?: unknown }).kind;
  return typeof kind === 'string' && kind.endsWith('List') && 'items' in doc;
}

function listItems(what: keyof typeof ITEM_KIND, doc: { kind: string; items: unknown }): unknown[] {
  const want = ITEM_KIND[what];
  if (doc.kind !== 'List' && doc.kind !== `${want}List`) {
    throw new KubenodeTypeError(
      `${what}: a ${doc.kind} is not a list of ${want}s (want List or ${want}List, as from kubectl get ${want.toLowerCase()}s -A -o json)`,
    );
  }
  if (!Array.isArray(doc.items)) {
    throw new KubenodeTypeError(`${what}: ${doc.kind}.items must be an array, got ${describe(doc.items)}`);
  }
  doc.items.forEach((item, i) => {
    if (typeof item !== 'object' || item === null) {
      throw new KubenodeTypeError(`${what}: ${doc.kind}.items[${i}] must be an object`);
    }
    // A typed list's items carry no kind; a generic List's items do, and must match.
    const kind = (item as { kind?: unknown }).kind;
    if (kind !== undefined && kind !== want) {
      throw new KubenodeTypeError(
        `${what}: ${doc.kind}.items[${i}] is a ${describe(kind)}, not a ${want} (wrong file for --${what}?)`,
      );
    }
  });
  return doc.items;
}

/** Service table for `family`: a Service list is converted, anything else returned as is. */
export function servicesFromDocument(doc: unknown, family: IPFamily): unknown {
  if (!isKubeList(doc)) return doc;
  return (listItems('services', doc) as V1Service[]).flatMap((s) => serviceEntries(s, family));
}

/** Endpoints table for `family`: an EndpointSlice list is converted, anything else returned as is. */
export function endpointsFromDocument(doc: unknown, family: IPFamily): unknown {
  if (!isKubeList(doc)) return doc;
  return endpointsTable(listItems('endpoints', doc) as V1EndpointSlice[], family);
}
