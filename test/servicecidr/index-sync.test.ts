// Event handlers with objects the API server would never send (missing fields, bad CIDRs, names
// that are not addresses): nothing throws, the index skips what it cannot parse, and keys go to
// the queue as upstream's handlers would enqueue them. (An in-process stand-in for the informers;
// the real-server behaviour is covered by controller.test.ts.)
import type { V1IPAddress, V1ServiceCIDR } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import type { InformerHandlers, ResilientInformer } from '../../ts/kube/informer.js';
import { attachHandlers } from '../../ts/servicecidr/index-sync.js';

function fakeInformer<T>() {
  const h: InformerHandlers<T> = {};
  return {
    h,
    inf: { on: (x: InformerHandlers<T>) => Object.assign(h, x) } as unknown as ResilientInformer<T & object>,
  };
}

async function drain(q: servicecidr.RateLimitingQueue<string>): Promise<string[]> {
  const out: string[] = [];
  while (q.len() > 0) {
    const r = await q.get();
    if (r.shutdown) break;
    out.push(r.item);
    q.done(r.item);
  }
  return out.sort();
}

describe('index-sync handlers', () => {
  it('tolerate malformed objects and enqueue like upstream', async () => {
    const cidrs = fakeInformer<V1ServiceCIDR>();
    const ips = fakeInformer<V1IPAddress>();
    const index = new servicecidr.CIDRIndex();
    const queue = new servicecidr.RateLimitingQueue<string>();
    attachHandlers({ cidrs: cidrs.inf, ips: ips.inf, index, queue, log: servicecidr.silentLogger });

    cidrs.h.add?.({} as V1ServiceCIDR);
    cidrs.h.add?.({ metadata: { name: 'nospec' } });
    cidrs.h.add?.({ metadata: { name: 'junk' }, spec: { cidrs: ['junk', '10.0.0.1/24'] } });
    cidrs.h.add?.({ metadata: { name: 'wide' }, spec: { cidrs: ['10.0.0.0/16'] } });
    // Add fans out to every overlapping ServiceCIDR, itself included.
    expect(await drain(queue)).toEqual(['junk', 'nospec', 'wide']);
    expect(index.containing('10.0.0.9')).toEqual(['junk', 'wide']);

    // Update enqueues only itself.
    cidrs.h.update?.({ metadata: { name: 'junk' }, spec: { cidrs: ['10.1.0.0/24'] } });
    expect(await drain(queue)).toEqual(['junk']);

    // IPAddresses: only allocator-managed ones with address names, to their containing CIDRs.
    const label = { [servicecidr.LABEL_MANAGED_BY]: servicecidr.IPALLOCATOR_CONTROLLER_NAME };
    ips.h.add?.({ metadata: { name: '10.0.0.9', labels: label } });
    ips.h.add?.({ metadata: { name: '10.0.0.10' } });
    ips.h.add?.({ metadata: { name: 'not-an-ip', labels: label } });
    ips.h.add?.({} as V1IPAddress);
    ips.h.delete?.({ metadata: { name: '10.1.0.5', labels: label } });
    expect(await drain(queue)).toEqual(['junk', 'wide']);

    cidrs.h.delete?.({ metadata: { name: 'wide' } });
    expect(index.has('wide')).toBe(false);
    expect(await drain(queue)).toEqual(['wide']);
    queue.shutDown();
  });
});
