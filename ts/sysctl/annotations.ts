// The alpha annotations of the pod-level sysctl design (v1.4):
//   security.alpha.kubernetes.io/sysctls:        kernel.shm_rmid_forced=1
//   security.alpha.kubernetes.io/unsafe-sysctls: net.ipv4.route.min_pmtu=1000,kernel.msgmax=1 2 3
// Parsing follows upstream's SysctlsFromPodAnnotation; a safe sysctl may be listed as unsafe,
// an unsafe one must be.
import { describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { goQuote } from '../quote.js';
import { safeSysctlAllowlist } from './kernel.js';
import type { FieldError, PodLike } from './types.js';
import { validateSysctlNames } from './validation.js';

/** Annotation of the alpha design listing safe sysctls (`name=value,…`). */
export const SYSCTLS_ANNOTATION = 'security.alpha.kubernetes.io/sysctls';
/** Annotation of the alpha design listing unsafe sysctls (`name=value,…`). */
export const UNSAFE_SYSCTLS_ANNOTATION = 'security.alpha.kubernetes.io/unsafe-sysctls';

/** One sysctl setting. */
export interface Sysctl {
  /** Sysctl name, dotted or slash form. */
  name: string;
  /** Value as written to `/proc/sys`. */
  value: string;
}

/** An annotation item not of the form `name=value` (`ERR_KUBENODE_PARSE`, upstream's message). */
export class SysctlAnnotationError extends KubenodeError {
  constructor(message: string) {
    super('ERR_KUBENODE_PARSE', message);
    this.name = 'SysctlAnnotationError';
  }
}

/** `SysctlsFromPodAnnotation`: "" → []; each comma item must be exactly `name=value`. */
export function parseSysctlAnnotation(value: string): Sysctl[] {
  if (typeof value !== 'string')
    throw new KubenodeTypeError(`annotation must be a string, got ${describe(value)}`);
  if (value.length === 0) return [];
  return value.split(',').map((kv) => {
    const cs = kv.split('=');
    if (cs.length !== 2 || cs[0]!.length === 0) {
      throw new SysctlAnnotationError(`sysctl ${goQuote(kv)} not of the format sysctl_name=value`);
    }
    return { name: cs[0]!, value: cs[1]! };
  });
}

/** The inverse, for writing annotations back. */
export function formatSysctlAnnotation(sysctls: readonly Sysctl[]): string {
  return sysctls.map((s) => `${s.name}=${s.value}`).join(',');
}

/** Result of `sysctlsFromAnnotations`. */
export interface AnnotationConversion {
  /** Safe then unsafe, the `securityContext.sysctls` form. */
  sysctls: Sysctl[];
  /** Validation errors, upstream's field errors; empty when both annotations are valid. */
  errors: FieldError[];
}

function keyPath(key: string): string {
  return `metadata.annotations[${key}]`;
}

function invalid(field: string, badValue: string, detail: string): FieldError {
  return {
    type: 'FieldValueInvalid',
    field,
    badValue,
    detail,
    message: `${field}: Invalid value: ${goQuote(badValue)}: ${detail}`,
  };
}

/** Options of `sysctlsFromAnnotations`. */
export interface AnnotationOptions {
  /** Safe sysctls; default: the safe list of the running kernel. */
  safeSysctls?: readonly string[];
}

/**
 * Validates both annotations (syntax, names, "can not be safe and unsafe", unsafe sysctls under
 * the safe annotation) and converts them to the `securityContext.sysctls` form.
 */
export function sysctlsFromAnnotations(pod: PodLike, options: AnnotationOptions = {}): AnnotationConversion {
  const ann = pod?.metadata?.annotations ?? {};
  if (typeof ann !== 'object') {
    throw new KubenodeTypeError(`metadata.annotations must be an object, got ${describe(ann)}`);
  }
  const errors: FieldError[] = [];
  const read = (key: string): Sysctl[] => {
    const raw = ann[key];
    if (raw === undefined) return [];
    if (typeof raw !== 'string') {
      throw new KubenodeTypeError(`annotation ${key} must be a string, got ${describe(raw)}`);
    }
    try {
      const list = parseSysctlAnnotation(raw);
      errors.push(
        ...validateSysctlNames(
          list.map((s) => s.name),
          keyPath(key),
        ),
      );
      return list;
    } catch (e) {
      if (!(e instanceof SysctlAnnotationError)) throw e;
      errors.push(invalid(keyPath(key), raw, e.message));
      return [];
    }
  };
  const safe = read(SYSCTLS_ANNOTATION);
  const unsafe = read(UNSAFE_SYSCTLS_ANNOTATION);
  const unsafeNames = new Set(unsafe.map((s) => s.name));
  const inBoth = safe.filter((s) => unsafeNames.has(s.name)).map((s) => s.name);
  if (inBoth.length > 0) {
    errors.push(invalid(keyPath(UNSAFE_SYSCTLS_ANNOTATION), inBoth.join(', '), 'can not be safe and unsafe'));
  }
  const safeSet = new Set(options.safeSysctls ?? safeSysctlAllowlist());
  safe.forEach((s, i) => {
    if (s.name !== '' && !safeSet.has(s.name)) {
      errors.push(
        invalid(
          `${keyPath(SYSCTLS_ANNOTATION)}[${i}].name`,
          s.name,
          `not a safe sysctl; list it in ${UNSAFE_SYSCTLS_ANNOTATION}`,
        ),
      );
    }
  });
  return { sysctls: [...safe, ...unsafe], errors };
}
