// API-server validation of pod sysctls (validateSysctls / ValidateHostSysctl / validateWindows).
import type { SysctlFieldError } from '../binding.js';
import { callNative, describe, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { podFlagBits, podSysctls, sysctlNames } from './pod.js';
import type { FieldError, PodLike } from './types.js';

/** Options of `validatePodSysctls` (upstream's `PodValidationOptions`). */
export interface ValidatePodSysctlsOptions {
  /** The update ratchet: skip the hostNetwork/hostIPC checks. */
  allowNamespacedSysctlsForHostNetAndHostIPC?: boolean;
}

const PATH = 'spec.securityContext.sysctls';

/** Field errors for `spec.securityContext.sysctls`, in the API server's order and wording. */
export function validatePodSysctls(pod: PodLike, options: ValidatePodSysctlsOptions = {}): FieldError[] {
  const allow = options.allowNamespacedSysctlsForHostNetAndHostIPC ?? false;
  if (typeof allow !== 'boolean') {
    throw new KubenodeTypeError(
      `allowNamespacedSysctlsForHostNetAndHostIPC must be a boolean, got ${describe(allow)}`,
    );
  }
  const { sysctls, flags } = podSysctls(pod);
  if (sysctls === null || sysctls.length === 0) return [];
  const names = sysctlNames(sysctls);
  const errs = validateSysctlNames(names, PATH, flags, allow);
  if (pod.spec?.os?.name === 'windows') {
    errs.push({
      type: 'FieldValueForbidden',
      field: PATH,
      detail: 'cannot be set for a windows pod',
      message: `${PATH}: Forbidden: cannot be set for a windows pod`,
    });
  }
  return errs;
}

/** `validateSysctls` over bare names at `path` (used for the alpha annotations too). */
export function validateSysctlNames(
  names: string[],
  path: string,
  flags = 0,
  allowHost = false,
): FieldError[] {
  const host = podFlagBits();
  const bits =
    (flags & (host.hostNetwork | host.hostIpc)) | (allowHost ? native.SYSCTL_ALLOW_HOST_NAMESPACED : 0);
  return callNative(() => native.sysctlValidate(names, path, bits)).map(fieldError);
}

/** A field error as the binding gives it, in the façade's shape. */
export function fieldError(e: SysctlFieldError): FieldError {
  return {
    type: e.type as FieldError['type'],
    field: e.field,
    ...(e.badValue !== undefined && e.badValue !== null ? { badValue: e.badValue } : {}),
    detail: e.detail,
    message: e.message,
  };
}
