// Upstream v1.37.2's own tables for the ServiceCIDRs controller (TestControllerSync and
// TestController_canDeleteCIDR in pkg/controller/servicecidrs), run against a real kube-apiserver.
//
// Upstream feeds a fake clientset's informer stores and checks the actions of one sync; here each
// row's objects are created on the API server and the outcome of those actions is checked on the
// server: a finalizer patch shows as the finalizer being there (or the object gone once it is
// removed), a status patch as the Ready condition. What a real server cannot hold the same way:
// - a deletion timestamp is set by deleting an object that carries the finalizer, so it is never
//   older than the grace period at first: "deleted longer than the grace period" is the same
//   object once the controller's (shortened) grace period has passed;
// - the object being deleted already carries the finalizer and Ready=True, which the controller
//   wrote when it was created;
// - an IPAddress needs a parentRef (upstream's have none): a Service that does not exist.
// Rows run concurrently, each in address space of its own: upstream's 192.168.0.0/16 becomes
// 10.(100+row).0.0/16 and 2001:db2::/32 becomes fdXX:db2::/32 (XX = row), so a row's wider
// "overlapping" ServiceCIDR covers only its own row.
import { type NetworkingV1Api, type V1ServiceCIDR, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, type ExpectStatic, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import {
  apis,
  createCIDR,
  createIP,
  hasFinalizer,
  readCIDR,
  ready,
  runController,
  waitFor,
  waitGone,
  waitReady,
} from './helpers.js';

let api: ApiServer;
let net: NetworkingV1Api;
let ctl: ReturnType<typeof runController>;
let stopWatch: AbortController | undefined;
/** Every version of every ServiceCIDR the API server sent over a watch, by name. */
const seen = new Map<string, V1ServiceCIDR[]>();
// Upstream's deletionGracePeriod is 10 s; shortened so rows past it do not take that long.
const GRACE = 4000;
const ROW_TIMEOUT = 120_000;

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
  stopWatch = await new Watch(api.kubeConfig).watch(
    '/apis/networking.k8s.io/v1/servicecidrs',
    {},
    (_phase, obj: V1ServiceCIDR) => {
      const name = obj.metadata?.name ?? '';
      seen.set(name, [...(seen.get(name) ?? []), obj]);
    },
    () => {},
  );
  ctl = runController({ kubeConfig: api.kubeConfig, deletionGracePeriodMs: GRACE });
});

afterAll(async () => {
  stopWatch?.abort();
  await ctl?.stop();
  await api?.stop();
});

/** One ServiceCIDR of a row, as upstream's makeServiceCIDR(name, primary, secondary). */
interface CIDR {
  name: string;
  cidrs: string[];
  /** Upstream gives it a deletion timestamp (with the finalizer). */
  deleted?: boolean;
}

/** What the sync leads to on the server. */
type Outcome =
  | 'finalizer and Ready' // patch servicecidrs + patch servicecidrs/status
  | 'finalizer removed' // patch servicecidrs (after the grace period)
  | 'requeued within grace' // no action yet, the finalizer goes once the grace period ends
  | 'Terminating' // patch servicecidrs/status only, finalizer kept
  | 'nothing'; // no action

interface Row {
  name: string;
  cidrs?: CIDR[];
  ips?: string[];
  outcome: Outcome;
}

const make = (name: string, primary: string, secondary?: string, deleted?: boolean): CIDR => ({
  name,
  cidrs: secondary ? [primary, secondary] : [primary],
  ...(deleted ? { deleted } : {}),
});
const deleting = make('deleting-cidr', '192.168.0.0/24', '2001:db2::/64', true);
const deleted = make('deleted-cidr', '192.168.0.0/24', '2001:db2::/64', true);

