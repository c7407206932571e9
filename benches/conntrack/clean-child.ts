// One kubenode cleanStaleEntries pass in a fresh process, so CPU time and peak RSS belong to
// it alone. Prints one JSON line.   tsx clean-child.ts NETNS TABLES.json [BEFORE.json] [--targeted]
// With BEFORE, an untimed first pass with those tables runs on the same handle, so the timed
// pass is an endpoint change (the handle chooses full or targeted; --targeted pins targeted).
// With --index the handle's event index is on: the untimed first pass builds it (its time, the
// index's size and the process's RSS growth are reported as `index`), the timed one uses it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// Only the pinned pass loads the tests' binary (the pin is a test hook), so the hooks module is
// imported first there; the others time the release binary.
const targeted = process.argv.includes('--targeted');
const indexed = process.argv.includes('--index');
const testing = targeted ? await import('../../ts/conntrack/testing.js') : undefined;
const { conntrack } = await import('../../ts/index.js');

const [netns, tablesFile, beforeFile] = process.argv.slice(2).filter((a) => !a.startsWith('--')) as [
  string,
  string,
  string | undefined,
];
const read = (f: string) => JSON.parse(readFileSync(f, 'utf8'));
const { services, endpoints } = read(tablesFile);
const ct = await conntrack.Conntrack.open({ netns });
if (indexed) {
  await conntrack.enableEventIndex(ct);
  // With nf_conntrack_events at its default (2) only flows created while a listener exists
  // send events: the stale flows are made again now, so deleting them costs what it costs on
  // a node whose daemon subscribed before its flows were created.
  const fill = JSON.parse(process.env.KN_CT_BENCH_FILL ?? '[]') as string[];
  const [helper, ...args] = fill;
  if (helper) {
    for (const cmd of [
      ['delete-floor', ...args],
      ['fill', ...args, '--stale-only'],
    ]) {
      const r = spawnSync(helper, cmd, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${helper} ${cmd.join(' ')}: ${r.stderr}`);
    }
  }
}
let index: Record<string, unknown> | undefined;
if (beforeFile) {
  const before = read(beforeFile);
  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  const b = await conntrack.cleanStaleEntries(ct, 'IPv4', before.services, before.endpoints, {
    metrics: null,
  });
  if (indexed) {
    const s = conntrack.eventIndexStats(ct);
    index = {
      ...s,
      buildSeconds: b.seconds,
      rssGrowthKB: Math.round((process.memoryUsage().rss - rss0) / 1024),
    };
  }
}
testing?.injectFaults(ct, { preferTargeted: true });
global.gc?.();
const rssBefore = process.memoryUsage().rss;
const u0 = process.resourceUsage();
const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics: null });
const u1 = process.resourceUsage();
const after = indexed ? conntrack.eventIndexStats(ct) : undefined;
ct.close();
console.log(
  JSON.stringify({
    ...r,
    ...(index ? { index, after } : {}),
    cpuSeconds: (u1.userCPUTime - u0.userCPUTime + u1.systemCPUTime - u0.systemCPUTime) / 1e6,
    rssBeforeKB: Math.round(rssBefore / 1024),
    maxRssKB: u1.maxRSS,
  }),
);
