// Differential run: random policies rendered and bound to their own namespaces in a real
// kube-apiserver, random pods (and workload templates) created with server-side dry-run, and
// each API decision compared with the in-process one (API validation, then the policy file's
// PodAdmitChain). Shared by test/sysctl/policy-apiserver.test.ts and benches/sysctl-policy.bench.ts.
import fc from 'fast-check';
import { sysctl } from '../../../ts/index.js';
import type { SysctlPolicyFileSpec } from '../../../ts/sysctl/policy-file.js';
import { type Api, messageOf, pod } from './admission.js';

const KERNEL = '6.1';

const ENTRY_NAMES = [
  'net.core.somaxconn',
  'net.ipv4.ip_local_port_range',
  'kernel.shm_rmid_forced',
  'kernel.*',
  'net.*.somaxconn',
  'net.ipv4.*',
  'kernel.msgmax',
  'fs.mqueue.msg_max',
  'net.ipv4.conf.*.rp_filter',
  'net.ipv4.tcp_syncookies',
  '*.*',
  '*.*.*',
  'vm.swappiness',
];
const NAME_PATTERNS = [
  '*',
  'net.*',
  'kernel.shm*',
  'net.core.somaxconn',
  'kernel.sem',
  'net/ipv4/*',
  'fs.mqueue.*',
  'kernel.msgmax',
];
const UNSAFE_PATTERNS = [
  'net.core.somaxconn',
  'user.*',
  'kernel.msg*',
  'net.ipv6.*',
  'kernel.sem',
  'fs.mqueue.*',
  'net.*',
  'kernel.shm*',
];

const POD_NAMES = [
  ...sysctl.safeSysctlAllowlist(KERNEL),
  'net.core.somaxconn',
  'kernel.msgmax',
  'kernel.sem',
  'kernel.shmmax',
  'fs.mqueue.msg_max',
  'net.ipv4.conf.eth0.rp_filter',
  'net.ipv4.conf.all.rp_filter',
  'net.ipv6.conf.all.forwarding',
  'vm.swappiness',
  'user.max_user_namespaces',
  'kernel.domainname',
  'net/core/somaxconn',
  'net/ipv4/conf/eno2.100/rp_filter',
  'net.ipv4.conf.eno2/100.rp_filter',
  'kernel/sem',
  'kernel/shm_rmid_forced',
];
const MALFORMED = ['Net.core', 'a..b', '', 'net.core.somaxconn.', '-x', 'net.core.*', 'a b', 'x'.repeat(254)];
const VALUES = [
  '128',
  '4096',
  '127',
  '4097',
  '1024 65535',
  '1024  2000',
  '80 90',
  ' 200 ',
  '\t300\n',
  '0',
  '1',
  '-1',
  '00000200',
  '9007199254740991',
  '9007199254740993',
  '99999999999999999999',
  'abc',
  '',
  '1 2',
  '1  2',
  '\u00a0200',
  '200\u00a0',
  '+5',
  '1e3',
  '0x10',
  '2 3 4',
  '-0',
  '1\v2',
  // Around the 4,096-code-point limit of checked values (CEL counts code points, not UTF-16 units).
  `1${' '.repeat(4095)}`,
  `1${' '.repeat(4096)}`,
  '\u{1f600}'.repeat(4096),
  `1${'\u{1f600}'.repeat(4096)}`,
];

const intText = fc.integer({ min: -10, max: 70_000 }).map(String);
const space = fc.constantFrom(' ', '  ', '\t', ' \n');
const value = fc.oneof(
  fc.constantFrom(...VALUES),
  intText,
  fc.tuple(intText, space, intText).map(([a, s, b]) => `${a}${s}${b}`),
);

const bound = fc.option(fc.integer({ min: -5, max: 66_000 }), { nil: undefined });
const range = fc
  .tuple(bound, bound)
  .map(([a, b]) => (a !== undefined && b !== undefined && a > b ? [b, a] : [a, b]))
  .map(([min, max]) => ({ ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) }));

