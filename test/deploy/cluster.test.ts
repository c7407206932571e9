// deploy/ against a real kube-apiserver with RBAC authorization: every manifest passes a
// server-side dry-run apply; each daemon, started with the arguments of its manifest and a
// ServiceAccount token bound only to its roles from deploy/, does its whole job; and taking
// away any one grant of those roles makes the daemon fail visibly.
//
// "Visibly" means: the daemon's JSON log reports the refused request (the API server's
// `HTTP 403: ... cannot VERB resource "RESOURCE"`, or for a refused watch `err: "Forbidden"`
// with the watch's resource), and when the grant is a list its /readyz answers 500 (its caches
// cannot sync). The log is what an operator reads; /readyz is what the kubelet acts on.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  DiscoveryV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  NetworkingV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  type V1DaemonSet,
  type V1Deployment,
  type V1EndpointSlice,
  type V1PolicyRule,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestNetns, teardown } from '../conntrack/netns.js';
import {
  createCIDR,
  createIP,
  deleteIP,
  readCIDR,
  ready,
  waitGone,
  waitReady,
} from '../servicecidr/helpers.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { type Daemon, httpGet, type LogLine, startDaemon, waitFor } from './daemon.js';
import {
  grants,
  kustomization,
  loadManifests,
  manifest,
  manifestArgs,
  type RoleObject,
} from './manifests.js';

const FIELD_MANAGER = 'kubenode-deploy-test';
const NS = kustomization().namespace;
const RECONCILER = 'kubenode-conntrack-reconciler';
const CONTROLLER = 'kubenode-servicecidr-controller';
const LEASE = 'kubenode-servicecidr-controller';

let api: ApiServer;
let dir: string;
let core: CoreV1Api;
let net: NetworkingV1Api;
let disc: DiscoveryV1Api;
let rbac: RbacAuthorizationV1Api;

beforeAll(async () => {
  api = await startApiServer({ authorizationMode: 'RBAC' });
  dir = mkdtempSync(join(tmpdir(), 'kubenode-deploy-'));
  core = api.kubeConfig.makeApiClient(CoreV1Api);
  net = api.kubeConfig.makeApiClient(NetworkingV1Api);
  disc = api.kubeConfig.makeApiClient(DiscoveryV1Api);
  rbac = api.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
});

