// The controller's caches keep objects without managedFields and annotations: everything the
// controller reads stays, and the cached object is trimmed before any other handler sees it.
import { describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import type { InformerHandlers, ResilientInformer } from '../../ts/kube/informer.js';
import {
  attachHandlers,
  deletionTimestamp,
  type ServiceCIDRObject,
  trimObject,
} from '../../ts/servicecidr/index-sync.js';

const wire = (): ServiceCIDRObject =>
  JSON.parse(
    JSON.stringify({
      metadata: {
        name: 'a',
        uid: 'u',
        resourceVersion: '7',
        deletionTimestamp: '2026-11-27T07:00:00Z',
        finalizers: [servicecidr.SERVICE_CIDR_PROTECTION_FINALIZER],
        labels: { x: 'y' },
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":true}' },
        managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }],
      },
      spec: { cidrs: ['10.0.0.0/24'] },
      status: { conditions: [{ type: 'Ready', status: 'True', reason: '', message: 'ok' }] },
    }),
  );

describe('trimmed caches', () => {
  it('drop managedFields and annotations, keep what the controller reads', () => {
    const o = trimObject(wire());
    const want = wire();
    const meta = want.metadata as Record<string, unknown>;
    delete meta.managedFields;
    delete meta.annotations;
    expect(o).toEqual(want);
    expect(deletionTimestamp(o)).toBe('2026-11-27T07:00:00Z');
    expect(deletionTimestamp({ metadata: { deletionTimestamp: new Date(0) } as never })).toEqual(new Date(0));
    expect(deletionTimestamp({})).toBeUndefined();
  });

  it('trim the cached object before the index and queue handlers run', () => {
    const seen: unknown[] = [];
    const handlers: InformerHandlers<ServiceCIDRObject>[] = [];
    const inf = { on: (h: InformerHandlers<ServiceCIDRObject>) => handlers.push(h) };
    const index = new servicecidr.CIDRIndex();
    const queue = new servicecidr.RateLimitingQueue<string>();
    attachHandlers({
      cidrs: inf as unknown as ResilientInformer<ServiceCIDRObject>,
      ips: { on: () => {} } as unknown as ResilientInformer<ServiceCIDRObject>,
      index,
      queue,
      log: servicecidr.silentLogger,
    });
    handlers.push({ add: (o) => seen.push(structuredClone(o.metadata)) });
    const cached = wire();
    for (const h of handlers) h.add?.(cached);
    expect(cached.metadata).not.toHaveProperty('managedFields');
    expect(seen[0]).not.toHaveProperty('annotations');
    expect(index.containing('10.0.0.9')).toEqual(['a']);
    expect(queue.len()).toBe(1);
    queue.shutDown();
  });
});