const entry = fc
  .tuple(fc.constantFrom(...ENTRY_NAMES), fc.integer({ min: 0, max: 3 }))
  .chain(([name, kind]) => {
    if (kind === 0) return fc.constant({ name });
    if (kind === 1)
      return fc
        .array(fc.constantFrom(...VALUES, '1024 65535', '0 1'), { minLength: 1, maxLength: 3 })
        .map((values) => ({ name, values }));
    if (kind === 2) return range.map((r) => ({ name, ...r }));
    return fc.array(range, { minLength: 1, maxLength: 3 }).map((fields) => ({ name, fields }));
  });

/** A random policy file spec (no selector: each gets its own namespace). */
export const policySpec: fc.Arbitrary<SysctlPolicyFileSpec> = fc
  .record({
    rule: fc.oneof(
      fc.array(entry, { maxLength: 5 }).map((sysctls) => ({ sysctls })),
      fc.subarray(NAME_PATTERNS).map((allowedSysctls) => ({ allowedSysctls })),
      fc.constant({}),
    ),
    includeSafeSysctls: fc.boolean(),
    unsafe: fc.subarray(UNSAFE_PATTERNS, { maxLength: 3 }),
  })
  .map(({ rule, includeSafeSysctls, unsafe }) => {
    const spec: SysctlPolicyFileSpec = {
      ...rule,
      kernelVersion: KERNEL,
      workloadKinds: ['Deployment', 'CronJob'],
    };
    if (includeSafeSysctls) spec.includeSafeSysctls = true;
    if (unsafe.length > 0) spec.allowedUnsafeSysctls = unsafe;
    // A file needs at least one rule.
    if (!('sysctls' in rule) && !('allowedSysctls' in rule) && !includeSafeSysctls && unsafe.length === 0) {
      spec.includeSafeSysctls = true;
    }
    return spec;
  });

export interface PodCase {
  sysctls: { name: string; value: string }[];
  hostNetwork: boolean;
  hostIPC: boolean;
  /** Unset, or set; false only without host namespaces (the API server refuses it with them). */
  hostUsers?: boolean;
  kind: 'Pod' | 'Deployment' | 'CronJob';
}

const podCaseBase = fc.record({
  sysctls: fc.array(
    fc.record({
      name: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(...POD_NAMES) },
        { weight: 1, arbitrary: fc.constantFrom(...MALFORMED) },
      ),
      value,
    }),
    { maxLength: 4 },
  ),
  // Mostly off: with a namespaced sysctl either flag makes API validation refuse the pod.
  hostNetwork: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
  hostIPC: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
  kind: fc.constantFrom('Pod', 'Pod', 'Pod', 'Deployment', 'CronJob'),
  hostUsers: fc.constantFrom(undefined, true, false),
});

export const podCase: fc.Arbitrary<PodCase> = podCaseBase.map(({ hostUsers, ...c }) =>
  hostUsers === undefined || (hostUsers === false && (c.hostNetwork || c.hostIPC)) ? c : { ...c, hostUsers },
);

/** The host flags of a case as pod spec fields. */
function hostFields(c: PodCase): { hostNetwork?: boolean; hostIPC?: boolean; hostUsers?: boolean } {
  return {
    ...(c.hostNetwork ? { hostNetwork: true } : {}),
    ...(c.hostIPC ? { hostIPC: true } : {}),
    ...(c.hostUsers !== undefined ? { hostUsers: c.hostUsers } : {}),
  };
}

/** The object to create for a case, and where. */
export function objectFor(
  c: PodCase,
  name: string,
): { obj: Record<string, unknown>; collection: string; group: string } {
  const p = pod(name, c.sysctls, hostFields(c));
  if (c.kind === 'Pod') return { obj: p, collection: 'pods', group: '/api/v1' };
  const template = { metadata: { labels: { app: name } }, spec: p['spec'] };
  if (c.kind === 'Deployment') {
    return {
      obj: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name },
        spec: { selector: { matchLabels: { app: name } }, template },
      },
      collection: 'deployments',
      group: '/apis/apps/v1',
    };
  }
  const jobTemplate = {
    spec: { template: { ...template, spec: { ...(p['spec'] as object), restartPolicy: 'Never' } } },
  };
  return {
    obj: {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name },
      spec: { schedule: '0 * * * *', jobTemplate },
    },
    collection: 'cronjobs',
    group: '/apis/batch/v1',
  };
}

