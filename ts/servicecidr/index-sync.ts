// Informer event handlers (upstream NewController L86–249): keep the CIDR index in step with the
// ServiceCIDR cache and turn events into queue keys. The index is updated before keys are
// enqueued, so a worker never sees a cache newer than its index.
import type { ResilientInformer } from '../kube/informer.js';
import type { CIDRIndex } from './cidr.js';
import { IPALLOCATOR_CONTROLLER_NAME, LABEL_MANAGED_BY } from './labels.js';
import type { Logger } from './logger.js';
import type { RateLimitingQueue } from './workqueue.js';

/** The metadata fields the controller reads (deletionTimestamp: see {@link deletionTimestamp}). */
interface Meta {
  name?: string;
  uid?: string;
  resourceVersion?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
}

/** A ServiceCIDR as the controller reads it (plain JSON from the API server). */
export interface ServiceCIDRObject {
  metadata?: Meta;
  spec?: { cidrs?: unknown[] };
  status?: { conditions?: { type?: string; status?: string; reason?: string; message?: string }[] };
}

/** An IPAddress as the controller reads it. */
export interface IPAddressObject {
  metadata?: Meta;
}

/**
 * `o` without what the controller never reads (client-go's informer transform): managedFields
 * and annotations are most of a small object's bytes, and the caches hold every object.
 */
export function trimObject<T extends { metadata?: Meta }>(o: T): T {
  const m = o?.metadata as Record<string, unknown> | undefined;
  if (m) {
    delete m.managedFields;
    delete m.annotations;
  }
  return o;
}

/** When deletion was asked for, as sent (an RFC 3339 string; a Date from client-node's objects). */
export function deletionTimestamp(o: { metadata?: Meta }): string | Date | undefined {
  const t = (o.metadata as { deletionTimestamp?: unknown } | undefined)?.deletionTimestamp;
  return typeof t === 'string' || t instanceof Date ? t : undefined;
}

function cidrsOf(sc: ServiceCIDRObject): string[] {
  const c = sc.spec?.cidrs;
  return Array.isArray(c) ? c.filter((x): x is string => typeof x === 'string') : [];
}

export function attachHandlers(x: {
  cidrs: ResilientInformer<ServiceCIDRObject>;
  ips: ResilientInformer<IPAddressObject>;
  index: CIDRIndex;
  queue: RateLimitingQueue<string>;
  log: Logger;
}): void {
  const { index, queue, log } = x;

  // Registered first, so the cached object is trimmed before any other handler sees it.
  const trim = { add: trimObject, update: trimObject };
  x.cidrs.on(trim);
  x.ips.on(trim);

  const upsert = (sc: ServiceCIDRObject): string | undefined => {
    const name = sc.metadata?.name;
    if (!name) {
      log.info(2, 'Ignoring ServiceCIDR without a name');
      return undefined;
    }
    const skipped = index.upsert(name, cidrsOf(sc));
    if (skipped.length > 0)
      log.info(2, 'ServiceCIDR has unparsable CIDRs, ignoring them', { ServiceCIDR: name, cidrs: skipped });
    return name;
  };

  x.cidrs.on({
    add(sc) {
      const name = upsert(sc);
      if (!name) return;
      queue.add(name);
      // Overlapping ServiceCIDRs may now be deletable (or no longer): re-evaluate them.
      for (const c of index.has(name) ? cidrsOf(sc) : []) {
        let names: string[];
        try {
          names = index.overlapping(c);
        } catch {
          continue;
        }
        for (const n of names) queue.add(n);
      }
    },
    update(sc) {
      const name = upsert(sc);
      if (name) queue.add(name);
    },
    delete(sc) {
      const name = sc.metadata?.name;
      if (!name) return;
      index.remove(name);
      queue.add(name);
    },
  });

  const onIP = (ip: IPAddressObject) => {
    const name = ip.metadata?.name;
    if (!name || ip.metadata?.labels?.[LABEL_MANAGED_BY] !== IPALLOCATOR_CONTROLLER_NAME) return;
    let owners: string[];
    try {
      owners = index.containing(name);
    } catch {
      return; // not an address: nothing contains it
    }
    for (const n of owners) queue.add(n);
  };
  x.ips.on({ add: onIP, delete: onIP });
}