afterAll(async () => {
  await api?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig file holding a fresh TokenRequest token of ServiceAccount `ns/sa`. */
async function tokenKubeconfig(ns: string, sa: string): Promise<string> {
  const tr = await core.createNamespacedServiceAccountToken({
    name: sa,
    namespace: ns,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token for ${ns}/${sa}`);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: api.url, caFile: api.caFile }],
    users: [{ name: sa, token }],
    contexts: [{ name: 'test', cluster: 'test', user: sa }],
    currentContext: 'test',
  });
  const file = join(dir, `${ns}.${sa}.kubeconfig`);
  writeFileSync(file, kc.exportConfig());
  return file;
}

/** The node name the reconciler's manifest takes from the downward API, here. */
const NODE = `kubenode-deploy-node-${process.pid}`;

/** Runs a process without CAP_NET_ADMIN: its conntrack dumps are refused, so every pass fails. */
const WITHOUT_NET_ADMIN = ['setpriv', '--bounding-set=-net_admin', '--inh-caps=-net_admin'];

/** A bearer token of a fresh ServiceAccount `ns/name` bound to `clusterRole` (if any). */
async function accountToken(ns: string, name: string, clusterRole?: string): Promise<string> {
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } }).catch(() => {});
  if (clusterRole) {
    await rbac
      .createClusterRoleBinding({
        body: {
          metadata: { name: `${ns}:${name}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
          subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
        },
      })
      .catch(() => {});
  }
  const tr = await core.createNamespacedServiceAccountToken({
    name,
    namespace: ns,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token for ${ns}/${name}`);
  return token;
}

const KIND: Record<string, string> = { servicecidrs: 'ServiceCIDR', ipaddresses: 'IPAddress' };

/**
 * Log lines reporting that the API server refused `verb` on `resource`: its 403 message, or for
 * a watch (client-node keeps only the status text of a refused watch) `err: "Forbidden"` with
 * the watch's resource.
 */
const errorsNaming = (d: Daemon, verb: string, resource: string): LogLine[] =>
  d
    .logs()
    .filter(
      (l) =>
        Object.values(l).some(
          (v) =>
            typeof v === 'string' &&
            v.startsWith('HTTP 403: ') &&
            v.includes(`cannot ${verb} resource "${resource}"`),
        ) ||
        (verb === 'watch' &&
          l.err === 'Forbidden' &&
          (l.resource === resource || l.resource === KIND[resource])),
    );

const applyOne = (o: KubernetesObject, dryRun?: string) =>
  KubernetesObjectApi.makeApiClient(api.kubeConfig).patch(
    o,
    undefined,
    dryRun,
    FIELD_MANAGER,
    true,
    PatchStrategy.ServerSideApply,
  );
const applyAll = async () => {
  for (const o of loadManifests()) await applyOne(o);
};

describe('deploy/', () => {
  it('every manifest is accepted by a server-side dry-run apply, then applies', async () => {
    const client = KubernetesObjectApi.makeApiClient(api.kubeConfig);
    const objs = loadManifests();
    expect(objs.map((o) => o.kind).sort()).toEqual(
      [
        'ClusterRole',
        'ClusterRole',
        'ClusterRole',
        'ClusterRoleBinding',
        'ClusterRoleBinding',
        'DaemonSet',
        'Deployment',
        'Namespace',
        'PodDisruptionBudget',
        'ResourceQuota',
        'Role',
        'RoleBinding',
        'Service',
        'Service',
        'ServiceAccount',
        'ServiceAccount',
      ].sort(),
    );
    for (const o of objs) {
      const r = await applyOne(o, 'All');
      expect(r.metadata?.name).toBe(o.metadata?.name);
      // Namespaced objects are admitted only into an existing namespace.
      if (o.kind === 'Namespace') await applyOne(o);
    }
    // A dry run persists nothing.
    await expect(
      client.read({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: RECONCILER, namespace: NS },
      }),
    ).rejects.toMatchObject({ code: 404 });
    await applyAll();

    // The workloads' security posture and probes, as the API server stored them.
    const ds = (await client.read({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: RECONCILER, namespace: NS },
    })) as V1DaemonSet;
    const pod = ds.spec?.template.spec;
    const c = pod?.containers[0];
    expect(pod?.hostNetwork).toBe(true);
    expect(c?.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
    });
    expect(c?.args?.some((a) => a.startsWith('--netns'))).toBe(false);
    expect(c?.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(c?.livenessProbe?.httpGet?.path).toBe('/healthz');
    // kube-proxy's layout: health on every address, metrics on loopback; the node's name from
    // the downward API.
    expect(c?.args).toEqual(
      expect.arrayContaining([
        '--healthz-bind-address=0.0.0.0:10276',
        '--metrics-bind-address=127.0.0.1:10277',
        '--node-name=$(NODE_NAME)',
      ]),
    );
    expect(c?.env).toContainEqual({
      name: 'NODE_NAME',
      valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } },
    });
    // The reconciler's V8 flags on node's command line (BENCHMARKS.md#fleet-node-24), and the
    // memory it needs.
    expect(c?.command).toEqual([
      'node',
      '--max-semi-space-size=1',
      '--max-opt=0',
      '/opt/kubenode/node_modules/kubenode/dist/cli/main.js',
    ]);
    expect(c?.env?.some((e) => e.name === 'NODE_OPTIONS')).toBe(false);
    expect(c?.resources?.requests?.memory).toBe('128Mi');
    expect(c?.livenessProbe?.httpGet?.port).toBe(10276);
    const dep = manifest<V1Deployment>('Deployment', CONTROLLER);
    expect(dep.spec?.replicas).toBe(2);
    const cc = dep.spec?.template.spec?.containers[0];
    expect(cc?.args).toContain('--leader-elect');
    // The controller's V8 flags on node's command line too, and the memory it peaks at
    // (BENCHMARKS.md#servicecidr).
    expect(cc?.command).toEqual([
      'node',
      '--max-semi-space-size=1',
      '--max-opt=2',
      '--optimize-for-size',
      '--single-threaded',
      '/opt/kubenode/node_modules/kubenode/dist/cli/main.js',
    ]);
    expect(cc?.env?.some((e) => e.name === 'NODE_OPTIONS')).toBe(false);
    expect(cc?.resources?.requests?.memory).toBe('96Mi');
    expect(cc?.args).toContain('--secure-port=10278');
    expect(cc?.readinessProbe?.httpGet).toMatchObject({ scheme: 'HTTPS', path: '/readyz', port: 10278 });
  });
});

/** A namespace, ServiceAccount and copies of a daemon's roles with `drop` removed. */
async function restrictedAccount(
  id: string,
  cluster: RoleObject,
  namespaced: RoleObject | undefined,
  drop: string[],
): Promise<{ ns: string; sa: string }> {
  const ns = `kn-${id}`;
  const sa = 'daemon';
  const keep = grants(cluster, namespaced).filter((g) => !drop.includes(g.label));
  const rules = (role: 'cluster' | 'namespace'): V1PolicyRule[] =>
    keep.filter((g) => g.role === role).map((g) => g.rule);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
  const subjects = [{ kind: 'ServiceAccount', name: sa, namespace: ns }];
  await rbac.createClusterRole({ body: { metadata: { name: `kn-${id}` }, rules: rules('cluster') } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `kn-${id}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `kn-${id}` },
      subjects,
    },
  });
  if (namespaced) {
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'daemon' }, rules: rules('namespace') },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'daemon' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'daemon' },
        subjects,
      },
    });
  }
  return { ns, sa };
}

