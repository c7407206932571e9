// One kubenode cleanStaleEntries pass in a fresh process, so CPU time and peak RSS belong to
// it alone. Prints one JSON line.   tsx clean-child.ts NETNS TABLES.json
import { readFileSync } from 'node:fs';
import { conntrack } from '../../ts/index.js';

const [netns, tablesFile] = process.argv.slice(2) as [string, string];
const { services, endpoints } = JSON.parse(readFileSync(tablesFile, 'utf8'));
const ct = await conntrack.Conntrack.open({ netns });
global.gc?.();
const rssBefore = process.memoryUsage().rss;
const u0 = process.resourceUsage();
const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics: null });
const u1 = process.resourceUsage();
ct.close();
console.log(
  JSON.stringify({
    ...r,
    cpuSeconds: (u1.userCPUTime - u0.userCPUTime + u1.systemCPUTime - u0.systemCPUTime) / 1e6,
    rssBeforeKB: Math.round(rssBefore / 1024),
    maxRssKB: u1.maxRSS,
  }),
);
