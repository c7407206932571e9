// Informer event handlers (upstream NewController L86–249): keep the CIDR index in step with the
// ServiceCIDR cache and turn events into queue keys. The index is updated before keys are
// enqueued, so a worker never sees a cache newer than its index.
import type { V1IPAddress, V1ServiceCIDR } from '@kubernetes/client-node';
import type { ResilientInformer } from '../kube/informer.js';
import type { CIDRIndex } from './cidr.js';
import { IPALLOCATOR_CONTROLLER_NAME, LABEL_MANAGED_BY } from './labels.js';
import type { Logger } from './logger.js';
import type { RateLimitingQueue } from './workqueue.js';

function cidrsOf(sc: V1ServiceCIDR): string[] {
  const c = sc.spec?.cidrs;
  return Array.isArray(c) ? c.filter((x): x is string => typeof x === 'string') : [];
}

export function attachHandlers(x: {
  cidrs: ResilientInformer<V1ServiceCIDR>;
  ips: ResilientInformer<V1IPAddress>;
  index: CIDRIndex;
  queue: RateLimitingQueue<string>;
  log: Logger;
}): void {
  const { index, queue, log } = x;

  const upsert = (sc: V1ServiceCIDR): string | undefined => {
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

  const onIP = (ip: V1IPAddress) => {
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
