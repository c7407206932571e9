// ServiceCIDRs: upstream `pkg/api/servicecidr` helpers, the Rust CIDR index, and the
// kube-controller-manager ServiceCIDRs controller on @kubernetes/client-node.

export { describeError } from '../kube/api-error.js';
export {
  broadcastAddress,
  CIDRIndex,
  containsAddress,
  containsPrefix,
  type DeleteCheck,
  type DeleteCheckOutcome,
  type Holder,
  type IPFamily,
  ipToAddr,
  overlapsPrefix,
  type PrefixInfo,
  parsePrefix,
  prefixContainsIP,
  type ServiceCIDRLike,
  validateCIDR,
} from './cidr.js';
export {
  CONDITION_READY,
  CONTROLLER_NAME,
  IPALLOCATOR_CONTROLLER_NAME,
  LABEL_IP_FAMILY,
  LABEL_MANAGED_BY,
  MESSAGE_READY,
  MESSAGE_TERMINATING,
  QUEUE_NAME,
  REASON_TERMINATING,
  SERVICE_CIDR_PROTECTION_FINALIZER,
  ServiceCIDRController,
  type ServiceCIDRControllerOptions,
} from './controller.js';
export {
  type CheckedGuardSpec,
  DEFAULT_GUARD_NAME,
  GUARD_API_VERSION,
  GUARD_KIND,
  loadServiceCIDRGuard,
  parseServiceCIDRGuard,
  ServiceCIDRGuard,
  ServiceCIDRGuardError,
  type ServiceCIDRGuardRequest,
  type ServiceCIDRGuardSpec,
  validateServiceCIDRSpec,
} from './guard.js';
export { type LeaderElectionOptions, LeaderElector } from './leader-election.js';
export { formatLine, type KeyValues, klogLogger, type Logger, silentLogger } from './logger.js';
export { type QueueMetrics, type QueueMetricsProvider, WorkqueueMetrics } from './metrics.js';
export {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
} from './ratelimit.js';
export { explainServiceCIDR, type ServiceCIDRExplanation, type ServiceCIDRHolder } from './why.js';
export { RateLimitingQueue, type WorkQueueOptions } from './workqueue.js';
