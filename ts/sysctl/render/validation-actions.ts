// A binding's `validationActions`: what the API server does with a policy's failures. The rule
// and its messages (the API server's) are the native core's; this module checks the JS shape.
import { callNative, describe, KubenodeTypeError } from '../../errors.js';
import { native } from '../../native.js';

/** The actions the API server knows, in its sorted order. */
export const VALIDATION_ACTIONS = ['Audit', 'Deny', 'Warn'] as const;
/** `Deny` refuses the request, `Warn` returns a warning, `Audit` annotates the audit event. */
export type ValidationAction = (typeof VALIDATION_ACTIONS)[number];
/** The actions of a binding whose file sets none: refuse, as before rollout actions existed. */
export const DEFAULT_VALIDATION_ACTIONS: readonly ValidationAction[] = ['Deny'];

/**
 * The API server's errors for `actions` at `field` (e.g. `spec.validationActions`), in its
 * order and wording; empty when the binding would be accepted.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `actions` is not an array of strings.
 */
export function validationActionsErrors(actions: readonly unknown[], field: string): string[] {
  if (!Array.isArray(actions))
    throw new KubenodeTypeError(`${field} must be an array, got ${describe(actions)}`);
  actions.forEach((a, i) => {
    if (typeof a !== 'string')
      throw new KubenodeTypeError(`${field}[${i}] must be a string, got ${describe(a)}`);
  });
  return callNative(() => native.sysctlValidationActionsErrors(actions as string[], field));
}
