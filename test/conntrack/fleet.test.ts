// The fleet simulation in small (3 nodes): reconciler processes in their own namespaces against
// the real kube-apiserver remove every stale flow after an EndpointSlice change.
import { execFileSync } from 'node:child_process';
import { expect, it, vi } from 'vitest';
import { runFleet } from '../../benches/fleet/sim.js';
import { goPeerBinary } from '../../benches/lib/harness.js';

vi.setConfig({ testTimeout: 300_000 });

it('3 simulated nodes each delete their stale flows after endpoints are removed', async () => {
  const goPeer = goPeerBinary('conntrack-bench');
  const r = await runFleet({ nodes: 3, flowsPerNode: 40, endpoints: 4, removed: 1, goPeer });
  expect(r.staleLeft).toBe(0);
  // numgen round-robin: 10 of each node's 40 flows went to the removed endpoint.
  expect(r.staleDeleted).toBe(30);
  expect(r.latenciesMs).toHaveLength(3);
  for (const ms of r.latenciesMs) expect(ms).toBeGreaterThan(0);
  expect(r.watchesAfter - r.watchesBefore).toBeGreaterThanOrEqual(6);
  expect(r.rssKB.every((kb) => kb > 0)).toBe(true);
  // One pass per node, one at a time: kubenode fed the kubectl Lists, and the Go peer.
  expect(r.soloSeconds).toHaveLength(3);
  expect(r.goSeconds).toHaveLength(3);
  expect(r.goDeleted).toBe(30);
  expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(
    `kn-fleet-${process.pid}-`,
  );
});
