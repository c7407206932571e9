// The conntrack sysctls kube-proxy sets at start-up (pkg/proxy/conntrack/sysctls.go, v1.37 or
// v1.36): same order, same skip rules, first error stops the sequence. The rule that changed
// between the releases (when nf_conntrack_max is written) is the core's.
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { callNative, describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { conntrackKubernetesVersion } from './release.js';

/** kube-proxy's `conntrack` configuration (`KubeProxyConntrackConfiguration`). */
export interface ConntrackConfig {
  /** `--conntrack-max-per-core` (default 32768); 0 or null leaves nf_conntrack_max alone. */
  maxPerCore?: number | null;
  /** `--conntrack-min` (default 131072). */
  min?: number | null;
  /** Seconds or a Go duration (`"24h"`, `"1h0m0s"`); default 24h. */
  tcpEstablishedTimeout?: number | string | null;
  /** Default 1h. */
  tcpCloseWaitTimeout?: number | string | null;
  /** `--conntrack-tcp-be-liberal`: true sets `nf_conntrack_tcp_be_liberal` to 1 (default false). */
  tcpBeLiberal?: boolean;
  /** 0 leaves the sysctl alone (the default). */
  udpTimeout?: number | string | null;
  /** `nf_conntrack_udp_timeout_stream`, seconds or a Go duration; 0 leaves it alone (the default). */
  udpStreamTimeout?: number | string | null;
}

/** kube-proxy's defaults for `ConntrackConfig`. */
export const DEFAULT_CONNTRACK_CONFIG: Readonly<Required<ConntrackConfig>> = {
  maxPerCore: 32768,
  min: 131072,
  tcpEstablishedTimeout: 86400,
  tcpCloseWaitTimeout: 3600,
  tcpBeLiberal: false,
  udpTimeout: 0,
  udpStreamTimeout: 0,
};

/** Upstream caps the scaled value to avoid excessive memory on high-core machines. */
export const CONNTRACK_MAX_LIMIT = 1048576;

function int32(what: string, v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
    throw new KubenodeTypeError(`${what} must be a 32-bit integer, got ${describe(v)}`);
  }
  return v;
}

const UNIT: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/** Seconds (fractional) of a duration given in seconds or Go's duration syntax. */
export function durationSeconds(what: string, v: number | string | null | undefined): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new KubenodeTypeError(`${what} must be a finite number of seconds`);
    return v;
  }
  if (typeof v !== 'string') throw new KubenodeTypeError(`${what} must be seconds or a duration string`);
  const m = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/.exec(v);
  if (v === '0') return 0;
  if (!m) throw new KubenodeTypeError(`${what}: invalid duration ${JSON.stringify(v)}`);
  let total = 0;
  for (const part of v.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(part[1]) * (UNIT[part[2] ?? 's'] ?? 1);
  }
  return m[1] === '-' ? -total : total;
}

/** `getConntrackMax`: 0 means "leave the system value". */
export function conntrackMax(config: ConntrackConfig, numCPU: number): number {
  const perCore = int32('maxPerCore', config.maxPerCore);
  if (perCore !== null && perCore > 0) {
    const floor = int32('min', config.min) ?? 0;
    const scaled = perCore * numCPU;
    if (scaled > CONNTRACK_MAX_LIMIT) return CONNTRACK_MAX_LIMIT;
    return Math.max(scaled, floor);
  }
  return 0;
}

/**
 * `DetectNumCPU`: the node's online CPUs (`/sys/devices/system/cpu/online`), since
 * nf_conntrack_max is host-wide and the process may be pinned to fewer; else the schedulable
 * count.
 */
export async function detectNumCPU(root = '/'): Promise<number> {
  try {
    const online = (await readFile(`${root}sys/devices/system/cpu/online`, 'utf8')).trim();
    let n = 0;
    for (const r of online.split(',')) {
      const [a, b] = r.split('-').map(Number);
      if (a === undefined || Number.isNaN(a)) throw new Error('bad cpu list');
      n += b === undefined ? 1 : b - a + 1;
    }
    if (n >= 1) return n;
  } catch {
    // fall through, as upstream falls back to runtime.NumCPU()
  }
  return os.availableParallelism();
}

/** One sysctl `applyConntrackSysctls` set or would set. */
export interface SysctlAction {
  /** The `/proc/sys/net/netfilter/…` file (under `root`). */
  path: string;
  /** The value wanted. */
  value: number;
  /** Value read before (null when unreadable, which leads to a write, as upstream). */
  previous: number | null;
  /**
   * False when the value already matched, when v1.37 leaves a higher nf_conntrack_max as it is,
   * or in a dry run.
   */
  written: boolean;
}

/**
 * A conntrack sysctl that could not be read or written; `ERR_KUBENODE_PERMISSION` on
 * EACCES/EPERM, else `ERR_KUBENODE_IO`.
 */
