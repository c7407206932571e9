import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { admission, sysctl } from '../../ts/index.js';

type Pod = sysctl.PodLike;
const pod = (names: string[], spec: Record<string, unknown> = {}): Pod => ({
  spec: { ...spec, securityContext: { sysctls: names.map((name) => ({ name, value: '1' })) } },
});

describe('newAllowlist', () => {
  it('accepts upstream TestNewAllowlist good cases and stores normalised keys', () => {
    expect(sysctl.newAllowlist(['kernel.msg*', 'kernel.sem']).entries()).toEqual([
      { key: 'kernel.msg', namespace: 'IPC', prefix: true },
      { key: 'kernel.sem', namespace: 'IPC', prefix: false },
    ]);
    expect(
      sysctl
        .newAllowlist(['kernel/msg*', 'net/ipv4/conf/eno2.100/*'])
        .entries()
        .map((e) => e.key),
    ).toEqual(['kernel.msg', 'net.ipv4.conf.eno2/100.']);
    expect(() => sysctl.newAllowlist(['kernel.domainname', 'user.*'])).not.toThrow();
  });

  it.each([' kernel.msg*', 'kernel.msg* ', 'net.-', 'net.*.foo', 'net.*/foo', 'ä', ''])(
    'rejects pattern %j',
    (p) => {
      expect(() => sysctl.newAllowlist([p])).toThrow(
        `sysctl ${JSON.stringify(p)} must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`,
      );
    },
  );

  it.each([
    ['foo', 'foo'],
    ['foo*', 'foo'],
    ['*', ''],
    ['fs.inotify.*', 'fs.inotify.'],
    ['vm.max_map_count', 'vm.max_map_count'],
    ['net*', 'net'],
    ['kernel/hostname', 'kernel.hostname'],
  ])('rejects unknown namespace %s', (p, key) => {
    const err = (() => {
      try {
        sysctl.newAllowlist([p]);
      } catch (e) {
        return e as Error & { code?: string };
      }
    })();
    expect(err).toBeInstanceOf(sysctl.SysctlAllowlistError);
    expect(err?.code).toBe('ERR_KUBENODE_INVALID_ARG');
    expect(err?.message).toBe(`the sysctls "${key}" are not known to be namespaced`);
  });

  it('rejects non-array and non-string entries with typed errors', () => {
    expect(() => sysctl.newAllowlist('net.*' as unknown as string[])).toThrow(/patterns must be an array/);
    expect(() => sysctl.newAllowlist(['net.*', 3 as unknown as string])).toThrow(
      /patterns\[1\] must be a string, got 3/,
    );
  });
});

