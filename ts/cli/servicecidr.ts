// `kubenode servicecidr-controller`: runs the ServiceCIDRs controller until SIGTERM/SIGINT.
import type { Command } from 'commander';
import { promClient } from '../peers.js';
import { ServiceCIDRController } from '../servicecidr/index.js';
import { addDaemonOptions, type DaemonFlags, daemonKubeConfig, daemonLogger, startHealth } from './daemon.js';
import { CliExit, err } from './output.js';

interface Opts extends DaemonFlags {
  workers: string;
  leaderElect?: boolean;
  leaderElectNamespace: string;
  leaderElectName: string;
  v: string;
}

function fail(msg: string): never {
  err(`kubenode servicecidr-controller: ${msg}\n`);
  throw new CliExit(2);
}

export function registerServicecidr(program: Command): void {
  addDaemonOptions(program.command('servicecidr-controller'))
    .description('run the ServiceCIDRs controller (finalizer, Ready condition, safe deletion) until SIGTERM')
    .option('--workers <n>', 'parallel workers', '5')
    .option('--leader-elect', 'act only while holding a coordination.k8s.io/v1 Lease')
    .option('--leader-elect-namespace <ns>', 'namespace of the leader election Lease', 'kube-system')
    .option('--leader-elect-name <name>', 'name of the leader election Lease', 'service-cidr-controller')
    .option('-v, --v <level>', 'log verbosity (klog levels)', '2')
    .action(async (opts: Opts) => {
      const workers = Number(opts.workers);
      if (!Number.isInteger(workers) || workers < 1)
        fail(`--workers must be a positive integer, got ${opts.workers}`);
      const v = Number(opts.v);
      if (!Number.isInteger(v) || v < 0) fail(`-v must be a non-negative integer, got ${opts.v}`);
      const logger = daemonLogger('servicecidr-controller', opts, v);
      const loaded = await daemonKubeConfig('servicecidr-controller', opts, logger);
      const kubeConfig = loaded.kubeConfig;
      const registry = new (promClient().Registry)();
      logger.info(1, 'Using cluster configuration', { source: loaded.source, origin: loaded.origin });
      const controller = new ServiceCIDRController({
        kubeConfig,
        workers,
        registry,
        logger,
        ...(opts.leaderElect
          ? { leaderElection: { namespace: opts.leaderElectNamespace, name: opts.leaderElectName } }
          : {}),
      });
      const server = await startHealth(
        'servicecidr-controller',
        opts,
        registry,
        () => (controller.ready ? undefined : 'informer-sync: ServiceCIDR and IPAddress caches not synced'),
        logger,
      );
      const ac = new AbortController();
      const onSignal = (sig: string) => {
        logger.info(0, 'Received signal, shutting down', { signal: sig });
        ac.abort();
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
      await controller.run(ac.signal);
      await server?.close();
    });
}
