// User-namespace manager (kubelet pkg/kubelet/userns) with kubelet-compatible per-pod files.

export type { UsernsVerifyReport } from '../binding.js';
export { type CheckPoolOptions, checkPool, type Misfit, type PoolCheck } from './check.js';
export { decodeRuntimeHandlers, type RuntimeHandlerInfo, runtimeHandlers } from './cri.js';
export { UsernsError, type UsernsErrorKind } from './errors.js';
export { encodeFile, type Layout, type ListedPod, layout, listPods, parseFile } from './files.js';
export {
  type Allocation,
  DEFAULT_IDS_PER_POD,
  DEFAULT_MAX_PODS,
  FEATURE_GATE,
  type HandlerSupport,
  type IdMapping,
  type PodLike,
  type RunningPodLike,
  type UserNamespace,
  UserNsManager,
  type UserNsManagerOptions,
} from './manager.js';
export {
  STARTED_USER_NAMESPACED_PODS_ERRORS_TOTAL,
  STARTED_USER_NAMESPACED_PODS_TOTAL,
} from './metric-names.js';
export type { PoolOptions } from './pool-options.js';
export {
  type CriOptions,
  DEFAULT_PODS_DIR,
  type IdmapProbe,
  kernelCheck,
  probeIdmapMounts,
  usernsReadinessChecks,
} from './readiness.js';
export {
  accountExists,
  defaultPool,
  type IdPool,
  lookPath,
  parseGetSubIdsOutput,
  type ResolveOptions,
  resolveKubeletMappings,
} from './subids.js';
export { type VerifyReport, verifyMapping, verifyRange } from './verify.js';
