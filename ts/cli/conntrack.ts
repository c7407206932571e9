// `kubenode conntrack list|clean|reconcile`.
import { hostname } from 'node:os';
import type { Command } from 'commander';
// The conntrack subsystem alone: the daemon need not load the rest of the library.
import * as conntrack from '../conntrack/index.js';
import { endpointsFromDocument, servicesFromDocument } from '../conntrack/lists.js';
import { describeError } from '../kube/api-error.js';
import { oneLine } from '../kube/log.js';
import {
  addDaemonOptions,
  type DaemonFlags,
  daemonKubeConfig,
  daemonLogger,
  daemonRegistry,
  durationFlag,
  fail,
  startHealth,
} from './daemon.js';
import { MAX_TIMER } from './duration.js';
import { MAX_TABLE_BYTES, parseDocuments, readInput } from './input.js';
import {
  addOutputOption,
  badInput,
  CliExit,
  err,
  out,
  outputFormat,
  printStructured,
  terminalControl,
  warn,
} from './output.js';

function family(v: string | undefined): conntrack.IPFamily {
  const f = (v ?? 'ipv4').toLowerCase();
  if (f === 'ipv4' || f === '4') return 'IPv4';
  if (f === 'ipv6' || f === '6') return 'IPv6';
  badInput(`unknown family ${JSON.stringify(v)} (want ipv4 or ipv6)`);
}

/** `--conntrack-full-threshold`: a number the core checks; anything else exits 2. */
function fullThreshold(command: string, v: string): number {
  const bad = (why: string): never =>
    fail(command, `invalid argument ${JSON.stringify(v)} for "--conntrack-full-threshold" flag: ${why}`);
  const t = v.trim() === '' ? Number.NaN : Number(v);
  if (Number.isNaN(t)) bad('not a number');
  try {
    return conntrack.checkFullThreshold(t);
  } catch (e) {
    return bad((e as Error).message);
  }
}

/** Reads a services or endpoints table file (one JSON/YAML document). */
const KUBERNETES_VERSION_HELP =
  'Kubernetes release whose kube-proxy cleanup rules apply, v1.36 or v1.37 (default: v1.37, the newest known)';

/** `--kubernetes-version`, checked before any work: a release kubenode has no rules for exits 2. */
function kubernetesVersion(v: string | undefined): string {
  try {
    return conntrack.conntrackKubernetesVersion(v);
  } catch (e) {
    badInput(`--kubernetes-version: ${(e as Error).message}`);
  }
}

export async function readTable(path: string, what: string): Promise<unknown> {
  const text = await readInput(path, `${what} file`, MAX_TABLE_BYTES, 'the largest table kubenode reads');
  let docs: unknown[] = [];
  try {
    docs = parseDocuments(text);
  } catch (e) {
    badInput(`${what} file ${path} is not valid JSON/YAML: ${(e as Error).message}`);
  }
  if (docs.length !== 1)
    badInput(`${what} file ${path}: expected one JSON/YAML document, found ${docs.length}`);
  return docs[0];
}

const PROTO_NAMES: Record<number, string> = { 6: 'tcp', 17: 'udp', 132: 'sctp', 1: 'icmp', 58: 'icmpv6' };

function fmtFlow(f: conntrack.Flow): string {
  const p = PROTO_NAMES[f.protocol] ?? String(f.protocol);
  const t = (x: conntrack.FlowTuple) => `src=${x.srcIP} dst=${x.dstIP} sport=${x.srcPort} dport=${x.dstPort}`;
  const zone = f.zone ? ` zone=${f.zone}` : '';
  return `${p.padEnd(6)} ${f.timeout} ${t(f.forward)} ${t(f.reverse)} mark=${f.mark}${zone} id=${f.id ?? '-'}`;
}

