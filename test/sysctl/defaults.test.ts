// defaultPodSysctls (v1.37, alpha): the kubelet's configuration check and the per-pod merge into
// the sandbox sysctls, through the public API.
import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';

const gate = { DefaultPodSysctls: true };
const pod = (spec: Record<string, unknown> = {}, own: [string, string][] = []): sysctl.PodLike => ({
  spec: { ...spec, securityContext: { sysctls: own.map(([name, value]) => ({ name, value })) } },
});

describe('validateDefaultPodSysctls', () => {
  it('gives upstream messages for the gate, names, namespaces and duplicates', () => {
    const v = (defaultPodSysctls: Record<string, string>, featureGates?: Record<string, boolean>) =>
      sysctl.validateDefaultPodSysctls({ defaultPodSysctls, ...(featureGates ? { featureGates } : {}) });
    expect(v({ 'net.ipv4.ip_forward': '1' })).toEqual([
      'invalid configuration: DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls',
    ]);
    expect(v({ 'net.ipv4.ip_forward': '1' }, gate)).toEqual([]);
    expect(v({ 'Invalid.Sysctl': '1' }, gate)).toEqual([
      'invalid configuration: "Invalid.Sysctl" is not a valid sysctl name for defaultPodSysctls',
    ]);
    expect(v({ 'kernel.printk': '7' }, gate)).toEqual([
      'invalid configuration: "kernel.printk" is not known to be namespaced for defaultPodSysctls',
    ]);
    expect(v({ 'net.ipv4.ip_forward': '1', 'net/ipv4/ip_forward': '1' }, gate)).toEqual([
      'invalid configuration: duplicate sysctl "net.ipv4.ip_forward" found in defaultPodSysctls',
    ]);
    expect(sysctl.validateDefaultPodSysctls({})).toEqual([]);
  });

  it('a v1.36 kubelet ignores the field and does not know the gate', () => {
    const config = { defaultPodSysctls: { 'kernel.printk': '7' }, kubernetesVersion: 'v1.36' };
    expect(sysctl.validateDefaultPodSysctls(config)).toEqual([]);
    expect(sysctl.validateDefaultPodSysctls({ ...config, featureGates: gate })).toEqual([
      'unrecognized feature gate: DefaultPodSysctls',
    ]);
  });

  it('refuses bad shapes with typed errors', () => {
    const bad = [
      { defaultPodSysctls: { 'net.a': 1 } },
      { defaultPodSysctls: ['net.a'] },
      { featureGates: { DefaultPodSysctls: 'true' }, defaultPodSysctls: {} },
    ] as unknown as sysctl.KubeletSysctlConfig[];
    for (const c of bad) expect(() => sysctl.validateDefaultPodSysctls(c)).toThrow(TypeError);
  });
});

describe('sandboxSysctls', () => {
  const config: sysctl.KubeletSysctlConfig = {
    featureGates: gate,
    defaultPodSysctls: {
      'net.core.somaxconn': '1024',
      'kernel/sem': '250 32000 32 128',
      'kernel.domainname': 'example',
      'user.max_user_namespaces': '100',
    },
  };
  const names = (p: sysctl.PodLike, c = config) =>
    sysctl
      .sandboxSysctls(p, c)
      .map((s) => `${s.name}=${s.value}`)
      .sort();

  it('adds the defaults that apply to the pod; the pod’s own values win', () => {
    expect(names(pod())).toEqual([
      'kernel.domainname=example',
      'kernel.sem=250 32000 32 128',
      'net.core.somaxconn=1024',
    ]);
    expect(names(pod({ hostNetwork: true }))).toEqual(['kernel.sem=250 32000 32 128']);
    expect(names(pod({ hostIPC: true, hostUsers: false }))).toEqual([
      'kernel.domainname=example',
      'net.core.somaxconn=1024',
      'user.max_user_namespaces=100',
    ]);
    expect(names(pod({}, [['net/core/somaxconn', '64']]))).toEqual([
      'kernel.domainname=example',
      'kernel.sem=250 32000 32 128',
      'net/core/somaxconn=64',
    ]);
  });

  it('before v1.37, the pod’s own only (a v1.36 kubelet ignores the field)', () => {
    const own: [string, string][] = [['kernel.shmmni', '8192']];
    const { featureGates: _, ...noGate } = config;
    expect(names(pod({}, own), { ...noGate, kubernetesVersion: 'v1.36' })).toEqual(['kernel.shmmni=8192']);
  });

  it('refuses a configuration the kubelet would refuse', () => {
    expect(() => sysctl.sandboxSysctls(pod(), { ...config, featureGates: {} })).toThrow(
      'DefaultPodSysctls feature gate is required',
    );
    expect(() =>
      sysctl.sandboxSysctls(pod(), { ...config, defaultPodSysctls: { 'vm.swappiness': '1' } }),
    ).toThrow(sysctl.KubeletConfigError);
  });
});

describe('kubelet configuration files', () => {
  it('reads the sysctl settings of a KubeletConfiguration', () => {
    const c = sysctl.parseKubeletSysctlConfig(
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        'allowedUnsafeSysctls: ["net.core.*"]',
        'featureGates: {DefaultPodSysctls: true}',
        'defaultPodSysctls: {"net.core.somaxconn": "1024"}',
        'maxPods: 110',
      ].join('\n'),
    );
    expect(c).toEqual({
      allowedUnsafeSysctls: ['net.core.*'],
      featureGates: gate,
      defaultPodSysctls: { 'net.core.somaxconn': '1024' },
    });
    for (const bad of [
      'kind: Pod',
      'defaultPodSysctls: {"net.a": 1}',
      'featureGates: {A: "x"}',
      'a: [',
      '',
    ]) {
      expect(() => sysctl.parseKubeletSysctlConfig(bad)).toThrow(sysctl.KubeletConfigFileError);
    }
  });
});

describe('allowlists and namespaces by release', () => {
  it('a v1.36 kubelet refuses user.* and kernel.domainname; v1.37 accepts them', () => {
    for (const p of ['user.*', 'kernel.domainname']) {
      expect(() => sysctl.newAllowlist([p], { kubernetesVersion: 'v1.36' })).toThrow(
        /are not known to be namespaced/,
      );
      expect(() => sysctl.newAllowlist([p], { kubernetesVersion: 'v1.37' })).not.toThrow();
      expect(() => sysctl.newAllowlist([p])).not.toThrow();
    }
    expect(() =>
      sysctl.allowlistFromKubeletConfig({
        allowedUnsafeSysctls: 'user.*',
        kubernetesVersion: 'v1.36.3',
        kernelVersion: '6.1',
      }),
    ).toThrow('invalid --allowed-unsafe-sysctls: the sysctls "user." are not known to be namespaced');
    expect(sysctl.getNamespace('user.max_user_namespaces', { kubernetesVersion: 'v1.36' }).namespace).toBe(
      '',
    );
    expect(sysctl.getNamespace('user.max_user_namespaces').namespace).toBe('User');
    expect(() => sysctl.newAllowlist(['net.*'], { kubernetesVersion: 'v1.99' })).toThrow(/not supported/);
  });
});
