// `kubenode doctor` section: the safe list for this kernel and the probe summary.
import type { DoctorCheck, DoctorSection } from '../doctor-types.js';
import { probe } from './apply.js';
import { safeSysctlList } from './kernel.js';

export async function sysctlSection(): Promise<DoctorSection> {
  const checks: DoctorCheck[] = [];
  try {
    const safe = safeSysctlList();
    checks.push({
      name: 'safe sysctls',
      status: safe.kernelError ? 'warn' : 'ok',
      value: safe.names.length,
      detail: safe.kernelError ?? `kernel ${safe.kernel}`,
    });
  } catch (e) {
    checks.push({ name: 'safe sysctls', status: 'missing', value: null, detail: (e as Error).message });
  }
  try {
    const { summary, results } = await probe();
    const leaked = results.filter((r) => r.outcome === 'leaked').map((r) => r.name);
    checks.push({
      name: 'namespace probe',
      status: leaked.length > 0 || summary.error > 0 ? 'warn' : 'ok',
      value: `${summary.isolated} isolated, ${summary.leaked} leaked, ${summary.absent} absent, ${summary.unchangeable} unchangeable, ${summary.error} errors`,
      detail: leaked.length > 0 ? `not namespaced here: ${leaked.join(', ')}` : undefined,
    });
  } catch (e) {
    checks.push({ name: 'namespace probe', status: 'missing', value: null, detail: (e as Error).message });
  }
  return { section: 'sysctl', checks };
}
