// What a reconciler process pays for a burst of watch events under the V8 flags it runs with:
// the objects arrive as JSON text, are parsed and turned into the cleanup tables five times over;
// prints the CPU time of that work and the RSS after it. Plain node on the built dist/ (no tsx,
// whose loader has a heap of its own).
//   node [V8 flags] benches/fleet/burst-cost.mjs [objects]      (default 5000)
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const repo = join(import.meta.dirname, '..', '..');
const { endpointsTable, serviceEntries, udpPortKeys } = await import(
  pathToFileURL(join(repo, 'dist', 'conntrack', 'k8s.js')).href
);

const n = Number(process.argv[2] ?? 5000);
// One Service-and-EndpointSlice-shaped object per index (both readers take what they need).
const text = JSON.stringify(
  Array.from({ length: n }, (_, i) => ({
    metadata: { namespace: `ns${i % 50}`, name: `s${i}`, labels: { 'kubernetes.io/service-name': `s${i}` } },
    spec: {
      clusterIP: `10.96.${i >> 8}.${i & 255}`,
      clusterIPs: [`10.96.${i >> 8}.${i & 255}`],
      ports: [{ name: 'dns', protocol: 'UDP', port: 53 }],
    },
    addressType: 'IPv4',
    endpoints: Array.from({ length: 5 }, (_, j) => ({
      addresses: [`10.${(i >> 8) & 255}.${i & 255}.${j}`],
      conditions: { ready: true, serving: true },
    })),
    ports: [{ name: 'dns', protocol: 'UDP', port: 53 }],
  })),
);
const before = process.cpuUsage();
for (let r = 0; r < 5; r++) {
  const objs = JSON.parse(text);
  objs.flatMap((s) => serviceEntries(s, 'IPv4'));
  endpointsTable(objs, 'IPv4');
  udpPortKeys(objs, 'IPv4');
}
const cpu = process.cpuUsage(before);
console.log(
  JSON.stringify({
    flags: [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)].join(' '),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    rssMiB: Math.round(process.memoryUsage().rss / 1048576),
  }),
);