const controllerRoles = () => ({
  cluster: manifest<RoleObject>('ClusterRole', 'kubenode:servicecidr-controller'),
  lease: manifest<RoleObject>('Role', 'kubenode:servicecidr-controller-leader-election'),
});

function controllerArgs(kubeconfig: string, ns: string): string[] {
  return [...manifestArgs('Deployment', CONTROLLER, ns), '--kubeconfig', kubeconfig, '-v', '2'];
}

describe('servicecidr-controller under its deploy/ roles', () => {
  // Idempotent: the roles and accounts the daemons run with, whichever tests are selected.
  beforeAll(() => applyAll());
  it('leads, reconciles and deletes ServiceCIDRs; a follower is ready; SIGTERM hands the lease over', async () => {
    const kubeconfig = await tokenKubeconfig(NS, CONTROLLER);
    const a = await startDaemon(controllerArgs(kubeconfig, NS));
    let b: Daemon | undefined;
    try {
      await waitFor(
        () => `leader ready (stderr: ${a.stderr()})`,
        async () =>
          (await httpGet(`${a.base}/readyz`)).status === 200 &&
          a.logs().some((l) => l.msg === 'successfully acquired lease'),
        60_000,
      );
      b = await startDaemon(controllerArgs(kubeconfig, NS));
      const follower = b;
      // Not leading, yet ready: it has nothing to sync.
      await waitFor(
        () => `follower ready (stderr: ${follower.stderr()})`,
        async () => (await httpGet(`${follower.base}/readyz`)).status === 200,
        60_000,
      );
      expect(follower.logs().some((l) => l.msg === 'successfully acquired lease')).toBe(false);

      await createCIDR(net, 'deploy-a', ['10.250.0.0/24']);
      await waitReady(net, 'deploy-a', 30_000);
      await createIP(net, '10.250.0.5', 'IPv4');
      await net.deleteServiceCIDR({ name: 'deploy-a' });
      await waitFor(
        'Terminating',
        async () => ready(await readCIDR(net, 'deploy-a'))?.reason === 'Terminating',
      );
      await deleteIP(net, '10.250.0.5');
      await waitGone(net, 'deploy-a', 40_000);

      // /metrics over HTTPS for whom the API server allows (deploy/'s kubenode:metrics-reader),
      // 403 for any other account (the controller's own), 401 without a token.
      const reader = await accountToken(NS, 'metrics-scraper', 'kubenode:metrics-reader');
      const scrape = await httpGet(`${a.base}/metrics`, reader);
      expect(scrape.status, scrape.body).toBe(200);
      const metrics = scrape.body;
      expect(metrics).toMatch(/^workqueue_adds_total\{name="ipaddresses"\} [1-9]/m);
      expect(metrics).toMatch(
        /^kubenode_leader_election_master_status\{name="kubenode-servicecidr-controller"\} 1$/m,
      );
      expect(metrics).toMatch(
        /^kubenode_build_info\{version="[^"]+",git_commit="[^"]+",node_version="v[^"]+"\} 1$/m,
      );
      expect(metrics).toMatch(/^process_resident_memory_bytes [1-9]/m);
      expect(metrics).toMatch(/^nodejs_eventloop_lag_seconds /m);
      expect(metrics).toMatch(/^kubenode_servicecidr_controller_watch_restarts_total 0$/m);
      const followerMetrics = await httpGet(`${follower.base}/metrics`, reader);
      expect(followerMetrics.body).toMatch(
        /^kubenode_leader_election_master_status\{name="kubenode-servicecidr-controller"\} 0$/m,
      );
      const own = await accountToken(NS, CONTROLLER);
      expect(await httpGet(`${a.base}/metrics`, own)).toEqual({
        status: 403,
        body: `forbidden: User "system:serviceaccount:${NS}:${CONTROLLER}" cannot get path "/metrics"\n`,
      });
      expect(await httpGet(`${a.base}/metrics`, 'not-a-token')).toEqual({
        status: 401,
        body: 'Unauthorized\n',
      });
      expect(await httpGet(`${a.base}/metrics`)).toEqual({ status: 401, body: 'Unauthorized\n' });
      for (const path of ['/healthz', '/livez', '/readyz']) {
        expect(await httpGet(`${a.base}${path}`)).toEqual({ status: 200, body: 'ok' });
      }
      for (const l of a.logs()) {
        expect(typeof l.ts).toBe('number');
        expect(typeof l.msg).toBe('string');
      }
      expect(a.logs().some((l) => 'err' in l)).toBe(false);

      // SIGTERM: the leader drains and releases the Lease, the follower takes over at once
      // (well before the 15 s lease duration would run out).
      const stoppedAt = Date.now();
      expect(await a.stop()).toBe(0);
      expect(a.logs().some((l) => l.msg === 'released leader lease')).toBe(true);
      await waitFor(
        () => `takeover (stderr: ${follower.stderr()})`,
        () => follower.logs().some((l) => l.msg === 'successfully acquired lease'),
        15_000,
      );
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
      const lease = await api.kubeConfig
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ name: LEASE, namespace: NS });
      expect(lease.spec?.holderIdentity).toMatch(/_/);
      const code = await follower.stop();
      expect(code, follower.stderr()).toBe(0);
    } finally {
      await a.stop();
      await b?.stop();
    }
  }, 180_000);

  // Each grant of the ClusterRole and the Role, taken away in turn. Events are written only when
  // the Ready condition cannot be set, so that variant also loses `patch servicecidrs/status`
  // (the variant without it alone shows the Event being written). The `list` grants serve the
  // LIST fallback of the watch-list informers (`list: true`): without them the controller works.
  // The two reviews serve the secure port's /metrics: without them a scrape is refused (500) and
  // the log names the refused review.
  const variants: { without: string; also?: string[]; list?: boolean; scrape?: boolean }[] = [
    { without: 'list servicecidrs', list: true },
    { without: 'watch servicecidrs' },
    { without: 'patch servicecidrs' },
    { without: 'patch servicecidrs/status' },
    { without: 'list ipaddresses', list: true },
    { without: 'watch ipaddresses' },
    { without: 'create events', also: ['patch servicecidrs/status'] },
    // A repeated Event is a PATCH of its count (client-go's correlator), so the retries of a
    // failed status write need it.
    { without: 'patch events', also: ['patch servicecidrs/status'] },
    { without: 'create leases' },
    { without: 'get leases' },
    { without: 'update leases' },
    { without: 'create tokenreviews', scrape: true },
    { without: 'create subjectaccessreviews', scrape: true },
  ];

  it('covers every grant of its roles', () => {
    const { cluster, lease } = controllerRoles();
    expect(
      grants(cluster, lease)
        .map((g) => g.label)
        .sort(),
    ).toEqual(variants.map((v) => v.without).sort());
  });

  it('fails visibly without any one grant', async () => {
    const { cluster, lease } = controllerRoles();
    let i = 0;
    // One at a time: they act on the same ServiceCIDRs.
    for (const v of variants) {
      i++;
      const { ns, sa } = await restrictedAccount(`sc-${i}`, cluster, lease, [v.without, ...(v.also ?? [])]);
      const d = await startDaemon(controllerArgs(await tokenKubeconfig(ns, sa), ns));
      const [verb, resource] = v.without.split(' ') as [string, string];
      try {
        const name = `variant-${i}`;
        await createCIDR(net, name, [`10.251.${i}.0/24`]);
        if (v.list) {
          // The informers take their initial state over the watch (watch-list); LIST is only
          // the fallback for an API server that refuses that, which this one does not. So
          // without the grant the controller still works, and says nothing about it.
          await waitReady(net, name, 30_000);
          expect(errorsNaming(d, verb, resource)).toEqual([]);
          continue;
        }
        const reader = v.scrape ? await accountToken(NS, 'metrics-scraper', 'kubenode:metrics-reader') : '';
        await waitFor(
          () => `without ${v.without}: an error naming it (stderr: ${d.stderr()})`,
          async () => {
            if (v.scrape) {
              const r = await httpGet(`${d.base}/metrics`, reader);
              if (r.status !== 0) expect(r.status, r.body).toBe(500);
            }
            return errorsNaming(d, verb, resource).length > 0;
          },
          30_000,
        );
        if (v.without === 'patch servicecidrs/status') {
          // With `create events`, the failure is also an Event on the ServiceCIDR.
          await waitFor(`a Warning Event on ${name}`, async () =>
            (await core.listNamespacedEvent({ namespace: 'default' })).items.some(
              (e) => e.involvedObject.name === name && e.reason === 'KubernetesServiceCIDRError',
            ),
          );
        }
      } finally {
        const code = await d.stop();
        expect(code, `without ${v.without}: ${d.stderr()}`).toBe(0);
      }
    }
  }, 300_000);
});

