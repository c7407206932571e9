// SecurityContext enforcement from the pod-level sysctl design:
//   Alternative 1 — a list of names or `*`-suffixed prefixes (`*` allows everything);
//   Alternative 2 — SysctlPolicy: per name or per-segment wildcard pattern, allowed `values`
//   or an integer `min`/`max` range.
// Names are compared in NormalizeName form so slash spellings match their dotted twins.
import { describe, KubenodeTypeError } from '../errors.js';
import { goQuote } from '../quote.js';
import { FORBIDDEN_REASON } from './allowlist.js';
import { normalizeName } from './names.js';
import { podSysctls, sysctlName, sysctlValue } from './pod.js';
import type { FieldError, PodLike, V1Sysctl } from './types.js';
import {
  canonicalValue,
  type IntRange,
  inRange,
  integerFields,
  MAX_VALUE_LENGTH,
  rangeDetail,
  tooLong,
} from './values.js';

const PATH = 'spec.securityContext.sysctls';

function forbidden(i: number, name: string): FieldError {
  const field = `${PATH}[${i}]`;
  const detail = `sysctl ${goQuote(name)} is not allowed`;
  return { type: 'FieldValueForbidden', field, detail, message: `${field}: Forbidden: ${detail}` };
}

/** At most one field error per sysctl of the pod, in order (none when it sets no sysctls). */
function fieldErrors(pod: PodLike, check: (s: V1Sysctl, i: number) => FieldError | null): FieldError[] {
  const { sysctls } = podSysctls(pod);
  if (sysctls === null) return [];
  const out: FieldError[] = [];
  sysctls.forEach((s, i) => {
    const err = check(s, i);
    if (err !== null) out.push(err);
  });
  return out;
}

function invalidValue(i: number, value: string, detail: string): FieldError {
  const field = `${PATH}[${i}].value`;
  return {
    type: 'FieldValueInvalid',
    field,
    badValue: value,
    detail,
    message: `${field}: Invalid value: ${goQuote(value)}: ${detail}`,
  };
}

/** Alternative 1: allowed names or prefixes ending in `*`; an empty list allows nothing. */
export class SysctlNamePolicy {
  readonly #all: boolean;
  readonly #exact = new Set<string>();
  readonly #prefixes: string[] = [];

  constructor(allowed: readonly string[]) {
    if (!Array.isArray(allowed))
      throw new KubenodeTypeError(`allowed must be an array, got ${describe(allowed)}`);
    let all = false;
    allowed.forEach((p, i) => {
      if (typeof p !== 'string' || p.length === 0) {
        throw new KubenodeTypeError(`allowed[${i}] must be a non-empty string, got ${describe(p)}`);
      }
      if (p === '*') all = true;
      else if (p.endsWith('*')) this.#prefixes.push(normalizeName(p.slice(0, -1)));
      else this.#exact.add(normalizeName(p));
    });
    this.#all = all;
  }

  /** The alpha PodSecurityPolicy annotation form: `kernel.shmmax,kernel.msgmax,fs.mqueue.*`. */
  static fromAnnotation(value: string): SysctlNamePolicy {
    if (typeof value !== 'string')
      throw new KubenodeTypeError(`annotation must be a string, got ${describe(value)}`);
    return new SysctlNamePolicy(value === '' ? [] : value.split(','));
  }

