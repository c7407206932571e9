import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';

const NAME_RE = new RegExp(`^${sysctl.SYSCTL_CONTAIN_SLASH_FMT}$`);
const PATTERN_RE = new RegExp(`^${sysctl.SYSCTL_CONTAIN_SLASH_PATTERN_FMT}$`);
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('isValidSysctlName', () => {
  it('follows upstream TestIsValidSysctlName', () => {
    for (const bad of [
      '',
      '*',
      'ä',
      'Abc',
      'a_',
      'a.',
      'a/',
      '_a',
      '.a',
      '/a',
      '-a',
      'a*b',
      'a..b',
      'a'.repeat(256),
    ]) {
      expect(sysctl.isValidSysctlName(bad), bad).toBe(false);
    }
    for (const good of [
      'a/b/c/d',
      'a/b.c',
      'kernel.shm_rmid_forced',
      'net.ipv4.conf.enp3s0/200.forwarding',
    ]) {
      expect(sysctl.isValidSysctlName(good), good).toBe(true);
    }
  });

  it('limits length in bytes: 253 ok, 254 not', () => {
    expect(sysctl.isValidSysctlName('a'.repeat(253))).toBe(true);
    expect(sysctl.isValidSysctlName('a'.repeat(254))).toBe(false);
    expect(sysctl.isValidSysctlName(`${'a.'.repeat(126)}a`)).toBe(true);
  });

  it('rejects non-strings with a typed error', () => {
    expect(() => sysctl.isValidSysctlName(42 as unknown as string)).toThrow(/name must be a string, got 42/);
    expect(() => sysctl.isValidSysctlName(null as unknown as string)).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_INVALID_ARG' }),
    );
  });

  it('handles a 10 MB name', () => {
    const big = 'a'.repeat(10 * 1024 * 1024);
    expect(sysctl.isValidSysctlName(big)).toBe(false);
    expect(sysctl.isValidSysctlPattern(big)).toBe(false);
    expect(sysctl.normalizeName(`a/${big}`).length).toBe(big.length + 2);
  });
});

describe('isValidSysctlPattern', () => {
  it('follows upstream TestIsValidSysctlPattern', () => {
    const valid = [
      'a',
      'a.b',
      'a_b',
      'a-b',
      'abc',
      'abc.def',
      'a/b/c/d',
      'a/b.c',
      '*',
      '*',
      'a*',
      'a.*',
      'a.b*',
      'a_*',
      'a-*',
      'a.b_*',
      'a/b/*',
      'a.b/c*',
    ];
    const invalid = [
      '',
      'ä',
      'a_',
      '_',
      '__',
      '_a',
      '_a._b',
      '-',
      '.',
      'a.',
      '.a',
      'a.b.',
      'a*.b',
      'a*b',
      '*a',
      'Abc',
      'a/',
      '/a',
      'a*/b',
      '**',
      'a'.repeat(256),
    ];
    for (const p of valid) expect(sysctl.isValidSysctlPattern(p), p).toBe(true);
    for (const p of invalid) expect(sysctl.isValidSysctlPattern(p), p).toBe(false);
  });
});

describe('agreement with the upstream regexes (fast-check)', () => {
  const segment = fc.stringMatching(/^[a-z0-9][-_a-z0-9]{0,5}[a-z0-9_*-]?$/);
  const sep = fc.constantFrom('.', '/', '..', '*', '', 'ä', 'A', ' ', '\0');
  const sysctlish = fc
    .array(fc.tuple(segment, sep), { minLength: 1, maxLength: 8 })
    .map((parts) => parts.map(([s, p], i) => (i + 1 < parts.length ? s + p : s)).join(''));
  const nearLimit = fc
    .integer({ min: 240, max: 260 })
    .map((n) => `${'a.'.repeat(Math.floor(n / 2))}${n % 2 ? 'b' : ''}`);
  const arb = fc.oneof(
    sysctlish,
    fc.string({ unit: fc.constantFrom(...'az09-_./*A'.split('')), maxLength: 20 }),
    fc.string({ maxLength: 12 }),
    nearLimit,
  );

  it('agrees on 1,000,000 names and 1,000,000 patterns', () => {
    let n = 0;
    fc.assert(
      fc.property(arb, (s) => {
        n++;
        expect(sysctl.isValidSysctlName(s)).toBe(bytes(s) <= 253 && NAME_RE.test(s));
        expect(sysctl.isValidSysctlPattern(s)).toBe(bytes(s) <= 253 && PATTERN_RE.test(s));
      }),
      { numRuns: 1_000_000 },
    );
    expect(n).toBe(1_000_000);
  }, 300_000);
});

