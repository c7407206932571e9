// Applying sysctls inside a pod's namespaces, and probing which sysctls really are namespaced
// on this kernel. Both run on dedicated native threads off the JS thread.
import type { SysctlProbeStatus } from '../binding.js';
import {
  assertNumber,
  assertString,
  awaitNative,
  describe,
  fromNative,
  KubenodeError,
  KubenodeTypeError,
  outcomeValue,
} from '../errors.js';
import { native } from '../native.js';
import type { SysctlNamespace } from './types.js';

/**
 * Where `applySysctls` writes: a running process (`/proc/<pid>/ns/*`) or namespace paths
 * (e.g. a bind-mounted netns), never both.
 */
export type ApplyTarget =
  | {
      /** Process whose net/IPC/UTS namespaces to enter (1 to 2^32-1). */
      pid: number;
    }
  | {
      /** Network namespace file, needed for `net.*` sysctls. */
      netnsPath?: string;
      /** IPC namespace file, needed for `kernel.shm*`, `kernel.msg*`, `kernel.sem`, `fs.mqueue.*`. */
      ipcnsPath?: string;
      /** UTS namespace file, needed for `kernel.domainname`. */
      utsnsPath?: string;
    };

/** One sysctl as `applySysctls` set it. */
export interface AppliedSysctl {
  /** Normalised name. */
  name: string;
  /** The `/proc/sys/…` file written. */
  path: string;
  /** Value before, as the kernel printed it. */
  previous: string;
  /** Value after, read back from the kernel. */
  value: string;
}

function linuxOnly(what: string): void {
  if (process.platform !== 'linux') {
    throw new KubenodeError('ERR_KUBENODE_UNSUPPORTED', `${what} needs Linux namespaces`);
  }
}

/**
 * Writes `sysctls` into the target's net/IPC/UTS namespaces (root). Names outside those
 * namespaces, and targets that share the caller's namespaces, are refused before anything is
 * written; if one write fails, the earlier ones are rolled back.
 */
export async function applySysctls(
  target: ApplyTarget,
  sysctls:
    | ReadonlyArray<{ name: string; value: string | number }>
    | Readonly<Record<string, string | number>>,
): Promise<AppliedSysctl[]> {
  linuxOnly('applySysctls');
  if (typeof target !== 'object' || target === null) {
    throw new KubenodeTypeError(
      `target must be { pid } or { netnsPath, ipcnsPath, utsnsPath }, got ${describe(target)}`,
    );
  }
  // Only the JS shape is checked here; which combinations make a target is the core's rule.
  const given = target as { pid?: unknown; netnsPath?: unknown; ipcnsPath?: unknown; utsnsPath?: unknown };
  const t: { pid?: number; netnsPath?: string; ipcnsPath?: string; utsnsPath?: string } = {};
  if (given.pid !== undefined) t.pid = assertNumber('pid', given.pid);
  for (const k of ['netnsPath', 'ipcnsPath', 'utsnsPath'] as const) {
    if (given[k] !== undefined) t[k] = assertString(k, given[k]);
  }
  const list = Array.isArray(sysctls)
    ? sysctls
    : Object.entries(sysctls as Record<string, string | number>).map(([name, value]) => ({ name, value }));
  const pairs = list.map((s, i) => {
    if (typeof s !== 'object' || s === null) throw new KubenodeTypeError(`sysctls[${i}] must be an object`);
    const name = assertString(`sysctls[${i}].name`, s.name);
    const v = s.value;
    if (typeof v === 'number' && Number.isFinite(v)) return { name, value: String(v) };
    return { name, value: assertString(`sysctls[${i}].value`, v) };
  });
  let outcome: Awaited<ReturnType<typeof native.sysctlApply>>;
  try {
    outcome = await awaitNative(native.sysctlApply(t, pairs));
  } catch (e) {
    throw fromNative(e);
  }
  return outcomeValue(outcome);
}

/**
 * What `probe` found for one sysctl: `isolated` (changed in the new namespace, host unchanged),
 * `leaked` (the host value moved too; it was restored), `absent` (not present in the new
 * namespaces), `unchangeable` (no candidate value was accepted, or the value is not numeric),
 * `not-namespaced` (outside net/IPC/UTS: neither read nor written), `error` (read or write failed).
 */
export type ProbeOutcome = `${SysctlProbeStatus}`;

/** The outcome of probing one sysctl. */
export interface ProbeResult {
  /** The sysctl probed. */
  name: string;
  /** Namespace the name tables assign it to (`''` when none). */
  namespace: SysctlNamespace;
  /** What the probe found. */
  outcome: ProbeOutcome;
  /** Host value before the probe, when it was read. */
  hostValue?: string;
  /** Value written in the throwaway namespace, as read back there. */
  probeValue?: string;
  /** Why the outcome is `unchangeable`, `leaked` or `error`. */
  detail?: string;
}

/** Result of `probe`. */
export interface ProbeReport {
  /** One result per probed name, in input order. */
  results: ProbeResult[];
  /** Number of results per outcome (every outcome present, zeros included). */
  summary: Record<ProbeOutcome, number>;
}

/** Sysctls probed by default: safe list, the namespace tables, every fs.mqueue.* file. */
export function defaultProbeNames(): string[] {
  return native.sysctlProbeDefaultNames();
}

/**
 * For each sysctl: change it in throwaway net/IPC/UTS namespaces and check that the host value
 * did not move (restoring it if it did). Names outside the net/IPC/UTS tables are reported as
 * `not-namespaced` and never touched; an invalid name rejects the whole call before anything is
 * written (`ERR_KUBENODE_INVALID_ARG`). Needs root.
 */
export async function probe(names?: readonly string[]): Promise<ProbeReport> {
  linuxOnly('probe');
  if (names !== undefined) {
    if (!Array.isArray(names)) throw new KubenodeTypeError(`names must be an array, got ${describe(names)}`);
    names.forEach((n, i) => {
      assertString(`names[${i}]`, n);
    });
  }
  const outcome = outcomeValue(await awaitNative(native.sysctlProbe(names ? [...names] : undefined)));
  const summary: Record<ProbeOutcome, number> = {
    isolated: 0,
    leaked: 0,
    absent: 0,
    unchangeable: 0,
    'not-namespaced': 0,
    error: 0,
  };
  const results = outcome.map((r) => {
    const o: ProbeOutcome = r.outcome;
    summary[o]++;
    const out: ProbeResult = { name: r.name, namespace: r.namespace, outcome: o };
    if (r.hostValue != null) out.hostValue = r.hostValue;
    if (r.probeValue != null) out.probeValue = r.probeValue;
    if (r.detail != null) out.detail = r.detail;
    return out;
  });
  return { results, summary };
}
