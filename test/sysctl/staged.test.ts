// The staged per-pod path: a pod written into a staging area shared with Rust and admitted by a
// zero-argument call. Results and messages must be those of the argument-passing calls.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { native, nativePath } from '../../ts/native.js';

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
    for (const [p, message] of cases) {
      expect(a.admit({ pod: p })).toEqual({ admit: false, reason: 'SysctlForbidden', message });
      // The same message as the list crossing builds.
      const flags = (p.spec?.hostNetwork ? 1 : 0) | (p.spec?.hostIPC ? 2 : 0);
      expect(message).toBe(
        raw.admitList(
          p.spec!.securityContext!.sysctls!.map((s) => s.name!),
          flags,
        ),
      );
    }
  });

  it('returns the first rejection as index << 3 | verdict, 0 when admitted, all-ones when unreadable', () => {
    const raw = new native.SysctlAllowlist(['net.*', 'kernel.msg*', 'user.*']);
    const st = new Uint32Array(native.sysctlStagingBuffer());
    expect(native.sysctlStagingBuffer()).toBe(st.buffer);
    const ids = ['net.core.somaxconn', 'kernel.msgmax', 'vm.swappiness', 'user.max_user_namespaces'].map(
      (n) => raw.intern(n),
    );
    st.set([raw.slot, 2, 0, ids[0]!, ids[1]!]);
    expect(native.sysctlAdmitStaged()).toBe(0);
    st[2] = 1; // host network: index 0, verdict 2
    expect(native.sysctlAdmitStaged()).toBe(2);
    st[2] = 2; // host IPC: index 1, verdict 3
    expect(native.sysctlAdmitStaged()).toBe((1 << 3) | 3);
    st.set([raw.slot, 3, 0, ids[0]!, ids[1]!, ids[2]!]);
    expect(native.sysctlAdmitStaged()).toBe((2 << 3) | 1);
    st[5] = 1_000_000; // unknown name index
    expect(native.sysctlAdmitStaged()).toBe(0xffffffff);
    st.set([raw.slot, native.sysctlStagedCapacity() + 1, 0]);
    expect(native.sysctlAdmitStaged()).toBe(0xffffffff);
    st.set([0xfffffff, 1, 0, ids[0]!]);
    expect(native.sysctlAdmitStaged()).toBe(0xffffffff);
    st.set([raw.slot, 2, 0, ids[0]!, ids[3]!]); // host user namespace: index 1, verdict 4
    expect(native.sysctlAdmitStaged()).toBe((1 << 3) | 4);
    st[2] = 4; // the pod's own user namespace
    expect(native.sysctlAdmitStaged()).toBe(0);
  });

  it('pods with more sysctls than the staging area holds are admitted the same way', () => {
    const a = sysctl.newAllowlist(['net.*']);
    const many = Array.from({ length: native.sysctlStagedCapacity() + 5 }, (_, i) => `net.core.n${i}`);
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
      const st = new Uint32Array(n.sysctlStagingBuffer());
      const before = Array.from(st.subarray(0, 4));
      const a = new n.SysctlAllowlist(['net.*']);
      const ok = a.intern('net.core.somaxconn');
      const bad = a.intern('kernel.sem');
      const out = [];
      for (let i = 0; i < 2000; i++) {
        st.set([a.slot, 1, 0, i % 2 ? bad : ok]);
        out.push(n.sysctlAdmitStaged());
      }
      parentPort.postMessage({ before, slot: a.slot, out });
    `;
    const done = new Promise<{ before: number[]; slot: number; out: number[] }>((resolve, reject) => {
      const w = new Worker(source, { eval: true, workerData: { path: nativePath() } });
      w.once('message', resolve);
      w.once('error', reject);
    });
    // Keep the main thread's staging area busy with a different pod meanwhile.
    const p = pod(['kernel.sem']);
    for (let i = 0; i < 2000; i++) expect(main.admit({ pod: p }).admit).toBe(true);
    const r = await done;
    expect(r.before).toEqual([0, 0, 0, 0]);
    expect(r.out).toEqual(Array.from({ length: 2000 }, (_, i) => (i % 2 ? 1 : 0)));
    expect(st.length).toBeGreaterThan(3);
  });
});
