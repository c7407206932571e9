// Names of the user-namespace manager's metrics (the kubelet's own): no prom-client here, so the
// userns typings need no optional peer.

/** Name of the counter of pods with user namespaces started (the kubelet's own name). */
export const STARTED_USER_NAMESPACED_PODS_TOTAL = 'kubelet_started_user_namespaced_pods_total';
/** Name of the counter of those starts that failed (the kubelet's own name). */
export const STARTED_USER_NAMESPACED_PODS_ERRORS_TOTAL = 'kubelet_started_user_namespaced_pods_errors_total';