describe('conntrack reconcile under its deploy/ role', () => {
  const VIP = '10.96.0.10';
  const EP = ['10.244.0.1', '10.244.0.2'];
  let ns: TestNetns;

  beforeAll(async () => {
    await applyAll();
    ns = new TestNetns();
    ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
    const rules = EP.map((ip, i) => `ip daddr ${VIP} udp dport 53 udp sport ${40001 + i} dnat to ${ip}:5353`);
    ns.nft(
      `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n`,
    );
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'dns' },
        spec: { clusterIP: VIP, clusterIPs: [VIP], ports: [{ name: 'p', protocol: 'UDP', port: 53 }] },
      },
    });
    await disc.createNamespacedEndpointSlice({
      namespace: 'default',
      body: {
        metadata: { name: 'dns-1', labels: { 'kubernetes.io/service-name': 'dns' } },
        addressType: 'IPv4',
        ports: [{ name: 'p', protocol: 'UDP', port: 5353 }],
        endpoints: EP.map((ip) => ({ addresses: [ip], conditions: { ready: true, serving: true } })),
      },
    });
  });

  afterAll(() => {
    teardown(ns, undefined);
  });

  const reconcilerArgs = (kubeconfig: string, dryRun = false) => [
    ...manifestArgs('DaemonSet', RECONCILER, NS, NODE),
    '--kubeconfig',
    kubeconfig,
    // The manifest's default is the host namespace (hostNetwork); here, the test's namespace.
    '--netns',
    ns.path,
    ...(dryRun ? ['--dry-run'] : []),
  ];
  /** An update of the EndpointSlice (an annotation) that the reconciler sees as a change. */
  const touchSlice = async () => {
    const slice = await disc.readNamespacedEndpointSlice({ name: 'dns-1', namespace: 'default' });
    slice.metadata = {
      ...slice.metadata,
      annotations: { ...slice.metadata?.annotations, 'kubenode.test/touched': String(Date.now()) },
    };
    await disc.replaceNamespacedEndpointSlice({ name: 'dns-1', namespace: 'default', body: slice });
  };
  const flows = () =>
    ns
      .conntrackL('ipv4')
      .map((e) => `${e.sport}->${e.replySrc}`)
      .sort();

  it('watches and cleans the stale flows of a removed endpoint', async () => {
    ns.sendUdp(EP.map((_, i) => [40001 + i, VIP, 53] as [number, string, number]));
    expect(flows()).toEqual([`40001->${EP[0]}`, `40002->${EP[1]}`]);
    const d = await startDaemon(reconcilerArgs(await tokenKubeconfig(NS, RECONCILER)));
    try {
      await waitFor(
        () => `ready (stderr: ${d.stderr()})`,
        async () => (await httpGet(`${d.base}/readyz`)).status === 200,
        60_000,
      );
      await waitFor(
        () => `first pass (stderr: ${d.stderr()})`,
        () => d.logs().some((l) => l.msg === 'Cleaned stale conntrack entries'),
      );
      const slice = await disc.readNamespacedEndpointSlice({ name: 'dns-1', namespace: 'default' });
      slice.endpoints = slice.endpoints.filter((e) => e.addresses[0] !== EP[1]);
      await disc.replaceNamespacedEndpointSlice({
        name: 'dns-1',
        namespace: 'default',
        body: slice as V1EndpointSlice,
      });
      await waitFor(
        () => `the stale flow gone (flows: ${flows()}, stderr: ${d.stderr()})`,
        () => flows().length === 1,
      );
      expect(flows()).toEqual([`40001->${EP[0]}`]);
      // The kernel may show the flow gone a moment before the pass reports.
      const pass = await waitFor(
        () => `the pass's log line (stderr: ${d.stderr()})`,
        () => d.logs().find((l) => l.msg === 'Cleaned stale conntrack entries' && l.deleted === 1),
        5_000,
      );
      expect(pass).toMatchObject({ v: 0, ipFamily: 'IPv4', stale: 1, deleted: 1, failed: 0 });
      expect(typeof pass?.ts).toBe('number');
      const metrics = (await httpGet(`${d.base}/metrics`)).body;
      expect(metrics).toMatch(/^kubenode_conntrack_reconciler_deleted_entries_total\{ip_family="IPv4"\} 1$/m);
      expect(metrics).toMatch(
        /^kubenode_conntrack_reconciler_sync_duration_seconds_count\{ip_family="IPv4"\} [1-9]/m,
      );
      expect(metrics).toMatch(
        /^kubenode_conntrack_reconciler_passes_total\{ip_family="IPv4",path="full"\} [1-9]/m,
      );
      expect(metrics).toMatch(/^# TYPE kubenode_conntrack_reconciler_failed_passes_total counter$/m);
      expect(metrics).toMatch(/^kubenode_conntrack_reconciler_watch_restarts_total 0$/m);
      expect(metrics).toMatch(
        /^kubenode_build_info\{version="[^"]+",git_commit="[^"]+",node_version="v[^"]+"\} 1$/m,
      );
      expect(metrics).toMatch(/^process_open_fds [1-9]/m);
      expect(metrics).not.toMatch(/^kubeproxy_/m);
      expect((await httpGet(`${d.base}/healthz`)).body).toBe('ok');
      expect(d.logs().some((l) => 'err' in l)).toBe(false);
    } finally {
      expect(await d.stop()).toBe(0);
    }
  }, 120_000);

  it("reports a failed pass as a Warning Event on its Node, named by the manifest's downward API", async () => {
    const d = await startDaemon(reconcilerArgs(await tokenKubeconfig(NS, RECONCILER), true), {
      wrap: WITHOUT_NET_ADMIN,
    });
    try {
      const event = await waitFor(
        () => `a Warning Event on Node ${NODE} (stderr: ${d.stderr()})`,
        async () =>
          (await core.listNamespacedEvent({ namespace: 'default' })).items.find(
            (e) => e.involvedObject.kind === 'Node' && e.involvedObject.name === NODE,
          ),
        60_000,
      );
      expect(event).toMatchObject({
        type: 'Warning',
        reason: 'ConntrackCleanupFailed',
        source: { component: 'kubenode-conntrack-reconciler', host: NODE },
      });
      expect(event.message).toMatch(/^IPv4 conntrack cleanup failed: .*CAP_NET_ADMIN/);
      const metrics = (await httpGet(`${d.base}/metrics`)).body;
      expect(metrics).toMatch(
        /^kubenode_conntrack_reconciler_failed_passes_total\{ip_family="IPv4"\} [1-9]/m,
      );
    } finally {
      expect(await d.stop()).toBe(0);
    }
  }, 120_000);

  it('fails visibly without any one grant', async () => {
    const role = manifest<RoleObject>('ClusterRole', 'kubenode:conntrack-reconciler');
    const labels = grants(role).map((g) => g.label);
    expect(labels.sort()).toEqual([
      'create events',
      'list endpointslices',
      'list services',
      'patch events',
      'watch endpointslices',
      'watch services',
    ]);
    // They only read from the API server (and run dry): the reads at once, then the Events at
    // once (four daemons at a time, as many as a loaded machine starts within the wait). The
    // Events are written when a pass fails (a repeat patches the count): those daemons run
    // without CAP_NET_ADMIN.
    const batch = (which: string[]) =>
      Promise.all(
        which.map(async (without) => {
          const i = labels.indexOf(without);
          const { ns: account, sa } = await restrictedAccount(`ct-${i}`, role, undefined, [without]);
          const events = without.endsWith(' events');
          const d = await startDaemon(
            reconcilerArgs(await tokenKubeconfig(account, sa), true),
            events ? { wrap: WITHOUT_NET_ADMIN } : {},
          );
          const [verb, resource] = without.split(' ') as [string, string];
          try {
            let polls = 0;
            const errors = await waitFor(
              () => `without ${without}: an error naming it (stderr: ${d.stderr()})`,
              async () => {
                // A failed pass is retried on the next change: every 2 s a change to the
                // EndpointSlice, so the Event repeats and its count is patched.
                if (verb === 'patch' && polls++ % 20 === 10) await touchSlice();
                const e = errorsNaming(d, verb, resource);
                return e.length > 0 && e;
              },
              60_000,
            );
            expect(errors[0]).toMatchObject({ msg: 'Conntrack reconcile failed' });
            if (verb === 'list') expect((await httpGet(`${d.base}/readyz`)).status).toBe(500);
          } finally {
            const code = await d.stop();
            expect(code, `without ${without}: ${d.stderr()}`).toBe(0);
          }
        }),
      );
    await batch(labels.filter((l) => !l.endsWith(' events')));
    await batch(labels.filter((l) => l.endsWith(' events')));
  }, 240_000);
});