  /** True when the policy allows `name` (compared in `normalizeName` form). */
  allows(name: string): boolean {
    if (this.#all) return true;
    const n = normalizeName(name);
    return this.#exact.has(n) || this.#prefixes.some((p) => n.startsWith(p));
  }

  /** One Forbidden error per sysctl the policy does not allow. */
  validate(pod: PodLike): FieldError[] {
    return fieldErrors(pod, (s, i) => {
      const name = sysctlName(s, i);
      return this.allows(name) ? null : forbidden(i, name);
    });
  }

  /** Handler name in a `PodAdmitChain`. */
  readonly name = 'sysctl-policy';

  /** A `PodAdmitChain` handler: the first sysctl (spec order) the policy refuses rejects the pod. */
  admit(attrs: { pod: PodLike }): PolicyAdmitResult {
    const { sysctls } = podSysctls(attrs?.pod);
    for (let i = 0; sysctls !== null && i < sysctls.length; i++) {
      const name = sysctlName(sysctls[i], i);
      if (!this.allows(name)) return policyRejected(notAllowedMessage(name));
    }
    return { admit: true };
  }

  /** The compiled rule, for renderers: everything, or exact names and prefixes (normalised). */
  rules(): {
    /** True when the list holds `*`: every sysctl is allowed. */
    all: boolean;
    /** Allowed names. */
    exact: string[];
    /** Allowed prefixes, without the trailing `*`. */
    prefixes: string[];
  } {
    return { all: this.#all, exact: [...this.#exact], prefixes: [...this.#prefixes] };
  }
}

/** A policy's verdict on one pod, as a `PodAdmitChain` handler. */
export interface PolicyAdmitResult {
  /** False when a sysctl of the pod breaks the policy. */
  admit: boolean;
  /** `SysctlForbidden` on rejection. */
  reason?: string;
  /** Why the first offending sysctl was refused, on rejection. */
  message?: string;
}

function policyRejected(message: string): PolicyAdmitResult {
  return { admit: false, reason: FORBIDDEN_REASON, message };
}

/** Kubelet-style text (`forbidden sysctl: "x" not allowlisted`) for a name the policy refuses. */
export function notAllowedMessage(name: string): string {
  return `forbidden sysctl: ${goQuote(normalizeName(name))} not allowed by policy`;
}

/** Kubelet-style text for a value the policy refuses; `detail` says which rule. */
export function badValueMessage(name: string, detail: string): string {
  return `forbidden sysctl: ${goQuote(normalizeName(name))} not allowed by policy: value ${detail}`;
}

/** Alternative 2: one entry of a SysctlPolicy list. */
export interface SysctlPolicyEntry {
  /** Dot-separated segments, each `[a-z]+[a-z_-0-9]*` or `*` (wildcard for one segment). */
  name: string;
  /** Allowed values; compared with whitespace trimmed and inner runs collapsed to one space. */
  values?: string[];
  /** Smallest allowed integer value (inclusive). */
  min?: number;
  /** Largest allowed integer value (inclusive). */
  max?: number;
  /** Multi-value sysctls (`net.ipv4.ip_local_port_range`): one integer range per field. */
  fields?: IntRange[];
}

const SEGMENT = /^[a-z]+[a-z0-9_-]*$/;

/** A compiled entry: the rule renderers translate. Values are in canonical form. */
export interface CompiledEntry {
  /** The name pattern split at dots; `*` matches any one segment. */
  segments: string[];
  /** Allowed values, canonical form. */
  values?: Set<string>;
  /** Smallest allowed integer value (inclusive). */
  min?: number;
  /** Largest allowed integer value (inclusive). */
  max?: number;
  /** One integer range per field of a multi-value sysctl. */
  fields?: IntRange[];
}

/** Why a value breaks an entry's rule (the detail after `must`), or null when it complies. */
export function valueViolation(e: CompiledEntry, value: string): string | null {
  const ruled =
    e.values !== undefined || e.fields !== undefined || e.min !== undefined || e.max !== undefined;
  if (ruled && tooLong(value)) return `must be at most ${MAX_VALUE_LENGTH} characters`;
  if (e.values) {
    if (e.values.has(canonicalValue(value))) return null;
    return `must be one of ${[...e.values].map((v) => goQuote(v)).join(', ')}`;
  }
  if (e.fields) {
    const got = integerFields(value, e.fields.length);
    if (got === null) return `must be ${e.fields.length} integers separated by whitespace`;
    const k = got.findIndex((n, j) => !inRange(n, e.fields![j]!));
    return k < 0 ? null : `field ${k + 1} ${rangeDetail(e.fields[k]!)}`;
  }
  if (e.min === undefined && e.max === undefined) return null;
  const got = integerFields(value, 1);
  if (got === null) return 'must be an integer';
  return inRange(got[0]!, e) ? null : rangeDetail(e);
}

/** Alternative 2: name patterns with allowed values or integer bounds; first match decides. */
export class SysctlPolicy {
  readonly #entries: CompiledEntry[];

  constructor(entries: readonly SysctlPolicyEntry[]) {
    if (!Array.isArray(entries))
      throw new KubenodeTypeError(`entries must be an array, got ${describe(entries)}`);
    this.#entries = entries.map((e, i) => compile(e, i));
  }

  /**
   * The alpha annotation form:
   * `kernel.shmmax,kernel.msgmax=max:10:min:1,kernel.msgmni=values:1000 2000 3000`
   * (`values:` lists space-separated allowed values).
   */
  static fromAnnotation(value: string): SysctlPolicy {
    if (typeof value !== 'string')
      throw new KubenodeTypeError(`annotation must be a string, got ${describe(value)}`);
    if (value === '') return new SysctlPolicy([]);
    return new SysctlPolicy(
      value.split(',').map((item) => {
        const eq = item.indexOf('=');
        if (eq < 0) return { name: item };
        const entry: SysctlPolicyEntry = { name: item.slice(0, eq) };
        const spec = item.slice(eq + 1);
        if (spec.startsWith('values:')) {
          entry.values = spec
            .slice('values:'.length)
            .split(' ')
            .filter((v) => v !== '');
          return entry;
        }
        const parts = spec.split(':');
        if (parts.length % 2 !== 0)
          throw new KubenodeTypeError(`sysctl policy ${goQuote(item)}: expected key:value pairs`);
        for (let k = 0; k < parts.length; k += 2) {
          const key = parts[k]!;
          const num = Number(parts[k + 1]);
          if (!Number.isSafeInteger(num) || parts[k + 1]!.trim() === '') {
            throw new KubenodeTypeError(`sysctl policy ${goQuote(item)}: ${key} must be an integer`);
          }
          if (key === 'min') entry.min = num;
          else if (key === 'max') entry.max = num;
          else throw new KubenodeTypeError(`sysctl policy ${goQuote(item)}: unknown key ${goQuote(key)}`);
        }
        return entry;
      }),
    );
  }

  /** Handler name in a `PodAdmitChain`. */
  readonly name = 'sysctl-policy';

  /** The compiled entries in order (first match decides), for renderers. */
  rules(): readonly CompiledEntry[] {
    return this.#entries;
  }

  /** A `PodAdmitChain` handler: the first sysctl (spec order) the policy refuses rejects the pod. */
  admit(attrs: { pod: PodLike }): PolicyAdmitResult {
    const { sysctls } = podSysctls(attrs?.pod);
    for (let i = 0; sysctls !== null && i < sysctls.length; i++) {
      const name = sysctlName(sysctls[i], i);
      const e = this.#match(name);
      if (!e) return policyRejected(notAllowedMessage(name));
      const bad = valueViolation(e, sysctlValue(sysctls[i]!, i));
      if (bad !== null) return policyRejected(badValueMessage(name, bad));
    }
    return { admit: true };
  }

  #match(name: string): CompiledEntry | undefined {
    const segs = normalizeName(name).split('.');
    return this.#entries.find(
      (e) => e.segments.length === segs.length && e.segments.every((p, i) => p === '*' || p === segs[i]),
    );
  }

