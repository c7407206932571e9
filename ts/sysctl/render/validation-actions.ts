// A binding's `validationActions`: what the API server does with a policy's failures. Checked
// as the API server checks a ValidatingAdmissionPolicyBinding (its validateValidationActions),
// with its messages, so a file that renders is a binding that applies.

/** The actions the API server knows, in its sorted order. */
export const VALIDATION_ACTIONS = ['Audit', 'Deny', 'Warn'] as const;
/** `Deny` refuses the request, `Warn` returns a warning, `Audit` annotates the audit event. */
export type ValidationAction = (typeof VALIDATION_ACTIONS)[number];
/** The actions of a binding whose file sets none: refuse, as before rollout actions existed. */
export const DEFAULT_VALIDATION_ACTIONS: readonly ValidationAction[] = ['Deny'];

/** Go's JSON rendering of a bad value, as field errors print it. */
function shown(v: unknown): string {
  return JSON.stringify(v) ?? String(v);
}

/**
 * The API server's errors for `actions` at `field` (e.g. `spec.validationActions`), in its
 * order; empty when the binding would be accepted.
 */
export function validationActionsErrors(actions: unknown, field: string): string[] {
  if (!Array.isArray(actions)) return [`${field}: Invalid value: ${shown(actions)}: must be a list`];
  const errors: string[] = [];
  const seen = new Set<unknown>();
  actions.forEach((a, i) => {
    if (!(VALIDATION_ACTIONS as readonly unknown[]).includes(a)) {
      errors.push(
        `${field}[${i}]: Unsupported value: ${shown(a)}: supported values: ${VALIDATION_ACTIONS.map((v) => `"${v}"`).join(', ')}`,
      );
    }
    if (seen.has(a)) errors.push(`${field}[${i}]: Duplicate value: ${shown(a)}`);
    seen.add(a);
  });
  if (seen.has('Deny') && seen.has('Warn')) {
    errors.push(
      `${field}: Invalid value: ${shown(actions)}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)`,
    );
  }
  if (seen.size === 0) errors.push(`${field}: Required value: at least one validation action is required`);
  return errors;
}
