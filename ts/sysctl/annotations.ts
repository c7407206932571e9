// The alpha annotations of the pod-level sysctl design (v1.4):
//   security.alpha.kubernetes.io/sysctls:        kernel.shm_rmid_forced=1
//   security.alpha.kubernetes.io/unsafe-sysctls: net.ipv4.route.min_pmtu=1000,kernel.msgmax=1 2 3
// Parsing follows upstream's SysctlsFromPodAnnotation; a safe sysctl may be listed as unsafe,
// an unsafe one must be. The rules and messages are the native core's (`annotations.rs`).
import type { SysctlSafeSet } from '../binding.js';
import { describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { safeSysctlAllowlist } from './kernel.js';
import type { FieldError, PodLike } from './types.js';
import { fieldError } from './validation.js';

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
  const r = native.sysctlParseAnnotation(value);
  if (r.error != null) throw new SysctlAnnotationError(r.error);
  return r.sysctls;
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
  const read = (key: string): string | null => {
    const raw = ann[key];
    if (raw === undefined) return null;
    if (typeof raw !== 'string') {
      throw new KubenodeTypeError(`annotation ${key} must be a string, got ${describe(raw)}`);
    }
    return raw;
  };
  const safe = read(SYSCTLS_ANNOTATION);
  const unsafe = read(UNSAFE_SYSCTLS_ANNOTATION);
  const r = safeSet(options.safeSysctls ?? safeSysctlAllowlist()).convertAnnotations(safe, unsafe);
  return { sysctls: r.sysctls, errors: r.errors.map(fieldError) };
}

/** The last safe list converted, reused while callers pass the same names. */
let lastSafe: { list: readonly string[]; set: SysctlSafeSet } | undefined;

function safeSet(list: readonly string[]): SysctlSafeSet {
  const last = lastSafe;
  if (last !== undefined && last.list.length === list.length && last.list.every((n, i) => n === list[i])) {
    return last.set;
  }
  const copy = [...list];
  // Names are strings; anything else in the list could never match one.
  lastSafe = { list: copy, set: new native.SysctlSafeSet(copy.filter((n) => typeof n === 'string')) };
  return lastSafe.set;
}
