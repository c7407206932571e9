// What a node needs before pods may run with `hostUsers: false`, beyond the ID pool: a kernel
// new enough for idmapped tmpfs, and idmapped-mount support on the filesystems holding pod
// data. The probes run in Rust, off the JS thread, on detached mounts (no mount-table change).
import type { IdmapProbe } from '../binding.js';
import type { DoctorCheck } from '../doctor-types.js';
import { assertString, awaitNative, callNative, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';

export type { IdmapProbe };

/** The kubelet's default pods directory. */
export const DEFAULT_PODS_DIR = '/var/lib/kubelet/pods';

/**
 * Probes idmapped-mount support on a scratch tmpfs (`tmpfs`, default true) and on the
 * filesystem of each directory in `paths`. Never rejects for a probe that cannot run: its
 * entry says why (`cannot-probe`). Needs root.
 */
export async function probeIdmapMounts(paths: readonly string[], tmpfs = true): Promise<IdmapProbe[]> {
  if (!Array.isArray(paths)) throw new KubenodeTypeError('paths must be an array of strings');
  for (const p of paths) assertString('path', p);
  return awaitNative(native.usernsProbeIdmap(tmpfs === true, [...paths]));
}

/** Whether kernel `release` is new enough for pods with user namespaces, and the minimum. */
export function kernelCheck(release: string): { min: string; ok: boolean } {
  assertString('release', release);
  return callNative(() => native.usernsKernelCheck(release));
}

function idmapCheck(p: IdmapProbe, name: string): DoctorCheck {
  const fs = p.fsType ? ` (${p.fsType})` : '';
  if (p.status === 'supported') return { name, status: 'ok', value: `supported${fs}` };
  // A filesystem that refuses leaves such pods without their volumes: as good as absent.
  return {
    name,
    status: p.status === 'unsupported' ? 'missing' : 'warn',
    value: `${p.status}${fs}`,
    detail: p.detail,
  };
}

/** The doctor's checks: kernel release, idmapped tmpfs, idmapped mounts on the pods directory. */
export async function usernsReadinessChecks(
  release: string,
  podsDir = DEFAULT_PODS_DIR,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  try {
    const k = kernelCheck(release);
    checks.push({
      name: 'kernel for hostUsers: false',
      status: k.ok ? 'ok' : 'warn',
      value: release,
      detail: k.ok
        ? `>= ${k.min}`
        : `Linux ${k.min} or newer is needed for idmapped tmpfs (projected volumes)`,
    });
  } catch (e) {
    checks.push({
      name: 'kernel for hostUsers: false',
      status: 'warn',
      value: release,
      detail: (e as Error).message,
    });
  }
  let probes: IdmapProbe[];
  try {
    probes = await probeIdmapMounts([podsDir]);
  } catch (e) {
    // No binding: the binding section says why; the probe is only not run.
    checks.push({ name: 'idmap mounts', status: 'warn', value: null, detail: (e as Error).message });
    return checks;
  }
  const [tmpfs, pods] = probes;
  if (tmpfs) checks.push(idmapCheck(tmpfs, 'idmap mounts on tmpfs'));
  if (pods) checks.push(idmapCheck(pods, `idmap mounts on ${podsDir}`));
  return checks;
}
