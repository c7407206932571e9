// Slices of Kubernetes objects shared by several subsystems, defined once. Plain JSON objects,
// as @kubernetes/client-node and YAML parsing produce them. Types only: loading this module
// loads nothing.

export type IPFamily = 'IPv4' | 'IPv6';

export interface V1Sysctl {
  name?: string | null;
  value?: string | number | null;
}

/** The fields of a v1 Pod that admission (sysctls) and the user-namespace manager read. */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string | null;
    annotations?: Record<string, string> | null;
  } | null;
  spec?: {
    hostNetwork?: boolean | null;
    hostIPC?: boolean | null;
    hostUsers?: boolean | null;
    os?: { name?: string } | null;
    securityContext?: { sysctls?: V1Sysctl[] | null } | null;
  } | null;
}