describe('normalizeName', () => {
  it('swaps only when the first separator is a slash', () => {
    expect(sysctl.normalizeName('')).toBe('');
    expect(sysctl.normalizeName('kernel/shm_rmid_forced')).toBe('kernel.shm_rmid_forced');
    expect(sysctl.normalizeName('net.ipv4.conf.eno2/100.rp_filter')).toBe('net.ipv4.conf.eno2/100.rp_filter');
    expect(sysctl.normalizeName('net/ipv4/conf/eno2.100/rp_filter')).toBe('net.ipv4.conf.eno2/100.rp_filter');
    expect(sysctl.normalizeName('net.ipv4/conf')).toBe('net.ipv4/conf');
    expect(sysctl.normalizeName('kernel')).toBe('kernel');
    expect(sysctl.normalizeName('ä/ö.ü')).toBe('ä.ö/ü');
  });
});

describe('getNamespace', () => {
  it.each([
    ['net.*', 'Net', 'net.', true],
    ['net*', '', 'net', true],
    ['*', '', '', true],
    ['fs.mqueue.*', 'IPC', 'fs.mqueue.', true],
    ['fs.mqueue*', '', 'fs.mqueue', true],
    ['kernel.shm*', 'IPC', 'kernel.shm', true],
    ['kernel.msg*', 'IPC', 'kernel.msg', true],
    ['kernel.shm_rmid*', '', 'kernel.shm_rmid', true],
    ['kernel.*', '', 'kernel.', true],
    ['kernel.shmfoo', '', 'kernel.shmfoo', false],
    ['kernel.msgfoo', '', 'kernel.msgfoo', false],
    ['kernel.hostname', '', 'kernel.hostname', false],
    ['vm.*', '', 'vm.', true],
    ['fs.inotify.*', '', 'fs.inotify.', true],
    ['kernel.domainname', 'UTS', 'kernel.domainname', false],
    ['user.max_user_namespaces', 'User', 'user.max_user_namespaces', false],
    ['kernel/sem', 'IPC', 'kernel.sem', false],
    ['net.ipv6.neigh.*', 'Net', 'net.ipv6.neigh.', true],
    ['net/ipv4/conf/eno2.100/*', 'Net', 'net.ipv4.conf.eno2/100.', true],
  ])('%s', (input, namespace, name, prefixed) => {
    expect(sysctl.getNamespace(input)).toEqual({ namespace, name, prefixed });
  });
});