export class ConntrackSysctlError extends KubenodeError {
  /** The file that failed. */
  readonly path: string;
  constructor(path: string, cause: unknown) {
    const c = cause as NodeJS.ErrnoException;
    super(
      c?.code === 'EACCES' || c?.code === 'EPERM' ? 'ERR_KUBENODE_PERMISSION' : 'ERR_KUBENODE_IO',
      `could not set conntrack parameters: ${path}: ${c?.message ?? String(cause)}`,
      { cause },
    );
    this.name = 'ConntrackSysctlError';
    this.path = path;
  }
}

/** Options of `applyConntrackSysctls`. */
export interface ApplyOptions {
  /** Read and report, write nothing (default false). */
  dryRun?: boolean;
  /** CPU count; default detectNumCPU(). */
  numCPU?: number;
  /** Filesystem root holding proc/ and sys/ (tests); default '/'. */
  root?: string;
  /**
   * Kubernetes release whose kube-proxy to follow (`v1.36`, `v1.37`; default: the newest
   * kubenode knows, v1.37). v1.37 only raises nf_conntrack_max, never lowering a value an
   * operator set higher; v1.36 wrote any other value.
   */
  kubernetesVersion?: string;
}

async function readInt(path: string): Promise<number> {
  const s = (await readFile(path, 'utf8')).trim();
  if (!/^[-+]?\d+$/.test(s)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(s)}: invalid syntax`);
  return Number(s);
}

/**
 * kube-proxy's `SetSysctls` of `options.kubernetesVersion`: nf_conntrack_max (and hashsize when
 * below max/4; v1.37 only raises the max), TCP
 * established and close-wait timeouts, tcp_be_liberal (only ever set to 1), UDP timeouts.
 * Each sysctl is written only when it differs. The first error stops the sequence and is
 * thrown as a ConntrackSysctlError.
 */
export async function applyConntrackSysctls(
  config: ConntrackConfig,
  options: ApplyOptions = {},
): Promise<SysctlAction[]> {
  const k8s = conntrackKubernetesVersion(options.kubernetesVersion);
  const root = options.root ?? '/';
  const dry = options.dryRun ?? false;
  const actions: SysctlAction[] = [];
  const numCPU = options.numCPU ?? (await detectNumCPU(root));
  const max = conntrackMax(config, numCPU);
  const established = durationSeconds('tcpEstablishedTimeout', config.tcpEstablishedTimeout);
  const closeWait = durationSeconds('tcpCloseWaitTimeout', config.tcpCloseWaitTimeout);
  const udp = durationSeconds('udpTimeout', config.udpTimeout);
  const udpStream = durationSeconds('udpStreamTimeout', config.udpStreamTimeout);

  // `writes` decides from the value read; by default, any other value is written.
  const setSysctl = async (
    name: string,
    value: number,
    writes = (previous: number | null) => previous !== value,
  ) => {
    const path = `${root}proc/sys/net/netfilter/${name}`;
    let previous: number | null = null;
    try {
      previous = await readInt(path);
    } catch {
      previous = null; // a read error is ignored and leads to a write
    }
    const write = writes(previous);
    if (write && !dry) {
      try {
        await writeFile(path, String(value));
      } catch (e) {
        throw new ConntrackSysctlError(path, e);
      }
    }
    actions.push({ path, value, previous, written: write && !dry });
  };

  if (max > 0) {
    await setSysctl('nf_conntrack_max', max, (previous) =>
      callNative(() => native.conntrackMaxWrites(k8s, previous, max)),
    );
    const hs = `${root}sys/module/nf_conntrack/parameters/hashsize`;
    let hashsize: number;
    try {
      hashsize = await readInt(hs);
    } catch (e) {
      throw new ConntrackSysctlError(hs, e);
    }
    const want = Math.trunc(max / 4);
    if (hashsize < want) {
      if (!dry) {
        try {
          await writeFile(hs, String(want), { mode: 0o640 });
        } catch (e) {
          throw new ConntrackSysctlError(hs, e);
        }
      }
      actions.push({ path: hs, value: want, previous: hashsize, written: !dry });
    }
  }
  // Upstream tests Duration > 0, then writes whole seconds (so 500ms writes 0).
  if (established !== null && established > 0)
    await setSysctl('nf_conntrack_tcp_timeout_established', Math.trunc(established));
  if (closeWait !== null && closeWait > 0)
    await setSysctl('nf_conntrack_tcp_timeout_close_wait', Math.trunc(closeWait));
  if (config.tcpBeLiberal === true) await setSysctl('nf_conntrack_tcp_be_liberal', 1);
  if (udp !== null && udp > 0) await setSysctl('nf_conntrack_udp_timeout', Math.trunc(udp));
  if (udpStream !== null && udpStream > 0)
    await setSysctl('nf_conntrack_udp_timeout_stream', Math.trunc(udpStream));
  return actions;
}
