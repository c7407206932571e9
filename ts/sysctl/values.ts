// Value syntax of SysctlPolicy rules as the native core publishes it: regex sources that mean
// the same in JavaScript and in RE2 (CEL's `matches`/`find`) as the core's matchers, so the
// rendered admission policy decides like the node. Whitespace is the kernel's (ASCII isspace).
import type { SysctlPolicySyntax } from '../binding.js';
import { native } from '../native.js';

let syntax: SysctlPolicySyntax | undefined;

/** One whitespace character (`SPACE`), one integer field (`INT_FIELD`) and the value limits. */
export function valueSyntax(): SysctlPolicySyntax {
  syntax ??= native.sysctlPolicySyntax();
  return syntax;
}

/** Whole-value regex source for `count` whitespace-separated integer fields. */
export function integerFieldsSource(count: number): string {
  return native.sysctlPolicyIntegerFieldsSource(count);
}

/** Inclusive bounds of an integer field. */
export interface IntRange {
  /** Smallest allowed value; no lower bound when absent. */
  min?: number;
  /** Largest allowed value; no upper bound when absent. */
  max?: number;
}

/** Escapes a literal for a regex read the same by RE2 and JavaScript. */
export function regexLiteral(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}