describe('safe list by kernel', () => {
  const count = (k?: string) => sysctl.safeSysctlAllowlist(k).length;
  it('matches spec §5.4', () => {
    expect(count('3.10')).toBe(5);
    expect(count('3.18.0-957.27.2.el7.x86_64')).toBe(6);
    expect(count('4.4')).toBe(6);
    expect(sysctl.safeSysctlAllowlist('4.5')).toEqual([
      'kernel.shm_rmid_forced',
      'net.ipv4.ip_local_port_range',
      'net.ipv4.tcp_syncookies',
      'net.ipv4.ping_group_range',
      'net.ipv4.ip_unprivileged_port_start',
      'net.ipv4.ip_local_reserved_ports',
      'net.ipv4.tcp_keepalive_time',
      'net.ipv4.tcp_keepalive_intvl',
      'net.ipv4.tcp_keepalive_probes',
    ]);
    expect(sysctl.safeSysctlAllowlist('4.6').at(-1)).toBe('net.ipv4.tcp_notsent_lowat');
    expect(count('4.14')).toBe(11);
    expect(count('4.15')).toBe(14);
    expect(count('5.15.0-75-generic')).toBe(14);
    expect(sysctl.safeSysctlTable().map((r) => r.minKernel ?? null)).toEqual([
      null,
      null,
      null,
      null,
      null,
      '3.16',
      '4.5',
      '4.6',
      '4.5',
      '4.5',
      '4.15',
      '4.15',
      '4.15',
      '4.6',
    ]);
  });

  it('takes the Kubernetes release: v1.36 lacks the two rows v1.37 added (kubernetes#138389)', () => {
    const v137 = sysctl.safeSysctlAllowlist('6.1', { kubernetesVersion: 'v1.37' });
    const v136 = sysctl.safeSysctlAllowlist('6.1', { kubernetesVersion: 'v1.36' });
    expect(v137).toHaveLength(14);
    expect(v136).toEqual(
      v137.filter((n) => n !== 'net.ipv4.tcp_slow_start_after_idle' && n !== 'net.ipv4.tcp_notsent_lowat'),
    );
    expect(v136).toHaveLength(12);
    // Default: the newest release kubenode knows; patch versions and the bare form are accepted.
    expect(sysctl.safeSysctlAllowlist('6.1')).toEqual(v137);
    expect(sysctl.safeSysctlList('6.1').kubernetesVersion).toBe('v1.37');
    expect(sysctl.safeSysctlList('6.1', { kubernetesVersion: '1.36.3' })).toMatchObject({
      kubernetesVersion: 'v1.36',
      names: v136,
    });
    expect(() => sysctl.safeSysctlAllowlist('6.1', { kubernetesVersion: 'v1.38' })).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_UNSUPPORTED' }),
    );
    expect(() => sysctl.safeSysctlAllowlist('6.1', { kubernetesVersion: 'v2.0' })).toThrow(
      expect.objectContaining({
        code: 'ERR_KUBENODE_PARSE',
        message: expect.stringMatching(/not a v1 release/),
      }),
    );
    expect(() => sysctl.safeSysctlAllowlist('6.1', { kubernetesVersion: 36 as unknown as string })).toThrow(
      /must be a string/,
    );
    // The kubelet configuration takes it too: a v1.36 kubelet rejects what v1.37 admits.
    const pod = {
      spec: { securityContext: { sysctls: [{ name: 'net.ipv4.tcp_notsent_lowat', value: '16384' }] } },
    };
    const k = { kernelVersion: '6.1' };
    expect(sysctl.allowlistFromKubeletConfig({ ...k, kubernetesVersion: 'v1.37' }).admit({ pod }).admit).toBe(
      true,
    );
    expect(
      sysctl.allowlistFromKubeletConfig({ ...k, kubernetesVersion: 'v1.36' }).admit({ pod }),
    ).toMatchObject({
      admit: false,
      reason: 'SysctlForbidden',
    });
  });

  it('reads the running kernel when no version is given', async () => {
    const { readFile } = await import('node:fs/promises');
    const release = (await readFile('/proc/sys/kernel/osrelease', 'utf8')).trim();
    const r = sysctl.safeSysctlList();
    expect(r.kernel).toBe(sysctl.parseKernelVersion(release).join('.'));
    expect(r.names).toEqual(sysctl.safeSysctlAllowlist(release));
  });

  it('refuses unknown kernel strings with upstream texts', () => {
    expect(() => sysctl.safeSysctlAllowlist('banana')).toThrow('could not parse "banana" as version');
    expect(() => sysctl.safeSysctlAllowlist('6')).toThrow('illegal version string "6"');
    expect(() => sysctl.safeSysctlAllowlist('06.1')).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_PARSE' }),
    );
    expect(() => sysctl.safeSysctlAllowlist(6 as unknown as string)).toThrow(/must be a string/);
    expect(sysctl.parseKernelVersion(' v5.4.0-rc1')).toEqual([5, 4, 0]);
  });
});
