// The slices of the Kubernetes v1 Pod that sysctl code reads. Plain JSON objects, as
// @kubernetes/client-node and YAML parsing produce them.

import type { SysctlNamespace as NativeNamespace } from '../binding.js';

export type { PodLike, V1Sysctl } from '../kube/types.js';

/** Kernel namespace a sysctl belongs to; `''` when it is not namespaced (the binding's values). */
export type SysctlNamespace = `${NativeNamespace}`;

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
