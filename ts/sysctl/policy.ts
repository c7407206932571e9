// SecurityContext enforcement from the pod-level sysctl design:
//   Alternative 1 — a list of names or `*`-suffixed prefixes (`*` allows everything);
//   Alternative 2 — SysctlPolicy: per name or per-segment wildcard pattern, allowed `values`
//   or an integer `min`/`max` range.
// Names are compared in NormalizeName form so slash spellings match their dotted twins.
import { describe, KubenodeTypeError } from '../errors.js';
import { normalizeName } from './names.js';
import { podSysctls, sysctlName, sysctlValue } from './pod.js';
import { goQuote } from './quote.js';
import type { FieldError, PodLike } from './types.js';

const PATH = 'spec.securityContext.sysctls';

function forbidden(i: number, name: string): FieldError {
  const field = `${PATH}[${i}]`;
  const detail = `sysctl ${goQuote(name)} is not allowed`;
  return { type: 'FieldValueForbidden', field, detail, message: `${field}: Forbidden: ${detail}` };
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

  allows(name: string): boolean {
    if (this.#all) return true;
    const n = normalizeName(name);
    return this.#exact.has(n) || this.#prefixes.some((p) => n.startsWith(p));
  }

  /** One Forbidden error per sysctl the policy does not allow. */
  validate(pod: PodLike): FieldError[] {
    const { sysctls } = podSysctls(pod);
    if (sysctls === null) return [];
    const out: FieldError[] = [];
    sysctls.forEach((s, i) => {
      const name = sysctlName(s, i);
      if (!this.allows(name)) out.push(forbidden(i, name));
    });
    return out;
  }
}

/** Alternative 2: one entry of a SysctlPolicy list. */
export interface SysctlPolicyEntry {
  /** Dot-separated segments, each `[a-z]+[a-z_-0-9]*` or `*` (wildcard for one segment). */
  name: string;
  values?: string[];
  min?: number;
  max?: number;
}

const SEGMENT = /^[a-z]+[a-z0-9_-]*$/;

function canonicalValue(v: string): string {
  return v.trim().split(/\s+/).join(' ');
}

interface CompiledEntry {
  segments: string[];
  values?: Set<string>;
  min?: number;
  max?: number;
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

  #match(name: string): CompiledEntry | undefined {
    const segs = normalizeName(name).split('.');
    return this.#entries.find(
      (e) => e.segments.length === segs.length && e.segments.every((p, i) => p === '*' || p === segs[i]),
    );
  }

  /** Forbidden for names no entry matches; Invalid for values outside the entry's rule. */
  validate(pod: PodLike): FieldError[] {
    const { sysctls } = podSysctls(pod);
    if (sysctls === null) return [];
    const out: FieldError[] = [];
    sysctls.forEach((s, i) => {
      const name = sysctlName(s, i);
      const e = this.#match(name);
      if (!e) {
        out.push(forbidden(i, name));
        return;
      }
      const value = sysctlValue(s, i);
      if (e.values) {
        if (!e.values.has(canonicalValue(value))) {
          out.push(
            invalidValue(i, value, `must be one of ${[...e.values].map((v) => goQuote(v)).join(', ')}`),
          );
        }
        return;
      }
      if (e.min === undefined && e.max === undefined) return;
      const t = value.trim();
      const n = /^-?[0-9]+$/.test(t) ? Number(t) : Number.NaN;
      if (!Number.isSafeInteger(n)) {
        out.push(invalidValue(i, value, 'must be an integer'));
      } else if ((e.min !== undefined && n < e.min) || (e.max !== undefined && n > e.max)) {
        const range =
          e.min !== undefined && e.max !== undefined
            ? `must be between ${e.min} and ${e.max}`
            : e.min !== undefined
              ? `must be at least ${e.min}`
              : `must be at most ${e.max}`;
        out.push(invalidValue(i, value, range));
      }
    });
    return out;
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
  if (e.values !== undefined && hasRange) {
    throw new KubenodeTypeError(`entries[${i}]: set either values or min/max, not both`);
  }
  for (const k of ['min', 'max'] as const) {
    if (e[k] !== undefined && !Number.isSafeInteger(e[k])) {
      throw new KubenodeTypeError(`entries[${i}].${k} must be an integer, got ${describe(e[k])}`);
    }
  }
  if (e.min !== undefined && e.max !== undefined && e.min > e.max) {
    throw new KubenodeTypeError(`entries[${i}]: min ${e.min} is greater than max ${e.max}`);
  }
  const out: CompiledEntry = { segments };
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
