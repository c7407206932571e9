// The kubelet's metrics for what kubenode replaces, scraped from a fresh registry: user
// namespaces allocated on a real pods directory (one start failing for want of a free range),
// and admit chains rejecting with the kubelet's reasons and others.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { admission, KubenodeTypeError, sysctl, userns } from '../ts/index.js';
import { podsDir } from './userns/dirs.js';

const L = 65536;
const managers: userns.UserNsManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
});

async function manager(opts: Partial<userns.UserNsManagerOptions> & { podsDir: string }) {
  const m = await userns.UserNsManager.create({
    mappings: { firstId: L, length: L * 2 },
    maxPods: 2,
    ...opts,
  });
  managers.push(m);
  return m;
}

const pod = (uid: string, hostUsers?: boolean) => ({ metadata: { uid }, spec: { hostUsers } });
const lines = (text: string, prefix: string) => text.split('\n').filter((l) => l.startsWith(prefix));

describe('kubelet_started_user_namespaced_pods_*', () => {
  it('counts every hostUsers:false start and the ones that fail', async () => {
    const registry = new Registry();
    const dir = podsDir();
    const m = await manager({ podsDir: dir, registry });
    await m.getOrCreateUserNamespaceMappings(pod('a', false));
    await m.getOrCreateUserNamespaceMappings(pod('b', true));
    await m.getOrCreateUserNamespaceMappings(pod('c'));
    const many = await m.getOrCreateUserNamespaceMappingsMany([
      pod('d', false),
      pod('e', false),
      pod('f', true),
    ]);
    expect(many.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // The pool holds two pods: a third finds no free range.
    await expect(m.getOrCreateUserNamespaceMappings(pod('g', false))).rejects.toThrow(userns.UsernsError);
    expect(existsSync(path.join(dir, 'a', 'userns'))).toBe(true);
    expect(existsSync(path.join(dir, 'g', 'userns'))).toBe(false);

    const text = await registry.metrics();
    expect(text).toContain(
      '# HELP kubelet_started_user_namespaced_pods_total [ALPHA] Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.\n' +
        '# TYPE kubelet_started_user_namespaced_pods_total counter\n' +
        'kubelet_started_user_namespaced_pods_total 4\n',
    );
    expect(text).toContain(
      '# HELP kubelet_started_user_namespaced_pods_errors_total [ALPHA] Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.\n' +
        '# TYPE kubelet_started_user_namespaced_pods_errors_total counter\n' +
        'kubelet_started_user_namespaced_pods_errors_total 2\n',
    );
  });

  it('counts a runtime handler without user namespaces as a failed start', async () => {
    const registry = new Registry();
    const m = await manager({
      podsDir: podsDir(),
      registry,
      runtimeHandlerSupportsUserns: (h) => h !== 'runc',
    });
    await m.getOrCreateUserNamespaceMappings(pod('a', false), 'kata');
    await expect(m.getOrCreateUserNamespaceMappings(pod('b', false), 'runc')).rejects.toThrow(
      'RuntimeClass handler "runc" does not support user namespaces',
    );
    const text = await registry.metrics();
    expect(lines(text, 'kubelet_started_user_namespaced_pods')).toEqual([
      'kubelet_started_user_namespaced_pods_total 2',
      'kubelet_started_user_namespaced_pods_errors_total 1',
    ]);
  });

  it('registers nothing while the feature gate is off, as the kubelet; two managers share one registry', async () => {
    const registry = new Registry();
    await manager({ podsDir: podsDir(), registry, featureGateEnabled: false });
    expect(await registry.metrics()).toBe('\n');
    const a = await manager({ podsDir: podsDir(), registry });
    const b = await manager({ podsDir: podsDir(), registry });
    await a.getOrCreateUserNamespaceMappings(pod('a', false));
    await b.getOrCreateUserNamespaceMappings(pod('a', false));
    expect(lines(await registry.metrics(), 'kubelet_started_user_namespaced_pods_total')).toEqual([
      'kubelet_started_user_namespaced_pods_total 2',
    ]);
  });

  it('refuses a registry that is not one', async () => {
    await expect(
      userns.UserNsManager.create({
        podsDir: podsDir(),
        registry: {} as Registry,
        featureGateEnabled: false,
      }),
    ).rejects.toThrow(KubenodeTypeError);
  });
});

describe('kubelet_admission_rejections_total and the admit chain latency', () => {
  const sysctlPod = (value: string) => ({
    spec: { securityContext: { sysctls: [{ name: 'net.core.somaxconn', value }] } },
  });
  const fixed = (reason: string): admission.PodAdmitHandler => ({
    name: `reject-${reason}`,
    admit: (a) =>
      a.pod.metadata?.name === reason ? { admit: false, reason, message: 'no' } : { admit: true },
  });

  it('counts rejections by the kubelet reason label and times every verdict', async () => {
    const registry = new Registry();
    const file = await sysctl.loadSysctlPolicyFile('examples/sysctl-policy.yaml');
    const chain = file.admitChain({ registry });
    expect((await chain.admit({ pod: sysctlPod('1024') })).admit).toBe(true);
    expect(await chain.admit({ pod: sysctlPod('8192') })).toMatchObject({
      admit: false,
      reason: 'SysctlForbidden',
    });
    expect((await chain.admit({ pod: sysctlPod('1') })).admit).toBe(false);

    const other = new admission.PodAdmitChain(
      [
        ...['OutOfcpu', 'OutOfnvidia.com/gpu', 'NodeAffinity', 'Evicted'].map(fixed),
        {
          name: 'broken',
          admit: (a) => {
            if (a.pod.metadata?.name === 'boom') throw new Error('boom');
            return { admit: true };
          },
        },
      ],
      { registry },
    );
    for (const name of ['OutOfcpu', 'OutOfnvidia.com/gpu', 'NodeAffinity', 'Evicted', 'boom', 'fine']) {
      await other.admit({ pod: { metadata: { name } } });
    }

    const text = await registry.metrics();
    expect(text).toContain(
      '# HELP kubelet_admission_rejections_total [ALPHA] Cumulative number pod admission rejections by the Kubelet.\n' +
        '# TYPE kubelet_admission_rejections_total counter\n',
    );
    expect(lines(text, 'kubelet_admission_rejections_total{').sort()).toEqual([
      'kubelet_admission_rejections_total{reason="Evicted"} 1',
      'kubelet_admission_rejections_total{reason="Other"} 1',
      'kubelet_admission_rejections_total{reason="OutOfExtendedResources"} 1',
      'kubelet_admission_rejections_total{reason="OutOfcpu"} 1',
      'kubelet_admission_rejections_total{reason="SysctlForbidden"} 2',
      'kubelet_admission_rejections_total{reason="UnexpectedAdmissionError"} 1',
    ]);
    expect(text).toContain('# TYPE kubenode_pod_admit_duration_seconds histogram\n');
    expect(lines(text, 'kubenode_pod_admit_duration_seconds_count').sort()).toEqual([
      'kubenode_pod_admit_duration_seconds_count{result="admitted"} 2',
      'kubenode_pod_admit_duration_seconds_count{result="rejected"} 7',
    ]);
    expect(lines(text, 'kubenode_pod_admit_duration_seconds_bucket{le="0.000001"').length).toBe(2);
    expect(text).toContain('kubenode_pod_admit_duration_seconds_bucket{le="+Inf",result="rejected"} 7\n');
  });

  it('records nothing without a registry, and refuses a registry that is not one', async () => {
    const chain = new admission.PodAdmitChain([fixed('x')]);
    expect((await chain.admit({ pod: { metadata: { name: 'x' } } })).admit).toBe(false);
    expect(() => new admission.PodAdmitChain([], { registry: 'r' as unknown as Registry })).toThrow(
      KubenodeTypeError,
    );
  });
});
