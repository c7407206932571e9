// The fleet simulation in small (3 nodes): reconciler processes in their own namespaces against
// the real kube-apiserver remove every stale flow after an EndpointSlice change.
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
  const r = await runFleet({ nodes: 3, flowsPerNode: 40, endpoints: 4, removed, goPeer });
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
