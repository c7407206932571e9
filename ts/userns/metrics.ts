// The kubelet's user-namespaced pod counters (pkg/kubelet/metrics
// `started_user_namespaced_pods_total` and `started_user_namespaced_pods_errors_total`) under
// their own names, for an agent whose pods get their user namespaces from `UserNsManager`.
import type { Counter, Registry } from 'prom-client';
import { type MetricsRegistry, perRegistry } from '../metrics-registry.js';
import { promClient } from '../peers.js';
import {
  STARTED_USER_NAMESPACED_PODS_ERRORS_TOTAL,
  STARTED_USER_NAMESPACED_PODS_TOTAL,
} from './metric-names.js';

/** The manager's counters in one registry. */
export interface UsernsMetrics {
  /** Pods with `hostUsers: false` whose mappings were asked for. */
  started: Counter;
  /** Of those, the ones whose mappings failed. */
  errors: Counter;
}

const make = perRegistry((registry: Registry): UsernsMetrics => {
  const { Counter } = promClient();
  return {
    started: new Counter({
      name: STARTED_USER_NAMESPACED_PODS_TOTAL,
      help: '[ALPHA] Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.',
      registers: [registry],
    }),
    errors: new Counter({
      name: STARTED_USER_NAMESPACED_PODS_ERRORS_TOTAL,
      help: '[ALPHA] Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.',
      registers: [registry],
    }),
  };
});

/**
 * The counters in `registry`, registered once per registry.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `registry` is not a prom-client Registry.
 */
export function usernsMetrics(registry: MetricsRegistry): UsernsMetrics {
  return make(registry, 'registry');
}
