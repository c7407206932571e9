// `kubenode admit` and `kubenode sysctl safe-list` as processes: exit codes 0 (admit), 1 (reject)
// and 2 (bad input or config), text and JSON output, and clear messages for malformed input.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
const dir = mkdtempSync(join(tmpdir(), 'kubenode-sysctl-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(tsx, [main, ...args], { input, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let n = 0;
function podFile(spec: string): string {
  const file = join(dir, `pod-${n++}.yaml`);
  writeFileSync(file, `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n${spec}`);
  return file;
}

const sysctls = (...names: string[]) =>
  `  securityContext:\n    sysctls:\n${names.map((s) => `    - name: ${s}\n      value: "1"\n`).join('')}`;

describe('kubenode admit', () => {
  it('exits 0 and prints ADMIT for a pod with safe sysctls', () => {
    const r = run([
      'admit',
      podFile(sysctls('kernel.shm_rmid_forced', 'net/ipv4/tcp_syncookies')),
      '--kernel',
      '6.18',
    ]);
    expect(r).toMatchObject({ code: 0, stdout: 'ADMIT\n' });
  });

  it('exits 1 with upstream reason and message for an unsafe sysctl, text and JSON', () => {
    const file = podFile(sysctls('kernel.shm_rmid_forced', 'net.core.somaxconn'));
    const text = run(['admit', file, '--kernel', '6.18']);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe(
      'REJECT SysctlForbidden: forbidden sysctl: "net.core.somaxconn" not allowlisted\n',
    );
    const json = run(['admit', file, '--kernel', '6.18', '-o', 'json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted',
    });
    const allowed = run([
      'admit',
      file,
      '--kernel',
      '6.18',
      '--allowed-unsafe-sysctls',
      'net.core.*',
      '-o',
      'json',
    ]);
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({ admit: true });
  });

  it('applies the host-namespace check and reads the pod from stdin', () => {
    const yaml = `kind: Pod\nspec:\n  hostNetwork: true\n${sysctls('net.ipv4.tcp_syncookies')}`;
    const r = run(['admit', '-', '--kernel', '6.18'], yaml);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(
      'REJECT SysctlForbidden: forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled\n',
    );
  });

  it('exits 2 with a clear message for malformed YAML, a non-Pod or a missing file', () => {
    const bad = run(['admit', '-'], 'spec: [\n');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^kubenode: -: malformed YAML: /);
    expect(bad.stdout).toBe('');

    const deploy = run(['admit', '-'], 'kind: Deployment\nspec: {}\n');
    expect(deploy.code).toBe(2);
    expect(deploy.stderr).toBe('kubenode: -: kind is "Deployment", want Pod\n');

    const missing = run(['admit', join(dir, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^kubenode: cannot read .*nope\.yaml: /);
  });

  it('exits 2 with upstream text for an allowlist entry the kubelet would refuse', () => {
    const r = run(['admit', podFile(sysctls('kernel.sem')), '--allowed-unsafe-sysctls', 'net.-']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('sysctl "net.-" must have at most 253 characters and match regex');
  });
});

it('a malformed pod is bad input: exit 2 with the typed message, nothing on stdout', () => {
  const cases: Array<[string, string]> = [
    ['kind: Pod\nspec:\n  hostNetwork: "yes"\n', 'spec.hostNetwork must be a boolean, got "yes"'],
    ['kind: Pod\nspec: []\n', 'pod.spec must be an object, got array'],
    ['kind: Pod\nspec:\n  securityContext: [1]\n', 'spec.securityContext must be an object, got array'],
    [
      'kind: Pod\nspec:\n  securityContext:\n    sysctls:\n    - name: kernel.sem\n    - name: [a]\n',
      'spec.securityContext.sysctls[1].name must be a string, got array',
    ],
  ];
  for (const [pod, message] of cases) {
    const r = run(['admit', '-', '--kernel', '6.18'], pod);
    expect(r.code, pod).toBe(2);
    expect(r.stdout, pod).toBe('');
    expect(r.stderr, pod).toBe(`kubenode: -: ${message}\n`);
  }
});

describe('kubenode sysctl safe-list', () => {
  it('prints the kernel-gated safe list, text and JSON', () => {
    for (const kernel of ['4.4', '6.18']) {
      const want = sysctl.safeSysctlList(kernel).names;
      const r = run(['sysctl', 'safe-list', '--kernel', kernel]);
      expect(r.code).toBe(0);
      expect(r.stdout.trimEnd().split('\n')).toEqual(want);
      const j = JSON.parse(run(['sysctl', 'safe-list', '--kernel', kernel, '-o', 'json']).stdout);
      expect(j.names).toEqual(want);
      expect(j.kernel).toBe(kernel);
    }
    // Gated rows differ between the two kernels, so the version really is applied.
    expect(sysctl.safeSysctlList('4.4').names).not.toEqual(sysctl.safeSysctlList('6.18').names);
  });

  it('exits 2 for an unparsable kernel version', () => {
    const r = run(['sysctl', 'safe-list', '--kernel', 'x.y']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('kubenode: --kernel: could not parse "x.y" as version\n');
  });
});

describe('--kubernetes-version', () => {
  it('admit: a v1.36 kubelet rejects net.ipv4.tcp_notsent_lowat, v1.37 (the default) admits it', () => {
    const file = podFile(sysctls('net.ipv4.tcp_notsent_lowat'));
    expect(run(['admit', file, '--kernel', '6.18', '--kubernetes-version', 'v1.37'])).toMatchObject({
      code: 0,
      stdout: 'ADMIT\n',
    });
    expect(run(['admit', file, '--kernel', '6.18'])).toMatchObject({ code: 0, stdout: 'ADMIT\n' });
    expect(run(['admit', file, '--kernel', '6.18', '--kubernetes-version', 'v1.36'])).toMatchObject({
      code: 1,
      stdout: 'REJECT SysctlForbidden: forbidden sysctl: "net.ipv4.tcp_notsent_lowat" not allowlisted\n',
    });
    const bad = run(['admit', file, '--kernel', '6.18', '--kubernetes-version', 'v1.99']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/Kubernetes version "v1.99" is not supported/);
  });

  it('safe-list: both releases, text and JSON; exit 2 for an unknown one', () => {
    const v136 = run(['sysctl', 'safe-list', '--kernel', '6.18', '--kubernetes-version', 'v1.36']);
    expect(v136.code).toBe(0);
    expect(v136.stdout.trimEnd().split('\n')).toEqual(
      sysctl.safeSysctlAllowlist('6.18', { kubernetesVersion: 'v1.36' }),
    );
    expect(v136.stdout).not.toMatch(/tcp_slow_start_after_idle|tcp_notsent_lowat/);
    const j = JSON.parse(run(['sysctl', 'safe-list', '--kernel', '6.18', '-o', 'json']).stdout);
    expect(j.kubernetesVersion).toBe('v1.37');
    expect(j.names).toContain('net.ipv4.tcp_slow_start_after_idle');
    const bad = run(['sysctl', 'safe-list', '--kubernetes-version', 'v2.0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'kubenode: --kubernetes-version: Kubernetes version "v2.0" is not a v1 release\n',
    );
  });
});

function configFile(lines: string[]): string {
  const file = join(dir, `kubelet-${n++}.yaml`);
  writeFileSync(
    file,
    ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', ...lines, ''].join('\n'),
  );
  return file;
}

describe('host user namespace and defaultPodSysctls', () => {
  it('admit: a user.* sysctl needs hostUsers: false (v1.37); a v1.36 kubelet refuses the pattern', () => {
    const host = podFile(sysctls('user.max_user_namespaces'));
    const own = podFile(`  hostUsers: false\n${sysctls('user.max_user_namespaces')}`);
    const flags = ['--kernel', '6.1', '--allowed-unsafe-sysctls', 'user.*'];
    expect(run(['admit', host, ...flags])).toMatchObject({
      code: 1,
      stdout:
        'REJECT SysctlForbidden: forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled\n',
    });
    expect(run(['admit', own, ...flags])).toMatchObject({ code: 0, stdout: 'ADMIT\n' });
    const v136 = run(['admit', own, ...flags, '--kubernetes-version', 'v1.36']);
    expect(v136.code).toBe(2);
    expect(v136.stderr).toContain('the sysctls "user." are not known to be namespaced');
  });

  it('admit --kubelet-config: unsafe sysctls from the file, sandbox sysctls of an admitted pod', () => {
    const config = configFile([
      'allowedUnsafeSysctls: ["net.core.*"]',
      'featureGates: {DefaultPodSysctls: true}',
      'defaultPodSysctls: {"net.core.somaxconn": "1024", "kernel/sem": "250 32000 32 128"}',
    ]);
    const p = podFile(`  hostIPC: true\n${sysctls('net.core.rmem_max')}`);
    const text = run(['admit', p, '--kernel', '6.1', '--kubelet-config', config]);
    expect(text).toMatchObject({
      code: 0,
      stdout: 'ADMIT\nsandbox sysctl net.core.somaxconn=1024\nsandbox sysctl net.core.rmem_max=1\n',
    });
    const json = run(['admit', p, '--kernel', '6.1', '--kubelet-config', config, '-o', 'json']);
    expect(JSON.parse(json.stdout)).toEqual({
      admit: true,
      sandboxSysctls: [
        { name: 'net.core.somaxconn', value: '1024' },
        { name: 'net.core.rmem_max', value: '1' },
      ],
    });
    // The flag overrides the file's list.
    const r = run([
      'admit',
      p,
      '--kernel',
      '6.1',
      '--kubelet-config',
      config,
      '--allowed-unsafe-sysctls',
      '',
    ]);
    expect(r.code).toBe(1);
  });

  it('admit --kubelet-config: a configuration the kubelet refuses exits 2 with its messages', () => {
    const p = podFile(sysctls('kernel.shm_rmid_forced'));
    for (const [lines, message] of [
      [
        ['defaultPodSysctls: {"net.ipv4.ip_forward": "1"}'],
        'invalid configuration: DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls',
      ],
      [
        ['featureGates: {DefaultPodSysctls: true}', 'defaultPodSysctls: {"kernel.printk": "7"}'],
        'invalid configuration: "kernel.printk" is not known to be namespaced for defaultPodSysctls',
      ],
      [['defaultPodSysctls: {"net.ipv4.ip_forward": 1}'], 'must be a string'],
      [['kind: Pod'], 'malformed YAML: Map keys must be unique'],
    ] as const) {
      const r = run(['admit', p, '--kernel', '6.1', '--kubelet-config', configFile([...lines])]);
      expect(r.code, message).toBe(2);
      expect(r.stderr).toContain(message);
    }
    expect(run(['admit', p, '--kubelet-config', join(dir, 'missing.yaml')]).code).toBe(2);
    const pod = join(dir, 'not-kubelet.yaml');
    writeFileSync(pod, 'apiVersion: v1\nkind: Pod\n');
    const r = run(['admit', p, '--kubelet-config', pod]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('kind is "Pod", want KubeletConfiguration');
  });

  it('sysctl policy check-defaults: exit 0 inside, 1 with the offending names outside, 2 for bad input', () => {
    const policy = join(dir, `policy-${n++}.yaml`);
    writeFileSync(
      policy,
      [
        'apiVersion: kubenode.io/v1alpha1',
        'kind: SysctlPolicy',
        'metadata: {name: web}',
        'spec:',
        '  sysctls:',
        '  - {name: net.core.somaxconn, min: 128, max: 4096}',
        '  - {name: kernel.sem}',
        '',
      ].join('\n'),
    );
    const gate = 'featureGates: {DefaultPodSysctls: true}';
    const inside = configFile([
      gate,
      'defaultPodSysctls: {"net.core.somaxconn": "1024", "kernel/sem": "1 2 3 4"}',
    ]);
    expect(
      run(['sysctl', 'policy', 'check-defaults', '--policy', policy, '--kubelet-config', inside]),
    ).toMatchObject({ code: 0, stdout: 'INSIDE\n' });
    const outside = configFile([
      gate,
      'defaultPodSysctls: {"net.core.somaxconn": "65535", "kernel.sem": "1", "kernel.shmmni": "8192"}',
    ]);
    const r = run(['sysctl', 'policy', 'check-defaults', '--policy', policy, '--kubelet-config', outside]);
    expect(r.code).toBe(1);
    expect(
      r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(':')[0]),
    ).toEqual(['OUTSIDE net.core.somaxconn=65535', 'OUTSIDE kernel.shmmni=8192']);
    const json = run([
      'sysctl',
      'policy',
      'check-defaults',
      '--policy',
      policy,
      '--kubelet-config',
      outside,
      '-o',
      'json',
    ]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      inside: false,
      outside: [
        { name: 'net.core.somaxconn', value: '65535' },
        { name: 'kernel.shmmni', value: '8192' },
      ],
    });
    // A v1.36 kubelet does not know the gate: the configuration is one it refuses.
    const v136 = run([
      'sysctl',
      'policy',
      'check-defaults',
      '--policy',
      policy,
      '--kubelet-config',
      inside,
      '--kubernetes-version',
      'v1.36',
    ]);
    expect(v136.code).toBe(2);
    expect(v136.stderr).toContain('unrecognized feature gate: DefaultPodSysctls');
    const invalid = configFile(['defaultPodSysctls: {"vm.x": "1"}']);
    expect(
      run(['sysctl', 'policy', 'check-defaults', '--policy', policy, '--kubelet-config', invalid]).code,
    ).toBe(2);
  });
});