const syncRows: Row[] = [
  // No ServiceCIDR of its own: a sync of an absent key (the API server's default one always exists).
  { name: 'no existing service CIDRs', outcome: 'nothing' },
  // The API server's own default ServiceCIDR (from --service-cluster-ip-range, not upstream's
  // ranges): the controller gives it the finalizer and Ready=True.
  { name: 'default service CIDR must have finalizer', outcome: 'finalizer and Ready' },
  {
    name: 'service CIDR must have finalizer',
    cidrs: [make('no-finalizer', '192.168.0.0/24', '2001:db2::/64')],
    outcome: 'finalizer and Ready',
  },
  {
    name: 'service CIDR being deleted must remove the finalizer',
    cidrs: [deleted],
    outcome: 'finalizer removed',
  },
  {
    name: 'service CIDR being deleted but within the grace period must be requeued not remove the finalizer',
    cidrs: [deleting],
    outcome: 'requeued within grace',
  },
  {
    name: 'service CIDR being deleted with IPv4 addresses should update the status',
    cidrs: [deleted],
    ips: ['192.168.0.1'],
    outcome: 'Terminating',
  },
  {
    name: 'service CIDR being deleted and overlapping same range and IPv4 addresses should remove the finalizer',
    cidrs: [deleted, make('overlapping', '192.168.0.0/24', '2001:db2::/64')],
    ips: ['192.168.0.1'],
    outcome: 'finalizer removed',
  },
  {
    name: 'service CIDR being deleted and overlapping and IPv4 addresses should remove the finalizer',
    cidrs: [deleted, make('overlapping', '192.168.0.0/16', '2001:db2::/64')],
    ips: ['192.168.0.1'],
    outcome: 'finalizer removed',
  },
  {
    name: 'service CIDR being deleted and not overlapping and IPv4 addresses should update the status',
    cidrs: [deleted, make('overlapping', '192.168.255.0/26', '2001:db2::/64')],
    ips: ['192.168.0.1'],
    outcome: 'Terminating',
  },
  {
    name: 'service CIDR being deleted with IPv6 addresses should update the status',
    cidrs: [deleted],
    ips: ['2001:db2::1'],
    outcome: 'Terminating',
  },
  {
    name: 'service CIDR being deleted and overlapping same range and IPv6 addresses should remove the finalizer',
    cidrs: [deleted, make('overlapping', '192.168.0.0/24', '2001:db2::/64')],
    ips: ['2001:db2::1'],
    outcome: 'finalizer removed',
  },
  {
    name: 'service CIDR being deleted and overlapping and IPv6 addresses should remove the finalizer',
    cidrs: [deleted, make('overlapping', '192.168.0.0/16', '2001:db2::/48')],
    ips: ['2001:db2::1'],
    outcome: 'finalizer removed',
  },
  {
    name: 'service CIDR being deleted and not overlapping and IPv6 addresses should update the status',
    cidrs: [deleted, make('overlapping', '192.168.255.0/26', '2001:db2:a:b::/64')],
    ips: ['2001:db2::1'],
    outcome: 'Terminating',
  },
];

// canDeleteCIDR(cidrSynced): the synced ServiceCIDR is upstream's `kubernetes` with the ranges of
// the first one listed; here it is that ServiceCIDR (renamed: the API server owns `kubernetes`),
// deleted, and `want` is whether its finalizer goes.
const dflt = () => make('kubernetes', '192.168.0.0/24', '2001:db2::/64');
const canDeleteRows: { name: string; cidrs: CIDR[]; ips?: string[]; want: boolean }[] = [
  // Upstream syncs a ServiceCIDR its cache does not hold; a deleted object on a real server is
  // always in the informer's cache, so this is the synced ServiceCIDR alone, with no IPAddress.
  { name: 'empty', cidrs: [], want: true },
  { name: 'CIDR and no IPs', cidrs: [dflt()], want: true },
  { name: 'CIDR with IPs', cidrs: [dflt()], ips: ['192.168.0.24'], want: false },
  { name: 'CIDR without IPs', cidrs: [dflt()], ips: ['192.168.1.24'], want: true },
  {
    name: 'CIDR with IPv4 address referencing the subnet address',
    cidrs: [dflt()],
    ips: ['192.168.0.0'],
    want: true,
  },
  {
    name: 'CIDR with IPv4 address referencing the broadcast address',
    cidrs: [dflt()],
    ips: ['192.168.0.255'],
    want: true,
  },
  {
    name: 'CIDR with IPv6 address referencing the broadcast address',
    cidrs: [dflt()],
    // Upstream's name is 2001:0db2::ffff:ffff:ffff:ffff; the API server only accepts an
    // IPAddress named in canonical form, so the same address is named canonically.
    ips: ['2001:db2::ffff:ffff:ffff:ffff'],
    want: false,
  },
  {
    name: 'CIDR with same range overlapping and IPs',
    cidrs: [dflt(), make('overlapping', '192.168.0.0/24', '2001:db2::/64')],
    ips: ['192.168.0.23'],
    want: true,
  },
  {
    name: 'CIDR with smaller range overlapping and IPs',
    cidrs: [dflt(), make('overlapping', '192.168.0.0/26', '2001:db2::/64')],
    ips: ['192.168.0.23'],
    want: true,
  },
  {
    name: 'CIDR with smaller range overlapping but IPs orphan',
    cidrs: [dflt(), make('overlapping', '192.168.0.0/28', '2001:db2::/64')],
    ips: ['192.168.0.23'],
    want: false,
  },
  {
    name: 'CIDR with larger range overlapping and IPs',
    cidrs: [dflt(), make('overlapping', '192.168.0.0/16', '2001:db2::/64')],
    ips: ['192.168.0.23'],
    want: true,
  },
];

/** Moves an address or prefix of upstream's into row `k`'s own space. */
function place(k: number, s: string): string {
  if (s.startsWith('192.168.')) return `10.${100 + k}.${s.slice('192.168.'.length)}`;
  if (s.startsWith('2001:db2'))
    return `fd${k.toString(16).padStart(2, '0')}:db2${s.slice('2001:db2'.length)}`;
  throw new Error(`no place for ${s}`);
}

/** Names of row `k`: upstream's, suffixed so rows do not share objects. */
const rowName = (k: number, name: string) => `${name}-r${k}`;

