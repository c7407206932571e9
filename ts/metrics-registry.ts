// The registry a caller hands to a component that records metrics: checked once, with the
// metric families registered once per registry (prom-client refuses a name registered twice).
import type { Registry } from 'prom-client';
import { describe, KubenodeTypeError } from './errors.js';

/**
 * `make(registry)` once per registry: later calls with the same registry get the same metrics.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `registry` is not a prom-client Registry.
 */
export function perRegistry<T>(make: (registry: Registry) => T): (registry: Registry, what: string) => T {
  const made = new WeakMap<Registry, T>();
  return (registry, what) => {
    assertRegistry(registry, what);
    let m = made.get(registry);
    if (m === undefined) {
      m = make(registry);
      made.set(registry, m);
    }
    return m;
  };
}

/** @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `registry` is not a prom-client Registry. */
export function assertRegistry(registry: unknown, what: string): asserts registry is Registry {
  if (
    typeof registry !== 'object' ||
    registry === null ||
    typeof (registry as Registry).registerMetric !== 'function'
  ) {
    throw new KubenodeTypeError(`${what} must be a prom-client Registry, got ${describe(registry)}`);
  }
}
