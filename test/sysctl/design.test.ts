import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';

const pod = (
  sysctls: { name: string; value?: string | number }[],
  spec: Record<string, unknown> = {},
  annotations?: Record<string, string>,
): sysctl.PodLike => ({
  metadata: annotations ? { annotations } : {},
  spec: { ...spec, securityContext: { sysctls } },
});
const names = (...n: string[]) => pod(n.map((name) => ({ name, value: '1' })));
const REGEX_DETAIL =
  'must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$';

describe('validatePodSysctls (API server)', () => {
  it('upstream TestValidateSysctls', () => {
    expect(
      sysctl.validatePodSysctls(
        names(
          'kernel.shm_rmid_forced',
          'net.ipv4.conf.enp3s0/200.forwarding',
          'net/ipv4/conf/enp3s0.200/forwarding',
          'kernel.msgmax',
        ),
      ),
    ).toEqual([]);
    const bad = sysctl.validatePodSysctls(names('i..nvalid', '_invalid'));
    expect(bad.map((e) => e.message)).toEqual([
      `spec.securityContext.sysctls[0].name: Invalid value: "i..nvalid": ${REGEX_DETAIL}`,
      `spec.securityContext.sysctls[1].name: Invalid value: "_invalid": ${REGEX_DETAIL}`,
    ]);
    expect(sysctl.validatePodSysctls(names('kernel.shmmax', 'kernel.shmmax'))).toEqual([
      {
        type: 'FieldValueDuplicate',
        field: 'spec.securityContext.sysctls[1].name',
        badValue: 'kernel.shmmax',
        detail: '',
        message: 'spec.securityContext.sysctls[1].name: Duplicate value: "kernel.shmmax"',
      },
    ]);
    expect(sysctl.validatePodSysctls(names('kernel.shmmax', 'kernel/shmmax'))).toEqual([]);
    const hn = pod([{ name: 'net.ipv4.ip_local_port_range' }, { name: 'net.core.somaxconn' }], {
      hostNetwork: true,
    });
    expect(sysctl.validatePodSysctls(hn).map((e) => e.detail)).toEqual(
      Array(2).fill("may not be specified when 'hostNetwork' is true"),
    );
    const hi = pod([{ name: 'kernel.shmmax' }, { name: 'fs.mqueue.msg_max' }], { hostIPC: true });
    expect(sysctl.validatePodSysctls(hi).map((e) => e.detail)).toEqual(
      Array(2).fill("may not be specified when 'hostIPC' is true"),
    );
    expect(sysctl.validatePodSysctls(hn, { allowNamespacedSysctlsForHostNetAndHostIPC: true })).toEqual([]);
    expect(sysctl.validatePodSysctls(hi, { allowNamespacedSysctlsForHostNetAndHostIPC: true })).toEqual([]);
  });

  it('Required, two errors for one sysctl, Windows, bad input', () => {
    const e = sysctl.validatePodSysctls(
      pod([{ name: '' }, { name: 'net.a' }, { name: 'net.a' }], { hostNetwork: true }),
    );
    expect(e.map((x) => x.message)).toEqual([
      'spec.securityContext.sysctls[0].name: Required value',
      `spec.securityContext.sysctls[1].name: Invalid value: "net.a": may not be specified when 'hostNetwork' is true`,
      'spec.securityContext.sysctls[2].name: Duplicate value: "net.a"',
      `spec.securityContext.sysctls[2].name: Invalid value: "net.a": may not be specified when 'hostNetwork' is true`,
    ]);
    expect(
      sysctl.validatePodSysctls(pod([{ name: 'kernel.shm_rmid_forced' }], { os: { name: 'windows' } })).at(-1)
        ?.message,
    ).toBe('spec.securityContext.sysctls: Forbidden: cannot be set for a windows pod');
    expect(sysctl.validatePodSysctls({ spec: { securityContext: null } })).toEqual([]);
    expect(sysctl.validatePodSysctls(names('a'.repeat(254)))[0]?.type).toBe('FieldValueInvalid');
    expect(() =>
      sysctl.validatePodSysctls(names('a'), {
        allowNamespacedSysctlsForHostNetAndHostIPC: 'yes' as unknown as boolean,
      }),
    ).toThrow(/must be a boolean/);
  });
});

