// A daemon's process and runtime series: client_golang's process collector's names and help,
// values read from this process's procfs, and nothing running between scrapes.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { daemonRegistry } from '../ts/cli/daemon.js';
import { parseLimits, parseNetstatOctets } from '../ts/process-metrics.js';

const repo = join(import.meta.dirname, '..');

/** The value of the unlabelled series `name` in a text exposition. */
function value(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`${name} not in:\n${text}`);
  return Number(m[1]);
}

describe('process metrics', () => {
  it("client_golang's process series, with its help text", async () => {
    const text = await daemonRegistry().metrics();
    for (const [name, type, help] of [
      ['process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds.'],
      ['process_open_fds', 'gauge', 'Number of open file descriptors.'],
      ['process_max_fds', 'gauge', 'Maximum number of open file descriptors.'],
      ['process_virtual_memory_bytes', 'gauge', 'Virtual memory size in bytes.'],
      ['process_virtual_memory_max_bytes', 'gauge', 'Maximum amount of virtual memory available in bytes.'],
      ['process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.'],
      ['process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds.'],
      [
        'process_network_receive_bytes_total',
        'counter',
        'Number of bytes received by the process over the network.',
      ],
      [
        'process_network_transmit_bytes_total',
        'counter',
        'Number of bytes sent by the process over the network.',
      ],
    ]) {
      expect(text).toContain(`# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`);
    }
    expect(text).toMatch(/^kubenode_build_info\{.*\} 1$/m);
    expect(text).toContain(`nodejs_version_info{version="${process.version}",`);
  });

  it('values are this process’s, read at the scrape', async () => {
    const registry = daemonRegistry();
    const fds = readdirSync('/proc/self/fd').length;
    const opened = [
      openSync(import.meta.filename, 'r'),
      openSync(import.meta.filename, 'r'),
      openSync(import.meta.filename, 'r'),
    ];
    try {
      const t = await registry.metrics();
      // readdir holds one descriptor of its own while it counts, as client_golang's does.
      expect(value(t, 'process_open_fds')).toBeGreaterThanOrEqual(fds + 3);
      expect(value(t, 'process_open_fds')).toBeLessThanOrEqual(fds + 4);
      const rss = process.memoryUsage.rss();
      expect(Math.abs(value(t, 'process_resident_memory_bytes') - rss) / rss).toBeLessThan(0.2);
      expect(value(t, 'process_virtual_memory_bytes')).toBeGreaterThan(rss);
      const started = Date.now() / 1000 - process.uptime();
      expect(Math.abs(value(t, 'process_start_time_seconds') - started)).toBeLessThan(2);
      const limits = readFileSync('/proc/self/limits', 'latin1');
      expect(value(t, 'process_max_fds')).toBe(Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1]));
    } finally {
      for (const fd of opened) closeSync(fd);
    }
    const cpu0 = value(await registry.metrics(), 'process_cpu_seconds_total');
    const end = performance.now() + 60;
    while (performance.now() < end) {
      // Spend CPU the counter must show.
    }
    expect(value(await registry.metrics(), 'process_cpu_seconds_total') - cpu0).toBeGreaterThanOrEqual(0.05);
  });

  it('reads process.memoryUsage() once a scrape for its four gauges, and again at the next', async () => {
    const registry = daemonRegistry();
    const spy = vi.spyOn(process, 'memoryUsage');
    try {
      const first = await registry.metrics();
      await registry.metrics();
      expect(spy).toHaveBeenCalledTimes(2);
      expect(value(first, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(value(first, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
    }
  });

  it('the event-loop lag is measured at the scrape: a blocked loop shows', async () => {
    const registry = daemonRegistry();
    const scrape = registry.metrics();
    const end = performance.now() + 500;
    while (performance.now() < end) {
      // Block the loop while the scrape waits for it.
    }
    expect(value(await scrape, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0.5);
    // Unblocked, the lag is a loop turn: half the blocked one leaves room for a loaded machine.
    expect(value(await registry.metrics(), 'nodejs_eventloop_lag_seconds')).toBeLessThan(0.25);
  });

  it("another process's open-file limit (prlimit; Node raises the soft limit to the hard one)", () => {
    const out = execFileSync(
      'prlimit',
      [
        '--nofile=777:777',
        process.execPath,
        '--input-type=module',
        '-e',
        `const { daemonRegistry } = await import(${JSON.stringify(pathToFileURL(join(repo, 'dist', 'cli', 'daemon.js')).href)});
         process.stdout.write(await daemonRegistry().metrics());`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(value(out, 'process_max_fds')).toBe(777);
  });

  it('procfs forms: "unlimited" is the largest uint64, IpExt octets by column name', () => {
    const limits =
      'Limit                     Soft Limit           Hard Limit           Units     \n' +
      'Max open files            1024                 524288               files     \n' +
      'Max address space         unlimited            unlimited            bytes     \n';
    expect(parseLimits(limits)).toEqual({ openFiles: 1024, addressSpace: 2 ** 64 });
    expect(parseLimits('')).toEqual({ openFiles: undefined, addressSpace: undefined });
    const netstat =
      'TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 0\n' +
      'IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets\n' +
      'IpExt: 0 0 0 0 0 0 123456 654321\n';
    expect(parseNetstatOctets(netstat)).toEqual({ in: 123456, out: 654321 });
    expect(parseNetstatOctets('TcpExt: A\nTcpExt: 1\n')).toBeUndefined();
  });
});

describe('nothing runs between scrapes', () => {
  /** ms of CPU a second a Node child uses at rest over 2 s after `setup` (schedstat, all threads). */
  function restCpu(setup: string): number {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { readdirSync, readFileSync } from 'node:fs';
         ${setup}
         const cpu = () => readdirSync('/proc/self/task').reduce((n, t) => n + Number(readFileSync('/proc/self/task/' + t + '/schedstat', 'utf8').split(' ')[0]), 0);
         await new Promise((r) => setTimeout(r, 500));
         const c0 = cpu();
         await new Promise((r) => setTimeout(r, 2000));
         console.log((cpu() - c0) / 1e6 / 2);`,
      ],
      { encoding: 'utf8', timeout: 60_000, cwd: repo },
    );
    return Number(out.trim());
  }

  it("a daemon's registry costs no CPU at rest; prom-client's default metrics' 10 ms event-loop sampler does", () => {
    const daemon = pathToFileURL(join(repo, 'dist', 'cli', 'daemon.js')).href;
    const ours = restCpu(`(await import(${JSON.stringify(daemon)})).daemonRegistry();`);
    const defaults = restCpu(
      `import { createRequire } from 'node:module';
       const p = createRequire(${JSON.stringify(join(repo, 'package.json'))})('prom-client');
       p.collectDefaultMetrics({ register: new p.Registry() });`,
    );
    expect(ours).toBeLessThan(2);
    expect(defaults).toBeGreaterThan(ours * 4);
  });

  it("a daemon's registry loads neither prom-client's Pushgateway nor its default metrics' builtins", () => {
    const loaded = (code: string) =>
      JSON.parse(
        execFileSync(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            `const before = new Set(process.moduleLoadList);
             ${code}
             console.log(JSON.stringify(process.moduleLoadList.filter((m) => !before.has(m))));`,
          ],
          { encoding: 'utf8', timeout: 60_000, cwd: repo },
        ),
      ) as string[];
    // child_process too, but commander (imported by dist/cli/daemon.js) loads it; the daemons'
    // bundles defer it (test/cli/daemon-groups.test.ts).
    const heavy = ['NativeModule zlib', 'NativeModule v8', 'NativeModule perf_hooks'];
    const ours = loaded(
      `const r = (await import(${JSON.stringify(pathToFileURL(join(repo, 'dist', 'cli', 'daemon.js')).href)})).daemonRegistry();
       await r.metrics();`,
    );
    expect(ours.filter((m) => heavy.includes(m))).toEqual([]);
    const index = loaded(
      `import { createRequire } from 'node:module';
       createRequire(${JSON.stringify(join(repo, 'package.json'))})('prom-client');`,
    );
    expect(heavy.filter((m) => !index.includes(m))).toEqual([]);
  });
});
