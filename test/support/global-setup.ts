// vitest globalSetup: before and after the run, kill fixture servers (kube-apiserver, etcd) left
// behind by test processes that died without cleaning up. Only orphans are touched: see
// fixture-procs.ts.
import { sweepOrphans } from './fixture-procs.js';

function report(when: string, pids: number[]): void {
  if (pids.length > 0) console.warn(`${when}: killed orphaned test API server processes ${pids.join(', ')}`);
}

export default function setup(): () => void {
  report('globalSetup', sweepOrphans());
  return () => report('globalTeardown', sweepOrphans());
}