export interface Decision {
  admit: boolean;
  /** Message of a denial by the sysctl handlers (absent for API validation errors). */
  message?: string;
}

/** In-process: the API server's sysctl validation first, then the file's admit chain. */
export async function localDecision(file: sysctl.SysctlPolicyFile, c: PodCase): Promise<Decision> {
  const p = pod('p', c.sysctls, hostFields(c));
  if (sysctl.validatePodSysctls(p).length > 0) return { admit: false };
  const r = await file.admitChain().admit({ pod: p });
  return r.admit ? { admit: true } : { admit: false, message: r.message! };
}

export interface DiffResult {
  cases: number;
  policies: number;
  allowed: number;
  deniedByPolicy: number;
  deniedByValidation: number;
  disagreements: { policy: SysctlPolicyFileSpec; case: PodCase; local: Decision; api: string }[];
  ms: number;
}

/**
 * Renders `policies` random policies into namespaces `<prefix>-<i>`, then creates `cases`
 * random objects spread over them (`concurrency` in flight) and compares decisions.
 */
export async function runDifferential(
  api: Api,
  opts: { cases: number; policies: number; seed: number; prefix: string; concurrency?: number },
): Promise<DiffResult> {
  const specs = fc.sample(policySpec, { numRuns: opts.policies, seed: opts.seed });
  const cases = fc.sample(fc.tuple(fc.nat(opts.policies - 1), podCase), {
    numRuns: opts.cases,
    seed: opts.seed + 1,
  });
  const files = specs.map(
    (spec, i) =>
      new sysctl.SysctlPolicyFile({
        apiVersion: sysctl.SYSCTL_POLICY_API_VERSION,
        kind: sysctl.SYSCTL_POLICY_KIND,
        metadata: { name: `${opts.prefix}-${i}` },
        spec,
      }),
  );
  const label = `${opts.prefix}-policy`;
  for (let i = 0; i < files.length; i++) {
    await api.namespace(`${opts.prefix}-${i}`, { [label]: String(i) });
    await api.applyPolicy(files[i]!.render({ namespaceSelector: { matchLabels: { [label]: String(i) } } }));
  }
  // A deny-all sentinel applied last: once it bites, the plugin has seen every earlier policy.
  const sentinel = `${opts.prefix}-sentinel`;
  await api.namespace(sentinel, { [label]: 'sentinel' });
  await api.applyPolicy(
    sysctl.renderAdmissionPolicy(new sysctl.SysctlNamePolicy([]), {
      name: sentinel,
      namespaceSelector: { matchLabels: { [label]: 'sentinel' } },
    }),
  );
  const probe = pod('sentinel', [{ name: 'kernel.shm_rmid_forced', value: '1' }]);
  await api.until('the sentinel policy', async () => (await api.dryRun(sentinel, probe)).status === 403);

  const t0 = performance.now();
  const out: DiffResult = {
    cases: cases.length,
    policies: files.length,
    allowed: 0,
    deniedByPolicy: 0,
    deniedByValidation: 0,
    disagreements: [],
    ms: 0,
  };
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const k = next++;
      const [i, c] = cases[k]!;
      const local = await localDecision(files[i]!, c);
      const { obj, collection, group } = objectFor(c, `c${k}`);
      const r = await api.dryRun(`${opts.prefix}-${i}`, obj, collection, group);
      let agree: boolean;
      if (r.status === 201) {
        agree = local.admit;
        out.allowed++;
      } else if (r.status === 422) {
        agree = !local.admit && local.message === undefined;
        out.deniedByValidation++;
      } else if (r.status === 403) {
        agree =
          !local.admit &&
          local.message !== undefined &&
          messageOf(r).endsWith(`denied request: ${local.message}`);
        out.deniedByPolicy++;
      } else {
        agree = false;
      }
      if (!agree)
        out.disagreements.push({ policy: specs[i]!, case: c, local, api: `${r.status} ${messageOf(r)}` });
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 32 }, worker));
  out.ms = performance.now() - t0;
  for (let i = 0; i < files.length; i++) await api.deletePolicy(`${opts.prefix}-${i}`);
  await api.deletePolicy(sentinel);
  return out;
}