/** A one-line progress bar on stderr for long passes (TTY only). */
function progressBar(ct: conntrack.Conntrack): () => void {
  if (!process.stderr.isTTY) return () => {};
  let shown = false;
  const timer = setInterval(() => {
    const p = ct.progress();
    if (p.phase === 'idle' || (!shown && p.listed < 50_000)) return;
    shown = true;
    const line =
      p.phase === 'listing'
        ? `listing… ${p.listed.toLocaleString()} entries`
        : `deleting ${p.stale.toLocaleString()} stale entries…`;
    terminalControl(`\r\x1b[K`);
    err(line);
  }, 100);
  return () => {
    clearInterval(timer);
    if (shown) terminalControl('\r\x1b[K');
  };
}

/** Flags of the one-shot commands. */
interface TableFlags {
  family?: string;
  netns?: string;
  output?: string;
}

/** Runs `body` with a handle in the namespace `netns` names (default: this one), then closes it. */
async function withHandle(
  netns: string | undefined,
  body: (handle: conntrack.Conntrack) => Promise<void>,
): Promise<void> {
  const handle = await conntrack.Conntrack.open(netns ? { netns } : {});
  try {
    await body(handle);
  } finally {
    handle.close();
  }
}

/** One text log line: a line break inside a value is escaped, so it cannot forge a line. */
function textLine(write: (s: string) => void, line: string): void {
  write(`${oneLine(line)}\n`);
}