  /** Forbidden for names no entry matches; Invalid for values outside the entry's rule. */
  validate(pod: PodLike): FieldError[] {
    return fieldErrors(pod, (s, i) => {
      const name = sysctlName(s, i);
      const e = this.#match(name);
      if (!e) return forbidden(i, name);
      const value = sysctlValue(s, i);
      const bad = valueViolation(e, value);
      return bad === null ? null : invalidValue(i, value, bad);
    });
  }
}

function compile(e: SysctlPolicyEntry, i: number): CompiledEntry {
  if (typeof e !== 'object' || e === null) throw new KubenodeTypeError(`entries[${i}] must be an object`);
  if (typeof e.name !== 'string') throw new KubenodeTypeError(`entries[${i}].name must be a string`);
  const segments = e.name.split('.');
  for (const s of segments) {
    if (s !== '*' && !SEGMENT.test(s)) {
      throw new KubenodeTypeError(
        `entries[${i}].name ${goQuote(e.name)}: each segment must match [a-z]+[a-z_-0-9]* or be "*"`,
      );
    }
  }
  const hasRange = e.min !== undefined || e.max !== undefined;
  const rules = [e.values !== undefined, hasRange, e.fields !== undefined].filter(Boolean).length;
  if (rules > 1) {
    throw new KubenodeTypeError(`entries[${i}]: set either values or min/max or fields, not several`);
  }
  checkRange(e, `entries[${i}]`);
  const out: CompiledEntry = { segments };
  if (e.fields !== undefined) {
    if (!Array.isArray(e.fields) || e.fields.length === 0) {
      throw new KubenodeTypeError(`entries[${i}].fields must be a non-empty array of { min?, max? }`);
    }
    out.fields = e.fields.map((f, j) => {
      const at = `entries[${i}].fields[${j}]`;
      if (typeof f !== 'object' || f === null) throw new KubenodeTypeError(`${at} must be an object`);
      checkRange(f, at);
      return {
        ...(f.min !== undefined ? { min: f.min } : {}),
        ...(f.max !== undefined ? { max: f.max } : {}),
      };
    });
  }
  if (e.values !== undefined) {
    if (!Array.isArray(e.values) || e.values.some((v) => typeof v !== 'string')) {
      throw new KubenodeTypeError(`entries[${i}].values must be an array of strings`);
    }
    out.values = new Set(e.values.map(canonicalValue));
  }
  if (e.min !== undefined) out.min = e.min;
  if (e.max !== undefined) out.max = e.max;
  return out;
}

function checkRange(r: IntRange, at: string): void {
  for (const k of ['min', 'max'] as const) {
    if (r[k] !== undefined && !Number.isSafeInteger(r[k])) {
      throw new KubenodeTypeError(`${at}.${k} must be an integer, got ${describe(r[k])}`);
    }
  }
  if (r.min !== undefined && r.max !== undefined && r.min > r.max) {
    throw new KubenodeTypeError(`${at}: min ${r.min} is greater than max ${r.max}`);
  }
}
