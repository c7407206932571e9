// Conntrack: ctnetlink list/delete through the Rust core, kube-proxy's stale UDP flow cleanup,
// its metrics, and the conntrack sysctls kube-proxy sets.

// The generated shapes behind CpuStats, StatsTotal and TableStats, so the reference can show them.
export type { ConntrackCpuStats, ConntrackStats, ConntrackStatsTotal } from '../binding.js';
export type { WatchBackoff } from '../kube/informer.js';
export {
  type CleanEstimate,
  type CleanOptions,
  type CleanPath,
  type CleanResult,
  cleanStaleEntries,
  type FullReason,
} from './clean.js';
export {
  Conntrack,
  type CpuStats,
  type DeleteResult,
  type FilterDeleteResult,
  type Flow,
  type FlowTuple,
  type ListOptions,
  type ListResult,
  type OpenOptions,
  type Progress,
  type StatsTotal,
  type TableStats,
} from './client.js';
export {
  ConntrackClosedError,
  ConntrackFamilyError,
  ConntrackPermissionError,
  ConntrackUnavailableError,
} from './errors.js';
export {
  type EventIndexOptions,
  type EventIndexState,
  type EventIndexStats,
  enableEventIndex,
  eventIndexStats,
} from './event-index.js';
export {
  type ConntrackEvent,
  type EventGroup,
  type EventStream,
  type EventsOptions,
  events,
  type FlowEvent,
  type LostEvent,
} from './events.js';
export type { DirectionFilter, FilterProtocol, FlowFilter } from './filter.js';
export {
  endpointsTable,
  type SlicePort,
  serviceEntries,
  servicePortName,
  sliceEntries,
  udpPortKeys,
} from './k8s.js';
export {
  type ConntrackMetrics,
  conntrackMetrics,
  DELETED_TOTAL,
  FAILED_PASSES_TOTAL,
  PASSES_TOTAL,
  SYNC_BUCKETS,
  SYNC_DURATION,
  WATCH_RESTARTS_TOTAL,
  watchRestartsMetric,
} from './metrics.js';
export { goneIps, type PurgeResult, sliceAddresses } from './purge.js';
export { CleanupGate, type ReconcilerOptions, StaleFlowReconciler } from './reconciler.js';
export { conntrackKubernetesVersion } from './release.js';
export {
  type ApplyOptions,
  applyConntrackSysctls,
  CONNTRACK_MAX_LIMIT,
  type ConntrackConfig,
  ConntrackSysctlError,
  conntrackMax,
  DEFAULT_CONNTRACK_CONFIG,
  detectNumCPU,
  durationSeconds,
  type SysctlAction,
} from './sysctls.js';
export {
  checkFullThreshold,
  DEFAULT_CHECK_PERIOD_MS,
  DEFAULT_FULL_THRESHOLD,
  ENTRIES,
  ENTRIES_LIMIT,
  REASON_TABLE_NEARLY_FULL,
  STAT_COUNTERS,
  TableHealth,
  type TableHealthOptions,
  tableMetrics,
} from './table-health.js';
export type { EndpointEntry, EndpointsTable, IPFamily, ServiceEntry } from './tables.js';
