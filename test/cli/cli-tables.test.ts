// Loading the conntrack tables of a large cluster: 100,000 UDP services with one endpoint each
// must load (read, parse, validate) well under the time the cleanup pass itself takes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { readTable } from '../../ts/cli/conntrack.js';
import { validateTables } from '../../ts/conntrack/tables.js';

const dir = mkdtempSync(join(tmpdir(), 'kubenode-cli-tables-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tables(n: number) {
  const services = [];
  const endpoints: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const name = `ns-${i % 100}/svc-${i}:dns`;
    const o = `${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    services.push({
      name,
      protocol: 'UDP',
      clusterIP: `172.${16 + ((i >> 16) & 15)}.${o.slice(o.indexOf('.') + 1)}`,
      port: 53,
    });
    endpoints[name] = [{ ip: `10.${o}`, port: 5353, serving: i % 2 === 0 }];
  }
  return { services, endpoints };
}

it('100,000 services load in well under the cleanup time', { timeout: 120_000 }, async () => {
  const { services, endpoints } = tables(100_000);
  const sFile = join(dir, 'services.json');
  const eFile = join(dir, 'endpoints.json');
  writeFileSync(sFile, JSON.stringify(services));
  writeFileSync(eFile, JSON.stringify(endpoints));
  const start = performance.now();
  const s = await readTable(sFile, 'services');
  const e = await readTable(eFile, 'endpoints');
  validateTables(s, e);
  const ms = performance.now() - start;
  expect(s).toEqual(services);
  expect(e).toEqual(endpoints);
  // Generous for a loaded CI machine; YAML parsing of these files alone took over 6 s.
  expect(ms).toBeLessThan(5_000);
});

it('a YAML table loads the same values as its JSON form', async () => {
  const { services } = tables(3);
  const yaml = services
    .map((s) => `- name: "${s.name}"\n  protocol: UDP\n  clusterIP: ${s.clusterIP}\n  port: ${s.port}\n`)
    .join('');
  const sFile = join(dir, 'services.yaml');
  writeFileSync(sFile, yaml);
  expect(await readTable(sFile, 'services')).toEqual(services);
});
