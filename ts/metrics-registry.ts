// The registry a caller hands to a component that records metrics: checked once, with the
// metric families registered once per registry (prom-client refuses a name registered twice).
// No prom-client import here: admission and userns take a registry in their options, and their
// typings must not need the optional peer.
import { describe, KubenodeTypeError } from './errors.js';

/**
 * A prom-client `Registry`, declared by the method kubenode checks for, so that the typings of
 * the subsystems usable without prom-client (admission, userns) do not import it.
 */
export interface MetricsRegistry {
  /** prom-client's `Registry.registerMetric`. */
  registerMetric(metric: unknown): void;
}

/**
 * `make(registry)` once per registry: later calls with the same registry get the same metrics.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `registry` is not a prom-client Registry.
 */
export function perRegistry<R extends MetricsRegistry, T>(
  make: (registry: R) => T,
): (registry: MetricsRegistry, what: string) => T {
  const made = new WeakMap<MetricsRegistry, T>();
  return (registry, what) => {
    assertRegistry(registry, what);
    let m = made.get(registry);
    if (m === undefined) {
      // A registry that passed the check is prom-client's (the only kind the callers document).
      m = make(registry as R);
      made.set(registry, m);
    }
    return m;
  };
}

/** @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `registry` is not a prom-client Registry. */
export function assertRegistry(registry: unknown, what: string): asserts registry is MetricsRegistry {
  if (
    typeof registry !== 'object' ||
    registry === null ||
    typeof (registry as MetricsRegistry).registerMetric !== 'function'
  ) {
    throw new KubenodeTypeError(`${what} must be a prom-client Registry, got ${describe(registry)}`);
  }
}