export function registerConntrack(program: Command): void {
  const ct = program
    .command('conntrack')
    .description('conntrack table: list, stats, stale UDP flow cleanup, reconciler');

  addOutputOption(
    ct
      .command('list')
      .description('list conntrack entries (like conntrack -L)')
      .option('-p, --protocol <proto>', 'udp, tcp, sctp or a protocol number')
      .option('-f, --family <family>', 'ipv4 or ipv6', 'ipv4')
      .option('--dst <ip>', 'original destination IP (needs -p)')
      .option('--dport <port>', 'original destination port (needs -p)')
      .option('--netns <path>', 'network namespace file, e.g. /var/run/netns/NAME'),
  ).action(async (o: TableFlags & { protocol?: string; dst?: string; dport?: string }) => {
    const fmt = outputFormat(o);
    const fam = family(o.family);
    await withHandle(o.netns, async (handle) => {
      const proto = o.protocol && /^\d+$/.test(o.protocol) ? Number(o.protocol) : o.protocol;
      const r = await handle.list(fam, {
        ...(proto !== undefined ? { protocol: proto as conntrack.ListOptions['protocol'] } : {}),
        ...(o.dst ? { dstIP: o.dst } : {}),
        ...(o.dport ? { dstPort: Number(o.dport) } : {}),
      });
      if (fmt !== 'text') printStructured(fmt, r);
      else {
        for (const f of r.flows) out(`${fmtFlow(f)}\n`);
        warn(`${r.flows.length} flow entries${r.partial ? ' (partial: dump interrupted)' : ''}`);
      }
    });
  });

  addOutputOption(
    ct
      .command('stats')
      .description('entry count, nf_conntrack_max and per-CPU counters (like conntrack -C and -S)')
      .option('--netns <path>', 'network namespace file, e.g. /var/run/netns/NAME'),
  ).action(async (o: TableFlags) => {
    const fmt = outputFormat(o);
    await withHandle(o.netns, async (handle) => {
      const s = await handle.stats();
      if (fmt !== 'text') return printStructured(fmt, s);
      out(`entries ${s.count} of ${s.max === 0 ? 'no limit' : s.max}\n`);
      // conntrack -S's layout, with the API's counter names in snake case.
      for (const { cpu, ...counters } of s.perCpu) {
        const fields = Object.entries(counters).map(
          ([k, v]) => `${k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}=${v}`,
        );
        out(`cpu=${cpu} ${fields.join(' ')}\n`);
      }
    });
  });

  addOutputOption(
    ct
      .command('clean')
      .description("delete stale UDP entries with kube-proxy's rules (CleanStaleEntries)")
      .requiredOption(
        '--services <file>',
        'JSON/YAML list of { name, protocol, clusterIP, port, nodePort?, externalIPs?, loadBalancerIPs? }, or `kubectl get services -A -o json|yaml` output',
      )
      .requiredOption(
        '--endpoints <file>',
        'JSON/YAML map { serviceName: [{ ip, port, serving }] }, or `kubectl get endpointslices -A -o json|yaml` output',
      )
      .option('-f, --family <family>', 'ipv4 or ipv6', 'ipv4')
      .option('--dry-run', 'select but do not delete')
      .option('--kubernetes-version <version>', KUBERNETES_VERSION_HELP)
      .option('--netns <path>', 'network namespace file'),
  ).action(
    async (
      o: TableFlags & { services: string; endpoints: string; dryRun?: boolean; kubernetesVersion?: string },
    ) => {
      const fmt = outputFormat(o);
      const fam = family(o.family);
      const k8s = kubernetesVersion(o.kubernetesVersion);
      const services = servicesFromDocument(
        await readTable(o.services, 'services'),
        fam,
      ) as conntrack.ServiceEntry[];
      const endpoints = endpointsFromDocument(
        await readTable(o.endpoints, 'endpoints'),
        fam,
      ) as conntrack.EndpointsTable;
      await withHandle(o.netns, async (handle) => {
        const stop = progressBar(handle);
        try {
          const r = await conntrack.cleanStaleEntries(handle, fam, services, endpoints, {
            dryRun: o.dryRun ?? false,
            metrics: null,
            kubernetesVersion: k8s,
          });
          stop();
          if (fmt !== 'text') printStructured(fmt, r);
          else {
            const verb = o.dryRun ? 'would delete' : 'deleted';
            out(
              `listed ${r.listed}, stale ${r.stale}, ${verb} ${o.dryRun ? r.stale : r.deleted}` +
                `${r.notFound ? ` (${r.notFound} already gone)` : ''}${r.failed ? `, ${r.failed} failed: ${r.firstError}` : ''}` +
                `${r.partial ? ' [partial listing]' : ''} in ${r.seconds.toFixed(3)}s\n`,
            );
          }
          if (r.failed > 0) process.exitCode = 1;
        } finally {
          stop();
        }
      });
    },
  );

  addDaemonOptions(ct.command('reconcile'), '0', [
    ['--health-addr', '--healthz-bind-address'],
    ['--metrics-addr', '--metrics-bind-address'],
  ])
    .description('watch Services and EndpointSlices and clean stale UDP entries when endpoints change')
    .option('-f, --family <family>', 'ipv4, ipv6 or both', 'both')
    .option('--dry-run', 'select but do not delete')
    .option('--kubernetes-version <version>', KUBERNETES_VERSION_HELP)
    .option(
      '--min-sync-period <duration>',
      `least time between two cleanup passes; changes meanwhile are coalesced (Go duration, at most ${MAX_TIMER})`,
      '1s',
    )
    .option('--netns <path>', 'network namespace file whose conntrack table to clean')
    .option(
      '--healthz-bind-address <host:port>',
      'serve /healthz, /livez and /readyz on http://HOST:PORT (empty: off)',
      '0.0.0.0:10276',
    )
    .option(
      '--metrics-bind-address <host:port>',
      'serve /metrics on http://HOST:PORT (empty: off; one listener when equal to --healthz-bind-address)',
      '127.0.0.1:10277',
    )
    .option('--node-name <name>', "this node's name: failed passes become Warning Events on the Node")
    .option('--hostname-override <name>', "kube-proxy's spelling of --node-name")
    .option(
      '--conntrack-full-threshold <fraction>',
      'fraction of nf_conntrack_max at which the table is nearly full: a Warning Event on the Node per crossing (0: off)',
      '0.9',
    )
    .action(
      async (
        o: DaemonFlags & {
          family?: string;
          dryRun?: boolean;
          kubernetesVersion?: string;
          minSyncPeriod: string;
          netns?: string;
          healthzBindAddress: string;
          metricsBindAddress: string;
          nodeName?: string;
          hostnameOverride?: string;
          conntrackFullThreshold: string;
        },
      ) => {
        const k8s = kubernetesVersion(o.kubernetesVersion);
        const command = 'conntrack reconcile';
        const period = durationFlag(command, '--min-sync-period', o.minSyncPeriod);
        const threshold = fullThreshold(command, o.conntrackFullThreshold);
        // Flags first: a bad --logging-format is a usage error whatever the cluster configuration.
        const log = daemonLogger(command, o);
        const connection = (await daemonKubeConfig(command, o, log)).connection;
        const json = o.loggingFormat === 'json';
        // kube-proxy's node name: the override, else this host's name in lower case.
        const nodeName = (o.nodeName || o.hostnameOverride || hostname()).trim().toLowerCase();
        const families: conntrack.IPFamily[] =
          o.family === 'both' || !o.family ? ['IPv4', 'IPv6'] : [family(o.family)];
        // Installed before anything starts, so a signal during start-up is a clean stop too.
        // The timer holds the process up until then, whatever is pending: a daemon that ran
        // out of work would exit 0 and look "Completed".
        const keepAlive = setInterval(() => {}, 1 << 30);
        const signalled = new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
        let handle: conntrack.Conntrack | undefined;
        let r: conntrack.StaleFlowReconciler | undefined;
        let server: Awaited<ReturnType<typeof startHealth>>;
        try {
          // The API server is reached from this process's namespace; only the conntrack socket
          // lives in --netns.
          handle = o.netns ? await conntrack.Conntrack.open({ netns: o.netns }) : undefined;
          const registry = daemonRegistry();
          const rec = new conntrack.StaleFlowReconciler(connection, {
            families,
            ...(handle ? { conntrack: handle } : {}),
            dryRun: o.dryRun ?? false,
            kubernetesVersion: k8s,
            minSyncPeriodMs: period,
            nodeName,
            fullThreshold: threshold,
            metrics: conntrack.conntrackMetrics(registry),
            onSync: (fam, res) =>
              json
                ? log.info(0, 'Cleaned stale conntrack entries', { ipFamily: fam, ...res })
                : textLine(
                    out,
                    `${new Date().toISOString()} ${fam}: listed ${res.listed}, stale ${res.stale}, deleted ${res.deleted}${res.partial ? ' (partial)' : ''} in ${res.seconds.toFixed(3)}s`,
                  ),
            onError: (e, context) =>
              json
                ? log.error('Conntrack reconcile failed', e, context)
                : textLine(err, `${new Date().toISOString()} kubenode: ${describeError(e)} (retrying)`),
          });
          r = rec;
          conntrack.watchRestartsMetric(registry, () => rec.watchRestarts);
          conntrack.tableMetrics(registry, () => rec.tableStats());
          // A bad listener address is a usage error (CliExit 2) and passes through.
          server = await startHealth(
            command,
            {
              healthAddr: o.healthzBindAddress || undefined,
              metricsAddr: o.metricsBindAddress || undefined,
            },
            registry,
            () => (rec.synced ? undefined : 'informer-sync: Service and EndpointSlice caches not synced'),
            log,
          );
          // SIGTERM drains: the running pass finishes, then the watches stop.
          await Promise.race([rec.start(), signalled]);
          await signalled;
        } catch (e) {
          if (e instanceof CliExit) throw e;
          // Start-up failed at run time (no conntrack access, a namespace gone): exit 1, not
          // the usage code 2.
          textLine(err, `kubenode ${command}: ${describeError(e)}`);
          throw new CliExit(1);
        } finally {
          // On a clean stop and on a failure alike: nothing may keep the process up.
          await r?.stop();
          handle?.close();
          await server?.close();
          clearInterval(keepAlive);
        }
      },
    );
}
