// What a node needs before pods may run with `hostUsers: false`, beyond the ID pool: a kernel
// new enough for idmapped tmpfs, and idmapped-mount support on the filesystems holding pod
// data. The probes run in Rust, off the JS thread, on detached mounts (no mount-table change).
import type { IdmapProbe } from '../binding.js';
import type { DoctorCheck } from '../doctor-types.js';
import { assertString, awaitNative, callNative, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { runtimeHandlers } from './cri.js';

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
export function kernelCheck(release: string): {
  /** The oldest release that has what pods with `hostUsers: false` need. */
  min: string;
  /** Whether `release` is that release or newer. */
  ok: boolean;
} {
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

/**
 * The kubelet's verdict on a handler (`HandlerSupportsUserNamespaces` and the message its
 * admission of a `hostUsers: false` pod gives), from the handlers the runtime reported.
 */
async function handlerCheck(socket: string, handler: string): Promise<DoctorCheck> {
  const name = `runtime handler ${JSON.stringify(handler)}`;
  let handlers: { name: string; userNamespaces: boolean }[];
  try {
    handlers = await runtimeHandlers(socket);
  } catch (e) {
    return { name, status: 'warn', value: null, detail: (e as Error).message };
  }
  const h = handlers.find((x) => x.name === handler);
  if (!h) {
    return {
      name,
      status: 'missing',
      value: 'unknown',
      detail: `the handler ${JSON.stringify(handler)} is not known`,
    };
  }
  if (h.userNamespaces) return { name, status: 'ok', value: 'supports user namespaces' };
  const why =
    handler === ''
      ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
      : `can't set \`spec.hostUsers: false\`, RuntimeClass handler ${JSON.stringify(handler)} does not support user namespaces`;
  return { name, status: 'missing', value: 'no user namespaces', detail: why };
}

/** Where the runtime listens and which handler pods use, for the handler check. */
export interface CriOptions {
  /** The CRI socket (`unix:///run/containerd/containerd.sock` or a path). */
  socket: string;
  /** The RuntimeClass handler (`''`: the default handler). */
  handler?: string;
}

/**
 * The doctor's checks: kernel release, idmapped tmpfs, idmapped mounts on the pods directory,
 * and, given a CRI socket, whether the runtime handler supports user namespaces.
 */
export async function usernsReadinessChecks(
  release: string,
  podsDir = DEFAULT_PODS_DIR,
  cri?: CriOptions,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const handler = cri ? handlerCheck(cri.socket, cri.handler ?? '') : undefined;
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
    if (handler) checks.push(await handler);
    return checks;
  }
  const [tmpfs, pods] = probes;
  if (tmpfs) checks.push(idmapCheck(tmpfs, 'idmap mounts on tmpfs'));
  if (pods) checks.push(idmapCheck(pods, `idmap mounts on ${podsDir}`));
  if (handler) checks.push(await handler);
  return checks;
}
