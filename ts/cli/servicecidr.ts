// `kubenode servicecidr-controller`: runs the ServiceCIDRs controller until SIGTERM/SIGINT.
import { createServer, type Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import type { Command } from 'commander';
import { Registry } from 'prom-client';
import { klogLogger, ServiceCIDRController } from '../servicecidr/index.js';
import { CliExit, err } from './output.js';

interface Opts {
  kubeconfig?: string;
  workers: string;
  leaderElect?: boolean;
  leaderElectNamespace: string;
  leaderElectName: string;
  metricsAddr?: string;
  v: string;
}

function fail(msg: string): never {
  err(`kubenode servicecidr-controller: ${msg}\n`);
  throw new CliExit(2);
}

function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
  } catch (e) {
    fail(`cannot load kubeconfig ${file ?? '(default)'}: ${(e as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) fail(`kubeconfig ${file ?? '(default)'} has no current cluster with a server`);
  return kc;
}

function parseAddr(s: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(s);
  const port = Number(m?.[2]);
  if (!m || !(port >= 0 && port <= 65535)) fail(`--metrics-addr must be HOST:PORT, got ${JSON.stringify(s)}`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

function serveMetrics(registry: Registry, addr: string): Promise<Server> {
  const { host, port } = parseAddr(addr);
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'Content-Type': registry.contentType });
          res.end(text);
        },
        (e) => {
          res.writeHead(500);
          res.end(String(e));
        },
      );
    } else if (req.url === '/healthz') {
      res.writeHead(200);
      res.end('ok');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

export function registerServicecidr(program: Command): void {
  program
    .command('servicecidr-controller')
    .description('run the ServiceCIDRs controller (finalizer, Ready condition, safe deletion) until SIGTERM')
    .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG, ~/.kube/config or in-cluster)')
    .option('--workers <n>', 'parallel workers', '5')
    .option('--leader-elect', 'act only while holding a coordination.k8s.io/v1 Lease')
    .option('--leader-elect-namespace <ns>', 'namespace of the leader election Lease', 'kube-system')
    .option('--leader-elect-name <name>', 'name of the leader election Lease', 'service-cidr-controller')
    .option('--metrics-addr <host:port>', 'serve Prometheus metrics on http://HOST:PORT/metrics')
    .option('-v, --v <level>', 'log verbosity (klog levels)', '2')
    .action(async (opts: Opts) => {
      const workers = Number(opts.workers);
      if (!Number.isInteger(workers) || workers < 1)
        fail(`--workers must be a positive integer, got ${opts.workers}`);
      const v = Number(opts.v);
      if (!Number.isInteger(v) || v < 0) fail(`-v must be a non-negative integer, got ${opts.v}`);
      const kubeConfig = loadKubeConfig(opts.kubeconfig);
      const registry = new Registry();
      const logger = klogLogger(v);
      const controller = new ServiceCIDRController({
        kubeConfig,
        workers,
        registry,
        logger,
        ...(opts.leaderElect
          ? { leaderElection: { namespace: opts.leaderElectNamespace, name: opts.leaderElectName } }
          : {}),
      });
      let server: Server | undefined;
      if (opts.metricsAddr) {
        try {
          server = await serveMetrics(registry, opts.metricsAddr);
        } catch (e) {
          fail(`cannot listen on ${opts.metricsAddr}: ${(e as Error).message}`);
        }
        logger.info(0, 'Serving metrics', { address: opts.metricsAddr });
      }
      const ac = new AbortController();
      const onSignal = (sig: string) => {
        logger.info(0, 'Received signal, shutting down', { signal: sig });
        ac.abort();
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
      await controller.run(ac.signal);
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    });
}
