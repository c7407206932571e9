// The slices of the Kubernetes v1 Pod that sysctl code reads. Plain JSON objects, as
// @kubernetes/client-node and YAML parsing produce them.

export type { PodLike, V1Sysctl } from '../kube/types.js';

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
