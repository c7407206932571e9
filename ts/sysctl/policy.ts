// SecurityContext enforcement from the pod-level sysctl design:
//   Alternative 1 — a list of names or `*`-suffixed prefixes (`*` allows everything);
//   Alternative 2 — SysctlPolicy: per name or per-segment wildcard pattern, allowed `values`
//   or an integer `min`/`max` range.
// The rules and their messages live in the native core (`kubenode-sysctl` policy.rs): a policy
// is compiled once, then each pod crosses once. This module checks the JS shape of the inputs.
import type {
  SysctlNamePolicyCore,
  SysctlPolicyCore,
  SysctlPolicyEntryInput,
  SysctlPolicyRange,
} from '../binding.js';
import { callNative, describe, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { FORBIDDEN_REASON } from './allowlist.js';
import { podSysctls, sysctlName, sysctlValue } from './pod.js';
import type { FieldError, PodLike, V1Sysctl } from './types.js';
import { fieldError } from './validation.js';
import type { IntRange } from './values.js';

/** A core compiled by a `fromAnnotation`, taken over by the constructor it calls next. */
let adopted: SysctlNamePolicyCore | SysctlPolicyCore | null = null;

/**
 * Compiles `items` natively after checking their JS shape. A malformed item is reported only
 * when the items before it compile, so errors come in list order as one pass would give them.
 */
function compileChecked<T, I>(
  items: readonly unknown[],
  shape: (item: unknown, i: number) => { input: I | null; error: KubenodeTypeError | null },
  compile: (inputs: I[]) => T,
): T {
  const inputs: I[] = [];
  for (let i = 0; i < items.length; i++) {
    const { input, error } = shape(items[i], i);
    if (input !== null) inputs.push(input);
    if (error !== null) {
      callNative(() => compile(inputs));
      throw error;
    }
  }
  return callNative(() => compile(inputs));
}

/** The names of `sysctls`, or the index of the first malformed one (with its error). */
function readNames(sysctls: readonly V1Sysctl[]): { names: string[]; bad: unknown } {
  const names: string[] = [];
  for (let i = 0; i < sysctls.length; i++) {
    try {
      names.push(sysctlName(sysctls[i], i));
    } catch (e) {
      return { names, bad: e };
    }
  }
  return { names, bad: null };
}

/** Takes the core a `fromAnnotation` left for this constructor call, when it is a `Core`. */
function adopt<C>(Core: abstract new (...args: never[]) => C): C | null {
  const core = adopted;
  if (!(core instanceof Core)) return null;
  adopted = null;
  return core;
}

function compileNamePolicy(allowed: unknown): SysctlNamePolicyCore {
  if (!Array.isArray(allowed))
    throw new KubenodeTypeError(`allowed must be an array, got ${describe(allowed)}`);
  return compileChecked(
    allowed,
    (p, i) =>
      typeof p === 'string'
        ? { input: p, error: null }
        : {
            input: null,
            error: new KubenodeTypeError(`allowed[${i}] must be a non-empty string, got ${describe(p)}`),
          },
    (list: string[]) => new native.SysctlNamePolicyCore(list),
  );
}

/** Alternative 1: allowed names or prefixes ending in `*`; an empty list allows nothing. */
export class SysctlNamePolicy {
  readonly #core: SysctlNamePolicyCore;

  constructor(allowed: readonly string[]) {
    this.#core = adopt(native.SysctlNamePolicyCore) ?? compileNamePolicy(allowed);
  }

  /** The alpha PodSecurityPolicy annotation form: `kernel.shmmax,kernel.msgmax,fs.mqueue.*`. */
  static fromAnnotation(value: string): SysctlNamePolicy {
    if (typeof value !== 'string')
      throw new KubenodeTypeError(`annotation must be a string, got ${describe(value)}`);
    adopted = callNative(() => native.SysctlNamePolicyCore.fromAnnotation(value));
    return new SysctlNamePolicy([]);
  }

  /** True when the policy allows `name` (compared in `normalizeName` form). */
  allows(name: string): boolean {
    if (typeof name === 'string') return this.#core.allows(name);
    // `*` allows without reading the name.
    if (this.#core.rules().all) return true;
    throw new KubenodeTypeError(`name must be a string, got ${describe(name)}`);
  }

  /** One Forbidden error per sysctl the policy does not allow. */
  validate(pod: PodLike): FieldError[] {
    const { sysctls } = podSysctls(pod);
    if (sysctls === null || sysctls.length === 0) return [];
    const { names, bad } = readNames(sysctls);
    if (bad !== null) throw bad;
    return this.#core.validate(names).map(fieldError);
  }

  /** Handler name in a `PodAdmitChain`. */
  readonly name = 'sysctl-policy';

  /** A `PodAdmitChain` handler: the first sysctl (spec order) the policy refuses rejects the pod. */
  admit(attrs: { pod: PodLike }): PolicyAdmitResult {
    const { sysctls } = podSysctls(attrs?.pod);
    if (sysctls === null || sysctls.length === 0) return { admit: true };
    const { names, bad } = readNames(sysctls);
    const message = names.length > 0 ? this.#core.admit(names) : null;
    if (message !== null && message !== undefined) return policyRejected(message);
    if (bad !== null) throw bad;
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
    const r = this.#core.rules();
    return { all: r.all, exact: r.exact, prefixes: r.prefixes };
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

/** Kubelet-style text (`forbidden sysctl: "x" not allowed by policy`) for a name the policy refuses. */
export function notAllowedMessage(name: string): string {
  return native.sysctlPolicyNotAllowedMessage(name);
}

/** Kubelet-style text for a value the policy refuses; `detail` says which rule. */
export function badValueMessage(name: string, detail: string): string {
  return native.sysctlPolicyBadValueMessage(name, detail);
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

/** The detail texts (after `value `) a violation of an entry's rule reports, for renderers. */
export interface CompiledEntryDetails {
  /** For a value over the length limit; absent for a name-only entry. */
  tooLong?: string;
  /** For a value outside `values`. */
  values?: string;
  /** For a value that is not one integer (`min`/`max`) or not one integer per field. */
  shape?: string;
  /** For an integer outside `min`/`max`. */
  range?: string;
  /** Per field, for a value outside its range; `''` for an unbounded field. */
  fields?: string[];
}

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
  /** What a violation of the rule reports. */
  details: CompiledEntryDetails;
}

const isInt = (v: unknown) => v === undefined || Number.isSafeInteger(v);

/** `r`'s bounds when both are integers (or absent), else the error for the first bad one. */
function shapeRange(r: IntRange, at: string): KubenodeTypeError | null {
  for (const k of ['min', 'max'] as const) {
    if (!isInt(r[k])) return new KubenodeTypeError(`${at}.${k} must be an integer, got ${describe(r[k])}`);
  }
  return null;
}

/**
 * The native input for entry `i` and the first JS-shape error in it. A malformed entry still
 * goes in (with the malformed parts replaced by neutral ones of the same presence) so that the
 * rules checked before that part in one pass (segment syntax, one rule kind, min ≤ max) report
 * first.
 */
function shapeEntry(
  e: unknown,
  at: string,
): { input: SysctlPolicyEntryInput | null; error: KubenodeTypeError | null } {
  if (typeof e !== 'object' || e === null)
    return { input: null, error: new KubenodeTypeError(`${at} must be an object`) };
  const entry = e as SysctlPolicyEntry;
  if (typeof entry.name !== 'string')
    return { input: null, error: new KubenodeTypeError(`${at}.name must be a string`) };
  const input: SysctlPolicyEntryInput = { name: entry.name };
  let error = shapeRange(entry, at);
  // Neutral bounds: present, and never greater than the other bound.
  if (entry.min !== undefined) input.min = isInt(entry.min) ? entry.min : -Number.MAX_SAFE_INTEGER;
  if (entry.max !== undefined) input.max = isInt(entry.max) ? entry.max : Number.MAX_SAFE_INTEGER;
  if (entry.fields !== undefined) {
    const fields: SysctlPolicyRange[] = [];
    if (!Array.isArray(entry.fields)) {
      error ??= new KubenodeTypeError(`${at}.fields must be a non-empty array of { min?, max? }`);
    } else {
      for (let j = 0; j < entry.fields.length && error === null; j++) {
        const f = entry.fields[j] as unknown;
        const where = `${at}.fields[${j}]`;
        if (typeof f !== 'object' || f === null) error = new KubenodeTypeError(`${where} must be an object`);
        else error = shapeRange(f, where);
        if (error === null) {
          const r = f as IntRange;
          fields.push({ min: r.min, max: r.max });
        }
      }
    }
    // A malformed list keeps one unbounded field, so it is not taken for an empty one.
    input.fields = error === null || fields.length > 0 ? fields : [{}];
  }
  if (entry.values !== undefined) {
    const ok = Array.isArray(entry.values) && entry.values.every((v) => typeof v === 'string');
    if (!ok) error ??= new KubenodeTypeError(`${at}.values must be an array of strings`);
    input.values = ok ? entry.values : [];
  }
  return { input, error };
}

function compiledEntry(r: ReturnType<SysctlPolicyCore['rules']>[number]): CompiledEntry {
  const d = r.details;
  const details: CompiledEntryDetails = {
    ...(d.tooLong != null ? { tooLong: d.tooLong } : {}),
    ...(d.values != null ? { values: d.values } : {}),
    ...(d.shape != null ? { shape: d.shape } : {}),
    ...(d.range != null ? { range: d.range } : {}),
    ...(d.fields != null ? { fields: d.fields } : {}),
  };
  return {
    segments: r.segments,
    ...(r.values != null ? { values: new Set(r.values) } : {}),
    ...(r.min != null ? { min: r.min } : {}),
    ...(r.max != null ? { max: r.max } : {}),
    ...(r.fields != null
      ? {
          fields: r.fields.map((f) => ({
            ...(f.min != null ? { min: f.min } : {}),
            ...(f.max != null ? { max: f.max } : {}),
          })),
        }
      : {}),
    details,
  };
}

function compilePolicy(entries: unknown, path: string): SysctlPolicyCore {
  if (!Array.isArray(entries))
    throw new KubenodeTypeError(`${path} must be an array, got ${describe(entries)}`);
  return compileChecked(
    entries,
    (e, i) => shapeEntry(e, `${path}[${i}]`),
    (list) => new native.SysctlPolicyCore(list, path),
  );
}

/** A SysctlPolicy whose errors name the list `path` (`spec.sysctls[0]…` for a policy file). */
export function sysctlPolicyAt(entries: readonly SysctlPolicyEntry[], path: string): SysctlPolicy {
  adopted = compilePolicy(entries, path);
  return new SysctlPolicy([]);
}

/** Alternative 2: name patterns with allowed values or integer bounds; first match decides. */
export class SysctlPolicy {
  readonly #core: SysctlPolicyCore;
  #rules: readonly CompiledEntry[] | undefined;

  constructor(entries: readonly SysctlPolicyEntry[]) {
    this.#core = adopt(native.SysctlPolicyCore) ?? compilePolicy(entries, 'entries');
  }

  /**
   * The alpha annotation form:
   * `kernel.shmmax,kernel.msgmax=max:10:min:1,kernel.msgmni=values:1000 2000 3000`
   * (`values:` lists space-separated allowed values).
   */
  static fromAnnotation(value: string): SysctlPolicy {
    if (typeof value !== 'string')
      throw new KubenodeTypeError(`annotation must be a string, got ${describe(value)}`);
    adopted = callNative(() => native.SysctlPolicyCore.fromAnnotation(value));
    return new SysctlPolicy([]);
  }

  /** Handler name in a `PodAdmitChain`. */
  readonly name = 'sysctl-policy';

  /** The compiled entries in order (first match decides), for renderers. */
  rules(): readonly CompiledEntry[] {
    this.#rules ??= Object.freeze(this.#core.rules().map(compiledEntry));
    return this.#rules;
  }

  /** A `PodAdmitChain` handler: the first sysctl (spec order) the policy refuses rejects the pod. */
  admit(attrs: { pod: PodLike }): PolicyAdmitResult {
    const { sysctls } = podSysctls(attrs?.pod);
    if (sysctls === null || sysctls.length === 0) return { admit: true };
    const names: string[] = [];
    const values: string[] = [];
    for (let i = 0; i < sysctls.length; i++) {
      const s = sysctls[i]!;
      let name: string | undefined;
      let value: string | undefined;
      let bad: unknown = null;
      try {
        name = sysctlName(s, i);
        value = sysctlValue(s, i);
      } catch (e) {
        bad = e;
      }
      if (name === undefined || value === undefined) return this.#malformed(names, values, name, bad);
      names.push(name);
      values.push(value);
    }
    const message = this.#core.admit(names, values);
    return message == null ? { admit: true } : policyRejected(message);
  }

  /**
   * A sysctl whose name or value is malformed: it matters only if every one before it is
   * admitted, and its value only if its name is (the order one pass over the list reads them).
   */
  #malformed(names: string[], values: string[], name: string | undefined, bad: unknown): PolicyAdmitResult {
    const message = names.length > 0 ? this.#core.admit(names, values) : null;
    if (message != null) return policyRejected(message);
    if (name !== undefined && !this.#core.matches(name)) return policyRejected(notAllowedMessage(name));
    throw bad;
  }

  /** Forbidden for names no entry matches; Invalid for values outside the entry's rule. */
  validate(pod: PodLike): FieldError[] {
    const { sysctls } = podSysctls(pod);
    if (sysctls === null || sysctls.length === 0) return [];
    const names: string[] = [];
    const values: string[] = [];
    sysctls.forEach((s, i) => {
      const name = sysctlName(s, i);
      let value: string;
      try {
        value = sysctlValue(s, i);
      } catch (e) {
        // The value of a name no entry matches is never read.
        if (this.#core.matches(name)) throw e;
        value = '';
      }
      names.push(name);
      values.push(value);
    });
    return this.#core.validate(names, values).map(fieldError);
  }
}
