// A daemon's process and runtime series. The `process_*` ones are client_golang's process
// collector's (names, help, sources), as every Kubernetes component exports them; the `nodejs_*`
// ones keep prom-client's names. Not prom-client's collectDefaultMetrics: its event-loop
// histogram samples every 10 ms, which keeps an idle reconciler at ~8 ms of CPU a second, and
// its modules and gauges hold about 1 MiB more at rest (BENCHMARKS.md, "fleet: lean metrics").
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { Registry } from 'prom-client';
import { promClient } from './peers.js';

/** procfs's "unlimited": client_golang reports the largest uint64, 2^64 as a float64. */
const UNLIMITED = 2 ** 64;
/** procfs's USER_HZ, as client_golang assumes it. */
const USER_HZ = 100;

/** Fields of /proc/self/stat after the command name, from field 3 (`state`) on. */
function statFields(text: string): string[] {
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/** `Max open files` and `Max address space` (soft limits) of /proc/self/limits. */
export function parseLimits(text: string): { openFiles?: number; addressSpace?: number } {
  const soft = (name: string): number | undefined => {
    const m = new RegExp(`^${name}\\s+(\\S+)`, 'm').exec(text);
    if (!m) return undefined;
    return m[1] === 'unlimited' ? UNLIMITED : Number(m[1]);
  };
  return { openFiles: soft('Max open files'), addressSpace: soft('Max address space') };
}

/** IpExt's InOctets and OutOctets of /proc/self/net/netstat (the process's network namespace). */
export function parseNetstatOctets(text: string): { in: number; out: number } | undefined {
  const lines = text.split('\n').filter((l) => l.startsWith('IpExt:'));
  if (lines.length < 2) return undefined;
  const names = (lines[0] as string).split(/\s+/);
  const values = (lines[1] as string).split(/\s+/);
  const at = (n: string) => Number(values[names.indexOf(n)]);
  const r = { in: at('InOctets'), out: at('OutOctets') };
  return Number.isFinite(r.in) && Number.isFinite(r.out) ? r : undefined;
}

/** Seconds since the epoch the process started, from its stat and the boot time, as procfs does. */
function startTimeSeconds(): number {
  try {
    const ticks = Number(statFields(readFileSync('/proc/self/stat', 'latin1'))[19]);
    const btime = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'))?.[1]);
    if (Number.isFinite(ticks) && Number.isFinite(btime)) return btime + ticks / USER_HZ;
  } catch {
    // Not procfs: the clock's answer below.
  }
  return Date.now() / 1000 - process.uptime();
}

interface ProcSnapshot {
  openFds?: number;
  vsize?: number;
  limits: ReturnType<typeof parseLimits>;
  octets?: { in: number; out: number };
}

/** This process's descriptors (counted first, with only the listing's own open), stat, limits and netstat. */
async function readProc(): Promise<ProcSnapshot> {
  const optional = <T>(p: Promise<T>) => p.catch(() => undefined);
  const openFds = (await optional(readdir('/proc/self/fd')))?.length;
  const stat = await optional(readFile('/proc/self/stat', 'latin1'));
  const limits = parseLimits((await optional(readFile('/proc/self/limits', 'latin1'))) ?? '');
  const netstat = await optional(readFile('/proc/self/net/netstat', 'latin1'));
  return {
    openFds,
    vsize: stat === undefined ? undefined : Number(statFields(stat)[20]),
    limits,
    octets: netstat === undefined ? undefined : parseNetstatOctets(netstat),
  };
}

/** The seconds a callback queued now waits for the event loop: prom-client's scrape-time lag. */
function eventLoopLag(): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => setImmediate(() => resolve(Number(process.hrtime.bigint() - t0) / 1e9)));
}

/**
 * Registers `process_*` (client_golang's process collector, read from procfs at each scrape) and
 * `nodejs_*` (heap, external memory, version, event-loop lag measured at the scrape) in
 * `registry`. Nothing runs between scrapes: no timer, no observer.
 */
export function registerProcessMetrics(registry: Registry): void {
  const { Counter, Gauge } = promClient();
  const registers = [registry];
  const procfs = existsSync('/proc/self/stat');
  // prom-client starts every metric's collect in one synchronous loop: one memoryUsage() a scrape
  // serves the resident, heap and external gauges alike.
  let usage: NodeJS.MemoryUsage | undefined;
  const memory = (): NodeJS.MemoryUsage => {
    if (usage === undefined) {
      usage = process.memoryUsage();
      queueMicrotask(() => {
        usage = undefined;
      });
    }
    return usage;
  };

  new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers,
    collect() {
      const u = process.cpuUsage();
      this.reset();
      this.inc((u.user + u.system) / 1e6);
    },
  });
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    registers,
    collect() {
      this.set(memory().rss);
    },
  });
  new Gauge({
    name: 'process_start_time_seconds',
    help: 'Start time of the process since unix epoch in seconds.',
    registers,
  }).set(startTimeSeconds());

  if (procfs) {
    // One read of procfs per scrape, its files one after another: prom-client collects every
    // metric at once, and a descriptor held by a concurrent read would be counted as open.
    let pending: Promise<ProcSnapshot> | undefined;
    const snapshot = () => {
      pending ??= readProc().finally(() => {
        pending = undefined;
      });
      return pending;
    };
    const gauge = (name: string, help: string, read: (p: ProcSnapshot) => number | undefined) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const v = read(await snapshot());
          if (v !== undefined) this.set(v);
        },
      });
    const counter = (name: string, help: string, read: (p: ProcSnapshot) => number | undefined) =>
      new Counter({
        name,
        help,
        registers,
        async collect() {
          const v = read(await snapshot());
          this.reset();
          if (v !== undefined) this.inc(v);
        },
      });
    gauge('process_open_fds', 'Number of open file descriptors.', (p) => p.openFds);
    gauge('process_max_fds', 'Maximum number of open file descriptors.', (p) => p.limits.openFiles);
    gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', (p) => p.vsize);
    gauge(
      'process_virtual_memory_max_bytes',
      'Maximum amount of virtual memory available in bytes.',
      (p) => p.limits.addressSpace,
    );
    counter(
      'process_network_receive_bytes_total',
      'Number of bytes received by the process over the network.',
      (p) => p.octets?.in,
    );
    counter(
      'process_network_transmit_bytes_total',
      'Number of bytes sent by the process over the network.',
      (p) => p.octets?.out,
    );
  }

  const heap = (key: 'heapTotal' | 'heapUsed' | 'external') =>
    function (this: { set(v: number): void }) {
      this.set(memory()[key]);
    };
  new Gauge({
    name: 'nodejs_heap_size_total_bytes',
    help: 'Process heap size from Node.js in bytes.',
    registers,
    collect: heap('heapTotal'),
  });
  new Gauge({
    name: 'nodejs_heap_size_used_bytes',
    help: 'Process heap size used from Node.js in bytes.',
    registers,
    collect: heap('heapUsed'),
  });
  new Gauge({
    name: 'nodejs_external_memory_bytes',
    help: 'Node.js external memory size in bytes.',
    registers,
    collect: heap('external'),
  });
  new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Lag of event loop in seconds.',
    registers,
    async collect() {
      this.set(await eventLoopLag());
    },
  });
  const [major, minor, patch] = process.versions.node.split('.');
  new Gauge({
    name: 'nodejs_version_info',
    help: 'Node.js version info.',
    labelNames: ['version', 'major', 'minor', 'patch'],
    registers,
  }).set({ version: process.version, major, minor, patch }, 1);
}
