// The staged per-pod path: a pod written into a staging area shared with Rust and admitted by a
// zero-argument call that returns the verdict. Results and messages must be those of the
// argument-passing call, and a pod crosses once whatever its verdict.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { native, nativePath } from '../../ts/native.js';
import { podFlagBits } from '../../ts/sysctl/pod.js';

type Pod = sysctl.PodLike;
const pod = (names: string[], spec: Record<string, unknown> = {}): Pod => ({
  spec: { ...spec, securityContext: { sysctls: names.map((name) => ({ name, value: '1' })) } },
});

describe('staged admission', () => {
  it('two allowlists used alternately each give their own results', () => {
    const a = sysctl.newAllowlist(['net.*', 'kernel.shm_rmid_forced']);
    const b = sysctl.newAllowlist(['kernel.msg*', 'kernel.sem']);
    const pa = pod(['net.core.somaxconn', 'kernel.shm_rmid_forced']);
    const pb = pod(['kernel.msgmax', 'kernel.sem']);
    for (let i = 0; i < 50; i++) {
      expect(a.admit({ pod: pa })).toEqual({ admit: true });
      expect(b.admit({ pod: pb })).toEqual({ admit: true });
      expect(a.admit({ pod: pb })).toEqual({
        admit: false,
        reason: 'SysctlForbidden',
        message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
      });
      expect(b.admit({ pod: pa })).toEqual({
        admit: false,
        reason: 'SysctlForbidden',
        message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted',
      });
    }
  });

  it('a rejected pod carries upstream message for the first forbidden sysctl, in spec order', () => {
    const a = sysctl.newAllowlist(['net.*', 'kernel.msg*']);
    const cases: [Pod, string][] = [
      [
        pod(['net.core.somaxconn', 'vm.swappiness', 'kernel.sem']),
        'forbidden sysctl: "vm.swappiness" not allowlisted',
      ],
      [
        pod(['kernel.msgmax', 'net/ipv4/conf/eth0.100/rp_filter'], { hostNetwork: true }),
        'forbidden sysctl: "net.ipv4.conf.eth0/100.rp_filter" not allowed with host Net enabled',
      ],
      [
        pod(['net.core.somaxconn', 'kernel.msgmax'], { hostIPC: true }),
        'forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled',
      ],
    ];
    const raw = new native.SysctlAllowlist(['net.*', 'kernel.msg*']);
    const bits = podFlagBits();
    for (const [p, message] of cases) {
      expect(a.admit({ pod: p })).toEqual({ admit: false, reason: 'SysctlForbidden', message });
      // The same message as the argument-passing call builds.
      const flags = (p.spec?.hostNetwork ? bits.hostNetwork : 0) | (p.spec?.hostIPC ? bits.hostIpc : 0);
      const ids = Uint32Array.from(p.spec!.securityContext!.sysctls!, (s) => raw.intern(s.name!));
      expect(raw.admitIds(ids, ids.length, flags)).toBe(message);
    }
  });

  it('a pod crosses once, admitted or rejected: the staged call returns the message', () => {
    const a = sysctl.newAllowlist(['net.*']);
    const proto = native.SysctlAllowlist.prototype;
    const admitIds = proto.admitIds;
    let calls = 0;
    proto.admitIds = function (this: typeof proto, ...args: Parameters<typeof admitIds>) {
      calls++;
      return admitIds.apply(this, args);
    };
    try {
      expect(a.admit({ pod: pod(['net.core.somaxconn']) }).admit).toBe(true);
      expect(a.admit({ pod: pod(['net.core.somaxconn', 'vm.swappiness']) })).toEqual({
        admit: false,
        reason: 'SysctlForbidden',
        message: 'forbidden sysctl: "vm.swappiness" not allowlisted',
      });
      expect(a.admit({ pod: pod(['net.core.somaxconn'], { hostNetwork: true }) }).admit).toBe(false);
    } finally {
      proto.admitIds = admitIds;
    }
    expect(calls).toBe(0);
  });

  it('returns null when admitted, the message when rejected, the unreadable number otherwise', () => {
    const raw = new native.SysctlAllowlist(['net.*', 'kernel.msg*', 'user.*']);
    const at = native.sysctlStageLayout();
    const st = new Uint32Array(native.sysctlStagingBuffer());
    expect(native.sysctlStagingBuffer()).toBe(st.buffer);
    const ids = ['net.core.somaxconn', 'kernel.msgmax', 'vm.swappiness', 'user.max_user_namespaces'].map(
      (n) => raw.intern(n),
    );
    const stagePod = (slot: number, podIds: number[], flags = 0) => {
      st[at.slot] = slot;
      st[at.count] = podIds.length;
      st[at.flags] = flags;
      st.set(podIds, at.ids);
    };
    stagePod(raw.slot, [ids[0]!, ids[1]!]);
    expect(native.sysctlAdmitStaged()).toBeNull();
    st[at.flags] = at.hostNetwork;
    expect(native.sysctlAdmitStaged()).toBe(
      'forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled',
    );
    st[at.flags] = at.hostIpc;
    expect(native.sysctlAdmitStaged()).toBe(
      'forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled',
    );
    stagePod(raw.slot, [ids[0]!, ids[1]!, ids[2]!]);
    expect(native.sysctlAdmitStaged()).toBe('forbidden sysctl: "vm.swappiness" not allowlisted');
    st[at.ids + 2] = 1_000_000; // unknown name index
    expect(native.sysctlAdmitStaged()).toBe(at.unreadable);
    stagePod(raw.slot, []);
    st[at.count] = at.capacity + 1;
    expect(native.sysctlAdmitStaged()).toBe(at.unreadable);
    stagePod(0xfffffff, [ids[0]!]);
    expect(native.sysctlAdmitStaged()).toBe(at.unreadable);
    stagePod(raw.slot, [ids[0]!, ids[3]!]); // user.* in the host's user namespace
    expect(native.sysctlAdmitStaged()).toBe(
      'forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled',
    );
    st[at.flags] = at.podUserns;
    expect(native.sysctlAdmitStaged()).toBeNull();
  });

  it('pods with more sysctls than the staging area holds are admitted the same way', () => {
    const a = sysctl.newAllowlist(['net.*']);
    const many = Array.from({ length: native.sysctlStageLayout().capacity + 5 }, (_, i) => `net.core.n${i}`);
    expect(a.admit({ pod: pod(many) })).toEqual({ admit: true });
    expect(a.admit({ pod: pod([...many, 'vm.swappiness']) })).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "vm.swappiness" not allowlisted',
    });
  });

  it('a name getter that admits another pod does not change the outer result', () => {
    const a = sysctl.newAllowlist(['net.*']);
    const b = sysctl.newAllowlist(['kernel.sem']);
    const tricky = {
      spec: {
        securityContext: {
          sysctls: [
            { name: 'net.core.somaxconn' },
            {
              get name() {
                expect(
                  b.admit({ pod: pod(['kernel.sem', 'kernel.sem', 'kernel.sem'], { hostIPC: true }) }).admit,
                ).toBe(false);
                return 'net.ipv4.ip_local_port_range';
              },
            },
          ],
        },
      },
    } as Pod;
    expect(a.admit({ pod: tricky })).toEqual({ admit: true });
  });

  it('a name getter that admits another pod on the same allowlist cannot let a forbidden sysctl through', () => {
    const a = sysctl.newAllowlist(['net.*']);
    const hostile = (): Pod =>
      ({
        spec: {
          securityContext: {
            sysctls: [
              { name: 'kernel.core_pattern' },
              {
                get name() {
                  // Admitting a pod on the same allowlist while the outer pod is being read.
                  expect(a.admit({ pod: pod(['net.core.somaxconn', 'net.core.somaxconn']) }).admit).toBe(
                    true,
                  );
                  return 'net.ipv4.ip_local_port_range';
                },
              },
            ],
          },
        },
      }) as Pod;
    const refused = {
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.core_pattern" not allowlisted',
    };
    expect(a.admit({ pod: hostile() })).toEqual(refused);
    expect(a.admitMany([pod(['vm.swappiness']), hostile(), pod(['net.a'])])).toEqual([
      { ...refused, message: 'forbidden sysctl: "vm.swappiness" not allowlisted' },
      refused,
      { admit: true },
    ]);
  });

  it('a getter that resets the name table mid-read does not misread the outer pod', () => {
    const a = sysctl.newAllowlist(['net.*']);
    let reentered = false;
    const hostile = {
      spec: {
        securityContext: {
          sysctls: [
            { name: 'kernel.core_pattern' },
            {
              get name() {
                if (!reentered) {
                  reentered = true;
                  // Enough distinct names to make the allowlist forget its registered names.
                  for (let i = 0; i < 1 << 16; i += 512) {
                    a.admitMany(Array.from({ length: 512 }, (_, j) => pod([`net.n${i + j}`])));
                  }
                }
                return 'net.core.somaxconn';
              },
            },
          ],
        },
      },
    } as Pod;
    expect(a.admit({ pod: hostile })).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.core_pattern" not allowlisted',
    });
  });

  it('each worker thread gets its own staging area and slots', async () => {
    const main = sysctl.newAllowlist(['kernel.sem']);
    const st = new Uint32Array(native.sysctlStagingBuffer());
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      const n = require(workerData.path);
      const at = n.sysctlStageLayout();
      const st = new Uint32Array(n.sysctlStagingBuffer());
      const before = Array.from(st.subarray(0, 4));
      const a = new n.SysctlAllowlist(['net.*']);
      const ok = a.intern('net.core.somaxconn');
      const bad = a.intern('kernel.sem');
      const out = [];
      for (let i = 0; i < 2000; i++) {
        st[at.slot] = a.slot;
        st[at.count] = 1;
        st[at.flags] = 0;
        st[at.ids] = i % 2 ? bad : ok;
        out.push(n.sysctlAdmitStaged());
      }
      parentPort.postMessage({ before, slot: a.slot, out });
    `;
    const done = new Promise<{ before: number[]; slot: number; out: (string | null)[] }>(
      (resolve, reject) => {
        const w = new Worker(source, { eval: true, workerData: { path: nativePath() } });
        w.once('message', resolve);
        w.once('error', reject);
      },
    );
    // Keep the main thread's staging area busy with a different pod meanwhile.
    const p = pod(['kernel.sem']);
    for (let i = 0; i < 2000; i++) expect(main.admit({ pod: p }).admit).toBe(true);
    const r = await done;
    expect(r.before).toEqual([0, 0, 0, 0]);
    const refused = 'forbidden sysctl: "kernel.sem" not allowlisted';
    expect(r.out).toEqual(Array.from({ length: 2000 }, (_, i) => (i % 2 ? refused : null)));
    expect(st.length).toBeGreaterThan(3);
  });
});
