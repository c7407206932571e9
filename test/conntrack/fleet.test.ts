// The fleet simulation in small (3 nodes): reconciler processes in their own namespaces against
// the real kube-apiserver remove every stale flow after an EndpointSlice change; upstream
// kube-proxy beside them does the same in namespaces of its own.
import { execFileSync } from 'node:child_process';
import { expect, it, vi } from 'vitest';
import { runFleet } from '../../benches/fleet/sim.js';
import { goPeerBinary } from '../../benches/lib/harness.js';

vi.setConfig({ testTimeout: 300_000 });

// Removing one of four endpoints, then all four: a service without serving endpoints loses every
// flow to its VIP under v1.37, in kubenode and in kube-proxy v1.37.2 alike.
it.each([
  [1, 'one of four endpoints is removed'],
  [4, 'every endpoint is removed'],
])('3 simulated nodes each delete their stale flows after %i endpoint(s) go (%s)', async (removed) => {
  const goPeer = goPeerBinary('conntrack-bench');
  const r = await runFleet({ nodes: 3, flowsPerNode: 40, endpoints: 4, removed, goPeer, restSeconds: 1 });
  expect(r.staleLeft).toBe(0);
  // numgen round-robin: 10 of each node's 40 flows went to each endpoint.
  const stale = 3 * 10 * removed;
  expect(r.staleDeleted).toBe(stale);
  expect(r.latenciesMs).toHaveLength(3);
  for (const ms of r.latenciesMs) expect(ms).toBeGreaterThan(0);
  expect(r.watchesAfter - r.watchesBefore).toBeGreaterThanOrEqual(6);
  expect(r.rssKB.every((kb) => kb > 0)).toBe(true);
  // One pass per node, one at a time: kubenode fed the kubectl Lists, and the Go peer.
  expect(r.soloSeconds).toHaveLength(3);
  expect(r.goSeconds).toHaveLength(3);
  expect(r.goDeleted).toBe(stale);
  expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(
    `kn-fleet-${process.pid}-`,
  );
});

it("upstream kube-proxy beside each node's reconciler cleans its own flows, and both report their RSS", async () => {
  const kubeProxy = goPeerBinary('kube-proxy');
  const r = await runFleet({
    nodes: 2,
    flowsPerNode: 40,
    endpoints: 4,
    removed: 1,
    kubeProxy,
    restSeconds: 1,
  });
  expect(r.staleLeft).toBe(0);
  expect(r.staleDeleted).toBe(2 * 10);
  // kube-proxy's own rules spread its flows (at random), so some went to the removed endpoint.
  expect(r.kubeProxyStaleBefore).toBeGreaterThan(0);
  expect(r.kubeProxyStaleLeft).toBe(0);
  expect(r.kubeProxyLatenciesMs.every((ms) => ms > 0)).toBe(true);
  expect(r.kubeProxyRssKB).toHaveLength(2);
  expect(r.kubeProxyRssKB.every((kb) => kb > 0)).toBe(true);
  // One reading per process of each kind, over the change's window.
  expect(r.changeCpuMs).toHaveLength(2);
  expect(r.changeCpuMs.every((ms) => ms > 0)).toBe(true);
  expect(r.kubeProxyChangeCpuMs).toHaveLength(2);
  expect(r.kubeProxyChangeCpuMs.every((ms) => ms > 0)).toBe(true);
  expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(
    `kn-fleet-kp-${process.pid}-`,
  );
});