describe('alpha annotations', () => {
  it('parses like SysctlsFromPodAnnotation', () => {
    expect(sysctl.parseSysctlAnnotation('')).toEqual([]);
    expect(sysctl.parseSysctlAnnotation('net.ipv4.route.min_pmtu=1000,kernel.msgmax=1 2 3')).toEqual([
      { name: 'net.ipv4.route.min_pmtu', value: '1000' },
      { name: 'kernel.msgmax', value: '1 2 3' },
    ]);
    expect(sysctl.parseSysctlAnnotation('a=')).toEqual([{ name: 'a', value: '' }]);
    for (const bad of ['a', '=1', 'a=1=2', 'a=1,']) {
      expect(() => sysctl.parseSysctlAnnotation(bad)).toThrow(/not of the format sysctl_name=value/);
    }
    expect(sysctl.formatSysctlAnnotation([{ name: 'a.b', value: '1 2' }])).toBe('a.b=1 2');
  });

  it('converts to securityContext.sysctls and enforces safe/unsafe placement', () => {
    const safe = sysctl.safeSysctlAllowlist('6.1');
    const ok = sysctl.sysctlsFromAnnotations(
      pod(
        [],
        {},
        {
          [sysctl.SYSCTLS_ANNOTATION]: 'kernel.shm_rmid_forced=1',
          [sysctl.UNSAFE_SYSCTLS_ANNOTATION]: 'net.ipv4.route.min_pmtu=1000,net.ipv4.tcp_syncookies=1',
        },
      ),
      { safeSysctls: safe },
    );
    expect(ok.errors).toEqual([]);
    expect(ok.sysctls.map((s) => s.name)).toEqual([
      'kernel.shm_rmid_forced',
      'net.ipv4.route.min_pmtu',
      'net.ipv4.tcp_syncookies',
    ]);
    const bad = sysctl.sysctlsFromAnnotations(
      pod(
        [],
        {},
        {
          [sysctl.SYSCTLS_ANNOTATION]: 'net.core.somaxconn=1,kernel.shm_rmid_forced=1',
          [sysctl.UNSAFE_SYSCTLS_ANNOTATION]: 'kernel.shm_rmid_forced=1,Bad=2',
        },
      ),
      { safeSysctls: safe },
    );
    expect(bad.errors.map((e) => e.message)).toEqual([
      `metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls][1].name: Invalid value: "Bad": ${REGEX_DETAIL}`,
      'metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls]: Invalid value: "kernel.shm_rmid_forced": can not be safe and unsafe',
      'metadata.annotations[security.alpha.kubernetes.io/sysctls][0].name: Invalid value: "net.core.somaxconn": not a safe sysctl; list it in security.alpha.kubernetes.io/unsafe-sysctls',
    ]);
    const syntax = sysctl.sysctlsFromAnnotations(pod([], {}, { [sysctl.SYSCTLS_ANNOTATION]: 'oops' }), {
      safeSysctls: safe,
    });
    expect(syntax.errors[0]?.detail).toBe('sysctl "oops" not of the format sysctl_name=value');
  });
});

