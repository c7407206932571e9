// `kubenode doctor`: what this node offers the subsystems. Each check reads the kernel's own
// files; a missing file is reported, never thrown.
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { DoctorCheck, DoctorReport, DoctorSection } from './doctor-types.js';
import { loadNative, nativePath } from './native.js';
import { sysctlSection } from './sysctl/doctor.js';
import { usernsPoolSection } from './userns/doctor.js';
import { DEFAULT_PODS_DIR, usernsReadinessChecks } from './userns/readiness.js';

export type { CheckStatus, DoctorCheck, DoctorReport, DoctorSection } from './doctor-types.js';

/** Reads a /proc file, trimmed; null when it does not exist or cannot be read. */
export async function readProc(path: string): Promise<string | null> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function platform(): Promise<DoctorSection> {
  const libc = process.report?.getReport
    ? (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
        ?.glibcVersionRuntime
    : undefined;
  return {
    section: 'platform',
    checks: [
      { name: 'kernel', status: 'ok', value: (await readProc('/proc/sys/kernel/osrelease')) ?? os.release() },
      { name: 'os', status: 'ok', value: `${process.platform}-${process.arch}` },
      { name: 'libc', status: 'ok', value: libc ? `glibc ${libc}` : 'musl or none' },
      { name: 'node', status: 'ok', value: process.version },
      { name: 'node-api', status: 'ok', value: process.versions.napi ?? null },
    ],
  };
}

/** Loads the binary (a file that resolves but does not load, e.g. for another libc, is missing too). */
function binding(): DoctorSection {
  try {
    loadNative();
    return { section: 'binding', checks: [{ name: 'prebuilt binary', status: 'ok', value: nativePath() }] };
  } catch (e) {
    return {
      section: 'binding',
      checks: [
        { name: 'prebuilt binary', status: 'missing', value: 'missing', detail: (e as Error).message },
      ],
    };
  }
}

async function userNamespaces(o: DoctorOptions): Promise<DoctorSection> {
  const max = await readProc('/proc/sys/user/max_user_namespaces');
  const n = max === null ? null : Number(max);
  const checks: DoctorCheck[] = [
    {
      name: 'max_user_namespaces',
      status: n === null ? 'missing' : n > 0 ? 'ok' : 'warn',
      value: n,
      detail: n === 0 ? 'user namespaces are disabled (sysctl user.max_user_namespaces=0)' : undefined,
    },
    ...(await usernsReadinessChecks(
      (await readProc('/proc/sys/kernel/osrelease')) ?? os.release(),
      o.podsDir ?? DEFAULT_PODS_DIR,
      o.criSocket === undefined ? undefined : { socket: o.criSocket, handler: o.runtimeHandler ?? '' },
    )),
  ];
  return { section: 'user namespaces', checks };
}

async function conntrack(): Promise<DoctorSection> {
  const count = await readProc('/proc/sys/net/netfilter/nf_conntrack_count');
  const max = await readProc('/proc/sys/net/netfilter/nf_conntrack_max');
  const available = count !== null;
  return {
    section: 'conntrack',
    checks: [
      {
        name: 'nf_conntrack',
        status: available ? 'ok' : 'missing',
        value: available,
        detail: available ? undefined : 'nf_conntrack is not loaded in this network namespace',
      },
      {
        name: 'nf_conntrack_count',
        status: available ? 'ok' : 'missing',
        value: count === null ? null : Number(count),
      },
      {
        name: 'nf_conntrack_max',
        status: max !== null ? 'ok' : 'missing',
        value: max === null ? null : Number(max),
      },
    ],
  };
}

/** Options of `collect`. */
export interface DoctorOptions {
  /** The kubelet's pods directory, whose filesystem is probed for idmapped mounts (default `/var/lib/kubelet/pods`). */
  podsDir?: string;
  /** A CRI socket: also ask the runtime whether `runtimeHandler` supports user namespaces. */
  criSocket?: string;
  /** The RuntimeClass handler to check (default `''`, the runtime's default handler). */
  runtimeHandler?: string;
}

/**
 * Checks what this node offers the subsystems (platform, binding, user namespaces, conntrack,
 * sysctls, the user-namespace ID pool). Never throws for a missing file or binary: reports it.
 */
export async function collect(options: DoctorOptions = {}): Promise<DoctorReport> {
  const sections = await Promise.all([
    platform(),
    Promise.resolve(binding()),
    userNamespaces(options),
    conntrack(),
    sysctlSection(),
    usernsPoolSection(),
  ]);
  return { sections };
}

/** Sections without which nothing in kubenode works: always required. */
export const ALWAYS_REQUIRED = ['binding'];

/**
 * The checks that make the node unusable: a `missing` check in the binding section or in one of
 * the `required` sections (a section that does not exist is itself reported).
 */
export function unusable(report: DoctorReport, required: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const name of new Set([...ALWAYS_REQUIRED, ...required])) {
    const s = report.sections.find((x) => x.section === name);
    if (!s) {
      out.push(`${name}: no such section`);
      continue;
    }
    for (const c of s.checks) if (c.status === 'missing') out.push(`${name}: ${c.name} is missing`);
  }
  return out;
}

/** The report as text, as `kubenode doctor` prints it: `!` marks warn, `-` marks missing. */
export function formatText(report: DoctorReport): string {
  const lines: string[] = [];
  for (const s of report.sections) {
    lines.push(`${s.section}:`);
    for (const c of s.checks) {
      const mark = c.status === 'ok' ? ' ' : c.status === 'warn' ? '!' : '-';
      const value = c.value === null ? 'n/a' : String(c.value);
      lines.push(`  ${mark} ${c.name}: ${value}${c.detail ? ` (${c.detail})` : ''}`);
    }
  }
  return lines.join('\n');
}
