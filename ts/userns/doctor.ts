// `kubenode doctor` section: the ID pool the kubelet would use on this node and how many pods
// it fits at the default idsPerPod and maxPods.
import type { DoctorCheck, DoctorSection } from '../doctor-types.js';
import { layout } from './files.js';
import { DEFAULT_IDS_PER_POD, DEFAULT_MAX_PODS } from './pool-options.js';
import { resolveKubeletMappings } from './subids.js';

export async function usernsPoolSection(): Promise<DoctorSection> {
  const checks: DoctorCheck[] = [];
  try {
    const pool = await resolveKubeletMappings({ idsPerPod: DEFAULT_IDS_PER_POD });
    const last = pool.firstId + pool.length - 1;
    const source =
      pool.source === 'getsubids' ? 'from getsubids kubelet' : 'default pool: no kubelet account';
    let fit: { slots: number; usableSlots: number } | Error;
    try {
      fit = layout(DEFAULT_IDS_PER_POD, pool.firstId, pool.length, DEFAULT_MAX_PODS);
    } catch (e) {
      fit = e as Error;
    }
    // A pool the manager refuses (e.g. one that passes 2^32) is not ok, whatever it holds.
    checks.push({
      name: 'kubelet ID pool',
      status: fit instanceof Error ? 'warn' : 'ok',
      value: `${pool.firstId}-${last} (${pool.length} IDs)`,
      detail: fit instanceof Error ? `${source}: ${fit.message}` : source,
    });
    if (fit instanceof Error) {
      checks.push({ name: 'pods that fit', status: 'warn', value: 0, detail: fit.message });
    } else {
      checks.push({
        name: 'pods that fit',
        status: 'ok',
        value: fit.usableSlots,
        detail: `${DEFAULT_IDS_PER_POD} IDs per pod, maxPods ${DEFAULT_MAX_PODS}`,
      });
      if (fit.usableSlots < fit.slots) {
        checks.push({
          name: 'last range',
          status: 'ok',
          value: `${last - DEFAULT_IDS_PER_POD + 1}-${last}`,
          detail:
            'reserved, never handed out: it includes ID 4294967295, which the kernel cannot map (upstream hands it out, kubernetes#139916)',
        });
      }
    }
  } catch (e) {
    checks.push({
      name: 'kubelet ID pool',
      status: 'warn',
      value: null,
      detail: `kubelet mappings: ${(e as Error).message}`,
    });
  }
  return { section: 'user namespace pool', checks };
}