async function deleteAndStamp(name: string): Promise<{ at: number; rv: string | undefined }> {
  await net.deleteServiceCIDR({ name });
  const sc = await readCIDR(net, name);
  const at = new Date(sc?.metadata?.deletionTimestamp ?? 0).getTime();
  if (!(at > 0)) throw new Error(`${name} has no deletion timestamp after delete`);
  return { at, rv: sc?.metadata?.resourceVersion };
}

const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

/** Whether the API server ever held `name` with Ready=False (a Terminating status write). */
const everNotReady = (name: string) => (seen.get(name) ?? []).some((o) => ready(o)?.status === 'False');

async function runRow(expect: ExpectStatic, k: number, row: Row): Promise<void> {
  if (row.outcome === 'nothing') {
    // The key names no ServiceCIDR: the sync makes no write and asks for no retry.
    const key = rowName(k, 'absent');
    await expect(ctl.controller.sync(key)).resolves.toBeUndefined();
    expect(await readCIDR(net, key)).toBeUndefined();
    expect(seen.has(key)).toBe(false);
    return;
  }
  if (!row.cidrs) {
    const sc = await waitReady(net, 'kubernetes');
    expect(sc.metadata?.finalizers).toContain(servicecidr.SERVICE_CIDR_PROTECTION_FINALIZER);
    expect(ready(sc)).toMatchObject({ status: 'True', reason: '', message: servicecidr.MESSAGE_READY });
    return;
  }
  for (const ip of row.ips ?? []) {
    const name = place(k, ip);
    await createIP(net, name, name.includes(':') ? 'IPv6' : 'IPv4');
  }
  for (const c of row.cidrs) {
    await createCIDR(
      net,
      rowName(k, c.name),
      c.cidrs.map((p) => place(k, p)),
    );
  }
  for (const c of row.cidrs) await waitReady(net, rowName(k, c.name), 60_000);
  if (row.outcome === 'finalizer and Ready') {
    for (const c of row.cidrs) {
      const sc = await readCIDR(net, rowName(k, c.name));
      expect(sc?.metadata?.finalizers).toEqual([servicecidr.SERVICE_CIDR_PROTECTION_FINALIZER]);
      expect(ready(sc)).toMatchObject({ status: 'True', reason: '', message: servicecidr.MESSAGE_READY });
    }
    return;
  }
  const target = row.cidrs.find((c) => c.deleted);
  if (!target) throw new Error(`row ${row.name} deletes nothing`);
  const name = rowName(k, target.name);
  const stamp = await deleteAndStamp(name);
  switch (row.outcome) {
    case 'requeued within grace': {
      // No write during the grace period: the object stays as the deletion left it.
      await sleepUntil(stamp.at + GRACE - 1000);
      const sc = await readCIDR(net, name);
      expect(hasFinalizer(sc)).toBe(true);
      expect(sc?.metadata?.resourceVersion).toBe(stamp.rv);
      expect(ready(sc)?.status).toBe('True');
      // Requeued: the finalizer goes once the grace period is over, with no status write.
      await waitGone(net, name, 60_000);
      expect(Date.now()).toBeGreaterThanOrEqual(stamp.at + GRACE);
      expect(everNotReady(name)).toBe(false);
      return;
    }
    case 'finalizer removed':
      await waitGone(net, name, 60_000);
      expect(Date.now()).toBeGreaterThanOrEqual(stamp.at + GRACE);
      expect(everNotReady(name)).toBe(false);
      return;
    case 'Terminating': {
      const sc = await waitFor(
        `${name} Terminating`,
        async () => {
          const s = await readCIDR(net, name);
          return ready(s)?.status === 'False' && s;
        },
        60_000,
      );
      expect(ready(sc)).toMatchObject({
        status: 'False',
        reason: servicecidr.REASON_TERMINATING,
        message: servicecidr.MESSAGE_TERMINATING,
      });
      // Well past the grace period the finalizer still holds it.
      await sleepUntil(stamp.at + GRACE + 1000);
      const later = await readCIDR(net, name);
      expect(hasFinalizer(later)).toBe(true);
      expect(ready(later)?.reason).toBe(servicecidr.REASON_TERMINATING);
      return;
    }
  }
}

describe.concurrent('upstream TestControllerSync (real kube-apiserver)', () => {
  syncRows.forEach((row, k) => {
    it(row.name, ({ expect }) => runRow(expect, k, row), ROW_TIMEOUT);
  });
});

describe.concurrent('upstream TestController_canDeleteCIDR (real kube-apiserver)', () => {
  canDeleteRows.forEach((row, i) => {
    const k = syncRows.length + i;
    const synced = { ...(row.cidrs[0] ?? dflt()), deleted: true };
    const cidrs = [synced, ...row.cidrs.slice(1)];
    it(
      row.name,
      ({ expect }) =>
        runRow(expect, k, {
          name: row.name,
          cidrs,
          ...(row.ips ? { ips: row.ips } : {}),
          outcome: row.want ? 'finalizer removed' : 'Terminating',
        }),
      ROW_TIMEOUT,
    );
  });
});
