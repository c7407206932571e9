// Flags and plumbing the two daemons share: the cluster configuration, the health/metrics
// listener and the log format.
import type { Command } from 'commander';
import type { Registry } from 'prom-client';
import { type LoadedKubeConfig, loadKubeConfig } from '../kube/config.js';
import { type HealthServer, serveHealth } from '../kube/health.js';
import { jsonLogger } from '../kube/log.js';
import { redactCredentials } from '../kube/redact.js';
import { klogLogger, type Logger } from '../servicecidr/logger.js';
import { CliExit, err } from './output.js';

export interface DaemonFlags {
  kubeconfig?: string;
  healthAddr?: string;
  metricsAddr?: string;
  logFormat: string;
}

export function addDaemonOptions(cmd: Command): Command {
  return cmd
    .option('--health-addr <host:port>', 'serve /healthz and /readyz on http://HOST:PORT')
    .option(
      '--metrics-addr <host:port>',
      'serve Prometheus metrics on http://HOST:PORT/metrics (one listener when equal to --health-addr)',
    )
    .option('--log-format <format>', 'text or json (component-base JSON lines)', 'text')
    .option(
      '--kubeconfig <file>',
      'kubeconfig file (default: KUBECONFIG, else the in-cluster configuration)',
    );
}

function fail(command: string, msg: string): never {
  err(`kubenode ${command}: ${msg}\n`);
  throw new CliExit(2);
}

/**
 * The cluster configuration `--kubeconfig` (or the environment) names. A missing peer
 * dependency exits 1 (a broken installation), any other failure 2 (a configuration error).
 */
export async function daemonKubeConfig(
  command: string,
  o: DaemonFlags,
  log: Logger,
): Promise<LoadedKubeConfig> {
  try {
    return await loadKubeConfig(o.kubeconfig, {
      onTokenStale: (e) => log.error('Unable to rotate token, using the last one read', e),
    });
  } catch (e) {
    err(`kubenode ${command}: ${redactCredentials((e as Error).message)}\n`);
    throw new CliExit((e as { code?: unknown }).code === 'ERR_KUBENODE_UNSUPPORTED' ? 1 : 2);
  }
}

/** The logger `--log-format` asks for (`text` is klog's line format). */
export function daemonLogger(command: string, o: DaemonFlags, verbosity: number): Logger {
  if (o.logFormat === 'json') return jsonLogger(verbosity);
  if (o.logFormat === 'text') return klogLogger(verbosity);
  fail(command, `--log-format must be text or json, got ${JSON.stringify(o.logFormat)}`);
}

/** Starts the listener(s) when asked for; a bad address or a failed bind exits 2. */
export async function startHealth(
  command: string,
  o: DaemonFlags,
  registry: Registry,
  notReady: () => string | undefined,
  log: Logger,
): Promise<HealthServer | undefined> {
  if (o.healthAddr === undefined && o.metricsAddr === undefined) return undefined;
  let server: HealthServer;
  try {
    server = await serveHealth({ healthAddr: o.healthAddr, metricsAddr: o.metricsAddr, registry, notReady });
  } catch (e) {
    fail(command, (e as Error).message);
  }
  log.info(0, 'Serving health and metrics', { addresses: server.addresses });
  return server;
}
