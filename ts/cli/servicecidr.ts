// `kubenode servicecidr-controller`: runs the ServiceCIDRs controller until SIGTERM/SIGINT, with
// kube-controller-manager's flags: HTTPS on --bind-address:--secure-port (/metrics authorized
// by the API server, /healthz /livez /readyz open), leader election timings, client QPS.
import type { Command } from 'commander';
import { delegatedAuthorizer } from '../kube/delegated-auth.js';
import { restClient } from '../kube/rest.js';
import { servingCert } from '../kube/serving-cert.js';
import { FIELD_MANAGER } from '../servicecidr/controller.js';
import { ServiceCIDRController } from '../servicecidr/index.js';
import { watchRestartsMetric } from '../servicecidr/metrics.js';
import {
  addDaemonOptions,
  type DaemonFlags,
  daemonKubeConfig,
  daemonLogger,
  daemonRegistry,
  deprecatedAlias,
  durationFlag,
  fail,
  removedFlag,
  startHealth,
} from './daemon.js';

const COMMAND = 'servicecidr-controller';

interface Opts extends DaemonFlags {
  workers: string;
  leaderElect?: boolean;
  leaderElectLeaseDuration: string;
  leaderElectRenewDeadline: string;
  leaderElectRetryPeriod: string;
  leaderElectResourceName: string;
  leaderElectResourceNamespace: string;
  kubeApiQps: string;
  kubeApiBurst: string;
  securePort: string;
  bindAddress: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
}

/** `host:port` for the listener; IPv6 in brackets. */
function listenAddr(bind: string, port: number): string {
  return bind.includes(':') ? `[${bind}]:${port}` : `${bind}:${port}`;
}

export function registerServicecidr(program: Command): void {
  const cmd = addDaemonOptions(program.command(COMMAND), '2')
    .description('run the ServiceCIDRs controller (finalizer, Ready condition, safe deletion) until SIGTERM')
    .option('--workers <n>', 'parallel workers', '5')
    .option('--leader-elect', 'act only while holding a coordination.k8s.io/v1 Lease')
    .option(
      '--leader-elect-lease-duration <duration>',
      'how long a Lease not renewed stays its holder’s',
      '15s',
    )
    .option(
      '--leader-elect-renew-deadline <duration>',
      'how long the leader tries to renew before giving up',
      '10s',
    )
    .option('--leader-elect-retry-period <duration>', 'pause between acquire and renew attempts', '2s')
    .option(
      '--leader-elect-resource-name <name>',
      'name of the leader election Lease',
      'service-cidr-controller',
    )
    .option('--leader-elect-resource-namespace <ns>', 'namespace of the leader election Lease', 'kube-system')
    .option('--kube-api-qps <qps>', 'requests per second to the API server (client-side token bucket)', '20')
    .option('--kube-api-burst <n>', 'burst of requests to the API server', '30')
    .option('--secure-port <port>', 'serve HTTPS on this port (0: off)', '10278')
    .option('--bind-address <ip>', 'the address the secure port listens on', '0.0.0.0')
    .option('--tls-cert-file <file>', 'serving certificate (PEM); default: a self-signed one made at start')
    .option('--tls-private-key-file <file>', 'the key of --tls-cert-file (PEM)');
  deprecatedAlias(cmd, '--leader-elect-name', '--leader-elect-resource-name');
  deprecatedAlias(cmd, '--leader-elect-namespace', '--leader-elect-resource-namespace');
  const secure = 'health and metrics are served over HTTPS on --bind-address:--secure-port';
  removedFlag(cmd, COMMAND, '--health-addr', secure);
  removedFlag(cmd, COMMAND, '--metrics-addr', `${secure}, /metrics for callers the API server authorizes`);
  cmd.action(async (opts: Opts) => {
    const workers = Number(opts.workers);
    if (!Number.isInteger(workers) || workers < 1)
      fail(COMMAND, `--workers must be a positive integer, got ${opts.workers}`);
    const qps = Number(opts.kubeApiQps);
    if (!(qps > 0) || !Number.isFinite(qps))
      fail(COMMAND, `--kube-api-qps must be a positive number, got ${JSON.stringify(opts.kubeApiQps)}`);
    const burst = Number(opts.kubeApiBurst);
    if (!Number.isSafeInteger(burst) || burst < 1) {
      fail(COMMAND, `--kube-api-burst must be a positive integer, got ${JSON.stringify(opts.kubeApiBurst)}`);
    }
    const port = Number(opts.securePort);
    if (!/^\d{1,5}$/.test(opts.securePort) || port > 65535) {
      fail(COMMAND, `--secure-port must be a port number (0: off), got ${JSON.stringify(opts.securePort)}`);
    }
    const leaseDurationMs = durationFlag(
      COMMAND,
      '--leader-elect-lease-duration',
      opts.leaderElectLeaseDuration,
    );
    const renewDeadlineMs = durationFlag(
      COMMAND,
      '--leader-elect-renew-deadline',
      opts.leaderElectRenewDeadline,
    );
    const retryPeriodMs = durationFlag(COMMAND, '--leader-elect-retry-period', opts.leaderElectRetryPeriod);
    if (
      opts.leaderElect &&
      !(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs && retryPeriodMs > 0)
    ) {
      // client-go's NewLeaderElector checks, with its wording.
      fail(
        COMMAND,
        'leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period > 0',
      );
    }
    const logger = daemonLogger(COMMAND, opts);
    // Installed before anything starts (the certificate takes a moment): a SIGTERM during
    // start-up is a clean stop too.
    const ac = new AbortController();
    const onSignal = (sig: string) => {
      logger.info(0, 'Received signal, shutting down', { signal: sig });
      ac.abort();
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    const loaded = await daemonKubeConfig(COMMAND, opts, logger);
    const registry = daemonRegistry();
    logger.info(1, 'Using cluster configuration', { source: loaded.source, origin: loaded.origin });
    const controller = new ServiceCIDRController({
      connection: loaded.connection,
      clientLimits: { qps, burst },
      workers,
      registry,
      logger,
      ...(opts.leaderElect
        ? {
            leaderElection: {
              namespace: opts.leaderElectResourceNamespace,
              name: opts.leaderElectResourceName,
              leaseDurationMs,
              renewDeadlineMs,
              retryPeriodMs,
              registry,
            },
          }
        : {}),
    });
    watchRestartsMetric(registry, () => controller.watchRestarts);
    let tls: Awaited<ReturnType<typeof servingCert>> | undefined;
    if (port !== 0) {
      try {
        tls = await servingCert(opts.tlsCertFile, opts.tlsPrivateKeyFile);
      } catch (e) {
        fail(COMMAND, (e as Error).message);
      }
      logger.info(0, 'Serving certificate', { source: tls.source });
    }
    const addr = port === 0 ? undefined : listenAddr(opts.bindAddress, port);
    const server = await startHealth(
      COMMAND,
      {
        healthAddr: addr,
        metricsAddr: addr,
        tls,
        // Reviews have their own budget (upstream's delegating clients: 200 qps, burst 400), so
        // scrapes with made-up tokens cannot queue the controller's own requests.
        authorizeMetrics: delegatedAuthorizer(
          restClient(loaded.connection, FIELD_MANAGER, { qps: 200, burst: 400 }),
          { log: logger },
        ),
      },
      registry,
      () => (controller.ready ? undefined : 'informer-sync: ServiceCIDR and IPAddress caches not synced'),
      logger,
    );
    await controller.run(ac.signal);
    await server?.close();
  });
}