describe('allowlist.admit', () => {
  const w = sysctl.newAllowlist([
    ...sysctl.safeSysctlAllowlist('6.1'),
    'kernel.msg*',
    'kernel.sem',
    'net.core.*',
    'kernel.domainname',
    'user.*',
  ]);

  it('admits pods without sysctls whatever the host flags', () => {
    expect(w.admit({ pod: {} })).toEqual({ admit: true });
    expect(w.admit({ pod: { spec: { hostNetwork: true, securityContext: null } } })).toEqual({ admit: true });
    expect(w.admit({ pod: { spec: { hostIPC: true, securityContext: { sysctls: [] } } } })).toEqual({
      admit: true,
    });
    expect(w.admit({ pod: { spec: { securityContext: { sysctls: null } } } })).toEqual({ admit: true });
  });

  it('admits safe, exact unsafe, prefixed and slash names', () => {
    expect(
      w.admit({
        pod: pod([
          'kernel.shm_rmid_forced',
          'kernel/sem',
          'kernel.msgfoo',
          'net/core/somaxconn',
          'net.ipv4.tcp_rmem',
        ]),
      }).admit,
    ).toBe(true);
  });

  it('rejects the first forbidden sysctl in spec order with upstream messages', () => {
    expect(w.admit({ pod: pod(['kernel.sem', 'vm/swappiness', 'net.x.y']) })).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "vm.swappiness" not allowlisted',
    });
    expect(
      w.admit({ pod: pod(['net.ipv4.ip_unprivileged_port_start'], { hostNetwork: true }) }).message,
    ).toBe('forbidden sysctl: "net.ipv4.ip_unprivileged_port_start" not allowed with host Net enabled');
    expect(
      w.admit({ pod: pod(['kernel.shm_rmid_forced'], { hostNetwork: true, hostIPC: true }) }).message,
    ).toBe('forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled');
    expect(w.admit({ pod: pod(['kernel.msgmax'], { hostIPC: true }) }).message).toBe(
      'forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled',
    );
    // hostIPC does not affect Net sysctls, nor hostNetwork IPC ones; UTS is never host-checked.
    expect(
      w.admit({
        pod: pod(['net.core.somaxconn', 'kernel.domainname', 'user.max_user_namespaces'], {
          hostIPC: true,
          hostUsers: false,
        }),
      }).admit,
    ).toBe(true);
    expect(w.admit({ pod: pod(['kernel.sem', 'kernel.domainname'], { hostNetwork: true }) }).admit).toBe(
      true,
    );
  });

  // v1.37.2 allowlist.go: a User sysctl needs the pod's own user namespace (`hostUsers: false`).
  it.each([
    [{}, false],
    [{ hostUsers: true }, false],
    [{ hostUsers: null }, false],
    [{ hostUsers: false }, true],
    [{ hostUsers: false, hostNetwork: true, hostIPC: true }, true],
  ])('a user.* sysctl with spec %j is admitted: %s', (spec, admitted) => {
    const p = pod(['user/max_user_namespaces'], spec);
    const want = admitted
      ? { admit: true }
      : {
          admit: false,
          reason: 'SysctlForbidden',
          message: 'forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled',
        };
    expect(w.admit({ pod: p })).toEqual(want);
    expect(w.admitMany([p, pod(['kernel.sem'])])).toEqual([want, { admit: true }]);
  });

  it('refuses a non-boolean hostUsers with a typed error', () => {
    expect(() =>
      w.admit({ pod: { spec: { hostUsers: 'no', securityContext: { sysctls: [] } } } as unknown as Pod }),
    ).toThrow(/spec\.hostUsers must be a boolean, got "no"/);
  });

  it('quotes odd names like Go %q and survives bad input', () => {
    expect(w.admit({ pod: pod(['ä"\n']) }).message).toBe('forbidden sysctl: "ä\\"\\n" not allowlisted');
    expect(w.admit({ pod: pod(['a\0b']) }).message).toBe('forbidden sysctl: "a\\x00b" not allowlisted');
    expect(w.admit({ pod: { spec: { securityContext: { sysctls: [{ value: '1' }] } } } }).message).toBe(
      'forbidden sysctl: "" not allowlisted',
    );
    const big = `net.core.${'a'.repeat(10 * 1024 * 1024)}`;
    expect(w.admit({ pod: pod([big]) }).admit).toBe(true);
    expect(w.admit({ pod: pod([`vm.${'a'.repeat(10 * 1024 * 1024)}`]) }).message?.length).toBeGreaterThan(
      10 * 1024 * 1024,
    );
    expect(() =>
      w.admit({ pod: { spec: { securityContext: { sysctls: [{ name: 5 }] } } } as unknown as Pod }),
    ).toThrow(/sysctls\[0\]\.name must be a string, got 5/);
    expect(() => w.admit({ pod: { spec: { hostNetwork: 'yes' } } as unknown as Pod })).toThrow(
      /hostNetwork must be a boolean/,
    );
    expect(() => w.admit({ pod: null as unknown as Pod })).toThrow(/pod must be an object, got null/);
    expect(() => w.admit({ pod: { spec: { securityContext: { sysctls: 'x' } } } as unknown as Pod })).toThrow(
      /must be an array/,
    );
  });

  it('admitMany agrees with admit pod by pod (fast-check)', () => {
    const name = fc.constantFrom(
      'kernel.sem',
      'net.core.x',
      'vm.swappiness',
      'kernel/msgmax',
      'kernel.domainname',
      '',
      'a\0b',
      'net.ipv4.tcp_wmem',
    );
    const arbPod = fc.record({
      names: fc.array(name, { maxLength: 5 }),
      hostNetwork: fc.boolean(),
      hostIPC: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(arbPod, { maxLength: 20 }), (specs) => {
        const pods = specs.map((s) => pod(s.names, { hostNetwork: s.hostNetwork, hostIPC: s.hostIPC }));
        expect(w.admitMany(pods)).toEqual(pods.map((p) => w.admit({ pod: p })));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('kubelet config', () => {
  it('joins the safe list and --allowed-unsafe-sysctls', () => {
    const w = sysctl.allowlistFromKubeletConfig({
      allowedUnsafeSysctls: 'kernel.msg*,net.core.somaxconn',
      kernelVersion: '3.10',
    });
    expect(
      w.admit({ pod: pod(['net.core.somaxconn', 'kernel.msgmni', 'kernel.shm_rmid_forced']) }).admit,
    ).toBe(true);
    expect(w.admit({ pod: pod(['net.ipv4.tcp_rmem']) }).message).toBe(
      'forbidden sysctl: "net.ipv4.tcp_rmem" not allowlisted',
    );
    expect(sysctl.parseAllowedUnsafeSysctls('')).toEqual([]);
    expect(sysctl.parseAllowedUnsafeSysctls('a, b')).toEqual(['a', ' b']);
  });

  it('refuses to start on a bad entry', () => {
    expect(() => sysctl.allowlistFromKubeletConfig({ allowedUnsafeSysctls: 'vm.max_map_count' })).toThrow(
      'invalid --allowed-unsafe-sysctls: the sysctls "vm.max_map_count" are not known to be namespaced',
    );
    expect(() => sysctl.allowlistFromKubeletConfig({ allowedUnsafeSysctls: 'net.*, kernel.sem' })).toThrow(
      /invalid --allowed-unsafe-sysctls: sysctl " kernel.sem" must have at most 253 characters/,
    );
    expect(() => sysctl.allowlistFromKubeletConfig({ kernelVersion: 'x' })).toThrow(
      'could not parse "x" as version',
    );
  });
});

describe('PodAdmitChain', () => {
  const allow = sysctl.newAllowlist(sysctl.safeSysctlAllowlist('6.1'));

  it('runs handlers in order; first rejection wins with the handler name', async () => {
    const seen: string[] = [];
    const chain = new admission.PodAdmitChain([
      allow,
      {
        name: 'async-ok',
        admit: async () => {
          seen.push('async-ok');
          return { admit: true };
        },
      },
      {
        name: 'deny',
        admit: () => {
          seen.push('deny');
          return { admit: false, reason: 'OutOfPods', message: 'full' };
        },
      },
      {
        name: 'never',
        admit: () => {
          seen.push('never');
          return { admit: true };
        },
      },
    ]);
    expect(chain.handlers).toEqual(['sysctl', 'async-ok', 'deny', 'never']);
    expect(await chain.admit({ pod: pod(['kernel.shm_rmid_forced']) })).toEqual({
      admit: false,
      reason: 'OutOfPods',
      message: 'full',
      handler: 'deny',
    });
    expect(seen).toEqual(['async-ok', 'deny']);
    seen.length = 0;
    const r = await chain.admit({ pod: pod(['net.core.somaxconn']) });
    expect(r).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted',
      handler: 'sysctl',
    });
    expect(seen).toEqual([]);
    expect(admission.rejectedPodStatus(r)).toEqual({
      phase: 'Failed',
      reason: 'SysctlForbidden',
      message: 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted',
    });
  });

  it('turns handler exceptions and bad results into UnexpectedAdmissionError', async () => {
    const chain = new admission.PodAdmitChain([
      {
        name: 'boom',
        admit: () => {
          throw new Error('kaput');
        },
      },
    ]);
    expect(await chain.admit({ pod: {} })).toEqual({
      admit: false,
      reason: 'UnexpectedAdmissionError',
      message: 'admit handler "boom" failed: kaput',
      handler: 'boom',
    });
    const bad = new admission.PodAdmitChain([
      { name: 'undef', admit: async () => undefined as unknown as admission.PodAdmitResult },
    ]);
    expect((await bad.admit({ pod: {} })).reason).toBe('UnexpectedAdmissionError');
    // The sysctl handler throwing on a malformed pod is a rejection too, not a crash.
    const r = await new admission.PodAdmitChain([allow]).admit({
      pod: { spec: { hostIPC: 1 } } as unknown as sysctl.PodLike,
    });
    expect(r).toMatchObject({ admit: false, reason: 'UnexpectedAdmissionError', handler: 'sysctl' });
    expect(await new admission.PodAdmitChain([]).admit({ pod: {} })).toEqual({ admit: true });
    expect(() => new admission.PodAdmitChain([{} as admission.PodAdmitHandler])).toThrow(/handlers\[0\]/);
    await expect(
      new admission.PodAdmitChain([]).admit(null as unknown as admission.PodAdmitAttributes),
    ).rejects.toThrow(/admit attributes/);
  });
});

describe('admission crossing', () => {
  const patterns = ['net.*', 'kernel.sem'];

  it('passes non-ASCII names and lone surrogates through unchanged in meaning', () => {
    const w = sysctl.newAllowlist(patterns);
    expect(w.admit({ pod: pod(['net.\u00fc', 'net.\u{1F600}']) }).admit).toBe(true);
    // A Latin-1 narrowing would read U+016B as "k" and admit "kernel.sem".
    expect(w.admit({ pod: pod(['\u016bernel.sem']) }).message).toBe(
      'forbidden sysctl: "\u016bernel.sem" not allowlisted',
    );
    expect(w.admit({ pod: pod(['kernel.sem', '\ud800x']) }).message).toBe(
      'forbidden sysctl: "\ufffdx" not allowlisted',
    );
  });

  it('keeps admitting correctly when more distinct names arrive than the name table keeps', () => {
    const w = sysctl.newAllowlist(patterns);
    for (let i = 0; i < 70_000; i++) {
      const r = w.admit({ pod: pod([`net.n${i}`, `vm.v${i}`]) });
      if (r.message !== `forbidden sysctl: "vm.v${i}" not allowlisted`)
        throw new Error(`pod ${i}: ${r.message}`);
    }
    const many = w.admitMany([pod(['net.again']), pod(['kernel.sem'], { hostIPC: true }), pod([])]);
    expect(many.map((r) => r.message ?? 'ok')).toEqual([
      'ok',
      'forbidden sysctl: "kernel.sem" not allowed with host IPC enabled',
      'ok',
    ]);
  });
});
