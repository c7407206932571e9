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