describe('policies from the design proposal', () => {
  it('Alternative 1: names and prefixes; * allows all; empty allows none', () => {
    const p = sysctl.SysctlNamePolicy.fromAnnotation('kernel.shmmax,kernel.msgmax,fs.mqueue.*');
    const v = p.validate(names('kernel.shmmax', 'fs/mqueue/msg_max', 'kernel.sem'));
    expect(v.map((e) => e.message)).toEqual([
      'spec.securityContext.sysctls[2]: Forbidden: sysctl "kernel.sem" is not allowed',
    ]);
    expect(new sysctl.SysctlNamePolicy(['*']).validate(names('vm.anything'))).toEqual([]);
    expect(new sysctl.SysctlNamePolicy([]).validate(names('kernel.sem'))).toHaveLength(1);
    expect(() => new sysctl.SysctlNamePolicy([''])).toThrow(/non-empty string/);
  });

  it('Alternative 2: values and min/max per name or wildcard segment', () => {
    const p = sysctl.SysctlPolicy.fromAnnotation(
      'kernel.shmmax,kernel.msgmax=max:10:min:1,kernel.msgmni=values:1000 2000 3000',
    );
    expect(
      p.validate(
        pod([
          { name: 'kernel.shmmax', value: 'anything' },
          { name: 'kernel.msgmax', value: 10 },
          { name: 'kernel.msgmni', value: '2000' },
        ]),
      ),
    ).toEqual([]);
    const v = p.validate(
      pod([
        { name: 'kernel.msgmax', value: '11' },
        { name: 'kernel.msgmax', value: 'x' },
        { name: 'kernel.msgmni', value: '5' },
        { name: 'kernel.sem', value: '1' },
      ]),
    );
    expect(v.map((e) => e.message)).toEqual([
      'spec.securityContext.sysctls[0].value: Invalid value: "11": must be between 1 and 10',
      'spec.securityContext.sysctls[1].value: Invalid value: "x": must be an integer',
      'spec.securityContext.sysctls[2].value: Invalid value: "5": must be one of "1000", "2000", "3000"',
      'spec.securityContext.sysctls[3]: Forbidden: sysctl "kernel.sem" is not allowed',
    ]);
    const w = new sysctl.SysctlPolicy([
      { name: 'net.ipv4.conf.*.rp_filter', values: ['0', '2'] },
      { name: 'net.core.somaxconn', min: 128 },
    ]);
    expect(
      w
        .validate(
          pod([
            { name: 'net.ipv4.conf.eth0.rp_filter', value: '2' },
            { name: 'net.core.somaxconn', value: '64' },
          ]),
        )
        .map((e) => e.detail),
    ).toEqual(['must be at least 128']);
    expect(w.validate(names('net.ipv4.conf.rp_filter'))).toHaveLength(1);
    expect(() => new sysctl.SysctlPolicy([{ name: 'a', values: ['1'], min: 1 }])).toThrow(
      /either values or min\/max/,
    );
    expect(() => new sysctl.SysctlPolicy([{ name: 'a.B' }])).toThrow(/each segment/);
    expect(() => new sysctl.SysctlPolicy([{ name: 'a', min: 5, max: 1 }])).toThrow(/greater than max/);
    expect(() => sysctl.SysctlPolicy.fromAnnotation('a=min:x')).toThrow(/min must be an integer/);
  });
});

describe('Pod Security baseline', () => {
  it('exact membership by policy version with upstream strings', () => {
    expect(sysctl.checkBaseline(names('net.ipv4.tcp_rmem'), 'v1.31')).toEqual({
      allowed: false,
      forbiddenReason: 'forbidden sysctls',
      forbiddenDetail: 'net.ipv4.tcp_rmem',
    });
    expect(sysctl.checkBaseline(names('net.ipv4.tcp_rmem'), 'v1.32')).toEqual({ allowed: true });
    expect(sysctl.checkBaseline(names('net.ipv4.tcp_notsent_lowat'), 'v1.36').allowed).toBe(false);
    expect(sysctl.checkBaseline(names('net.ipv4.tcp_notsent_lowat'), 'latest').allowed).toBe(true);
    expect(sysctl.checkBaseline(names('net.ipv4.ip_local_reserved_ports'), 'v1.26').allowed).toBe(false);
    expect(sysctl.checkBaseline(names('net.ipv4.tcp_keepalive_time'), 'v1.29').allowed).toBe(true);
    expect(
      sysctl.checkBaseline(
        names('net.core.somaxconn', 'kernel.shm_rmid_forced', 'kernel/shm_rmid_forced', 'net.core.somaxconn'),
        'v1.0',
      ),
    ).toEqual({
      allowed: false,
      forbiddenReason: 'forbidden sysctls',
      forbiddenDetail: 'net.core.somaxconn, kernel/shm_rmid_forced, net.core.somaxconn',
    });
    expect(sysctl.checkBaseline({ spec: {} }, 'v1.0')).toEqual({ allowed: true });
    expect(sysctl.baselineAllowedSysctls('latest')).toHaveLength(14);
    // Read from the core's table: v1.36 has neither row kubernetes#138389 added in v1.37.
    expect(sysctl.baselineAllowedSysctls('v1.36')).toHaveLength(12);
    expect(sysctl.baselineAllowedSysctls('v1.37')).toEqual(sysctl.baselineAllowedSysctls('latest'));
    expect(sysctl.baselineAllowedSysctls('v1.0')).toEqual(sysctl.safeSysctlAllowlist('3.10'));
    expect(sysctl.parsePolicyVersion('v1.36')).toBe(36);
    expect(() => sysctl.parsePolicyVersion('v1.036')).toThrow(/policy version/);
    expect(() => sysctl.checkBaseline(names('a'), 'v2.0')).toThrow(/policy version/);
  });
});
