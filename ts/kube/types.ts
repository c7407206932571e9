// Slices of Kubernetes objects shared by several subsystems, defined once. Plain JSON objects,
// as @kubernetes/client-node and YAML parsing produce them. Types only: loading this module
// loads nothing.

/** An IP family, spelled as Kubernetes' `v1.IPFamily`. */
export type IPFamily = 'IPv4' | 'IPv6';

/** One entry of `spec.securityContext.sysctls` (`v1.Sysctl`). */
export interface V1Sysctl {
  /** Sysctl name, dotted or slash form. */
  name?: string | null;
  /** Value to set; a number is taken as its decimal text. */
  value?: string | number | null;
}

/**
 * The fields of a v1 Pod that admission (sysctls) and the user-namespace manager read; other
 * fields are ignored.
 */
export interface PodLike {
  /** Object metadata. */
  metadata?: {
    /** Pod name. */
    name?: string;
    /** Pod namespace. */
    namespace?: string;
    /** Pod UID: names the pod's directory under the user-namespace manager's `podsDir`. */
    uid?: string | null;
    /** Annotations; the alpha sysctl annotations are read from here. */
    annotations?: Record<string, string> | null;
  } | null;
  /** Pod spec. */
  spec?: {
    /** The pod uses the host's network namespace: no `net.*` sysctls allowed. */
    hostNetwork?: boolean | null;
    /** The pod uses the host's IPC namespace: no IPC sysctls allowed. */
    hostIPC?: boolean | null;
    /** `false` asks for a pod user namespace; unset or `true` shares the host's. */
    hostUsers?: boolean | null;
    /** The pod's OS; sysctls are refused for `windows`. */
    os?: {
      /** OS name. */
      name?: string;
    } | null;
    /** Pod-level security context. */
    securityContext?: {
      /** Sysctls to set in the pod's namespaces. */
      sysctls?: V1Sysctl[] | null;
    } | null;
  } | null;
}
