// The slices of the Kubernetes v1 Pod that sysctl code reads. Plain JSON objects, as
// @kubernetes/client-node and YAML parsing produce them.

/** One entry of `spec.securityContext.sysctls` (`v1.Sysctl`). */
export interface V1Sysctl {
  /** Sysctl name, dotted or slash form. */
  name?: string | null;
  /** Value to set; a number is taken as its decimal text. */
  value?: string | number | null;
}

/** The parts of a `v1.Pod` the sysctl checks read; other fields are ignored. */
export interface PodLike {
  /** Object metadata. */
  metadata?: {
    /** Pod name. */
    name?: string;
    /** Pod namespace. */
    namespace?: string;
    /** Annotations; the alpha sysctl annotations are read from here. */
    annotations?: Record<string, string> | null;
  } | null;
  /** Pod spec. */
  spec?: {
    /** The pod uses the host's network namespace: no `net.*` sysctls allowed. */
    hostNetwork?: boolean | null;
    /** The pod uses the host's IPC namespace: no IPC sysctls allowed. */
    hostIPC?: boolean | null;
    /** `false` runs the pod in its own user namespace. */
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

/** Kernel namespace a sysctl belongs to; `''` when it is not namespaced. */
export type SysctlNamespace = 'IPC' | 'Net' | 'UTS' | 'User' | '';

/** One API field error, as `field.Error` reports it. */
export interface FieldError {
  /** Upstream's `field.ErrorType`. */
  type: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueDuplicate' | 'FieldValueForbidden';
  /** Path of the field, e.g. `spec.securityContext.sysctls[0].name`. */
  field: string;
  /** The offending value, where the error type carries one. */
  badValue?: string;
  /** Explanation after the type, e.g. `must have at most 253 bytes`. */
  detail: string;
  /** `field.Error.Error()`, e.g. `spec.securityContext.sysctls[0].name: Required value`. */
  message: string;
}
