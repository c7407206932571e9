// The slices of the Kubernetes v1 Pod that sysctl code reads. Plain JSON objects, as
// @kubernetes/client-node and YAML parsing produce them.

export interface V1Sysctl {
  name?: string | null;
  value?: string | number | null;
}

export interface PodLike {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> | null } | null;
  spec?: {
    hostNetwork?: boolean | null;
    hostIPC?: boolean | null;
    hostUsers?: boolean | null;
    os?: { name?: string } | null;
    securityContext?: { sysctls?: V1Sysctl[] | null } | null;
  } | null;
}

export type SysctlNamespace = 'IPC' | 'Net' | 'UTS' | 'User' | '';

/** One API field error, as `field.Error` reports it. */
export interface FieldError {
  type: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueDuplicate' | 'FieldValueForbidden';
  field: string;
  badValue?: string;
  detail: string;
  /** `field.Error.Error()`, e.g. `spec.securityContext.sysctls[0].name: Required value`. */
  message: string;
}
