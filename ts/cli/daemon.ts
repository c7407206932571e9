// Flags and plumbing the two daemons share, spelt as the Kubernetes components spell them:
// the cluster configuration, `-v`, `--logging-format`, Go durations, deprecated aliases of
// renamed flags, and the health/metrics listener.
import { type Command, Option } from 'commander';
import type { Registry } from 'prom-client';
import { type LoadedKubeConfig, loadKubeConfig } from '../kube/config.js';
import { type HealthOptions, type HealthServer, serveHealth } from '../kube/health.js';
import { jsonLogger } from '../kube/log.js';
import { redactCredentials } from '../kube/redact.js';
import { promClient } from '../peers.js';
import { registerProcessMetrics } from '../process-metrics.js';
import { klogLogger, type Logger } from '../servicecidr/logger.js';
import { DurationSyntaxError, durationFlagMs } from './duration.js';
import { CliExit, err } from './output.js';
import { versionInfo } from './version.js';

export interface DaemonFlags {
  kubeconfig?: string;
  v: string;
  loggingFormat: string;
}

/**
 * `-v`, `--logging-format` and `--kubeconfig`, with `--log-format` and the command's own
 * `[old, replacement]` pairs as deprecated aliases.
 */
export function addDaemonOptions(
  cmd: Command,
  defaultVerbosity: string,
  aliases: [string, string][] = [],
): Command {
  for (const [old, replacement] of aliases) deprecatedAlias(cmd, old, replacement);
  cmd
    .option('-v, --v <level>', 'number for the log level verbosity', defaultVerbosity)
    .option('--logging-format <format>', 'text or json (component-base JSON lines)', 'text')
    .option(
      '--kubeconfig <file>',
      'kubeconfig file (default: KUBECONFIG, else the in-cluster configuration)',
    );
  return deprecatedAlias(cmd, '--log-format', '--logging-format');
}

const camel = (flag: string) =>
  flag.replace(/^--/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Keeps a renamed flag working: `old` sets `replacement` (unless that is given too) and prints
 * pflag's one-line deprecation warning, as the Kubernetes components do for renamed flags.
 */
export function deprecatedAlias(cmd: Command, old: string, replacement: string): Command {
  const key = camel(old);
  const target = camel(replacement);
  cmd.addOption(new Option(`${old} <value>`, `deprecated: use ${replacement}`).hideHelp());
  return cmd.hook('preAction', (_this, action) => {
    const value = action.getOptionValue(key) as string | undefined;
    if (value === undefined) return;
    err(`Flag ${old} has been deprecated, use ${replacement} instead\n`);
    if (action.getOptionValueSource(target) !== 'cli') action.setOptionValueWithSource(target, value, 'cli');
  });
}

/** A flag that was removed: refused with the reason and what replaces it (exit 2). */
export function removedFlag(cmd: Command, command: string, flag: string, why: string): Command {
  const key = camel(flag);
  cmd.addOption(new Option(`${flag} <value>`).hideHelp());
  return cmd.hook('preAction', (_this, action) => {
    if (action.getOptionValue(key) !== undefined) fail(command, `${flag} was removed: ${why}`);
  });
}

export function fail(command: string, msg: string): never {
  err(`kubenode ${command}: ${msg}\n`);
  throw new CliExit(2);
}

/** A Go duration flag in milliseconds; a bad value exits 2 with pflag's message. */
export function durationFlag(command: string, flag: string, value: string): number {
  try {
    return durationFlagMs(flag, value);
  } catch (e) {
    if (e instanceof DurationSyntaxError) fail(command, e.message);
    throw e;
  }
}

/** `-v`: a non-negative integer, as klog's `Level` flag. */
export function verbosityFlag(command: string, o: DaemonFlags): number {
  // `-v=2` is how manifests spell it (pflag takes `=` after a shorthand); commander hands the
  // short form its value with the `=` still on.
  const raw = o.v.startsWith('=') ? o.v.slice(1) : o.v;
  const v = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(v)) {
    fail(command, `invalid argument ${JSON.stringify(o.v)} for "-v, --v" flag: a non-negative integer`);
  }
  return v;
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

/** The logger `--logging-format` and `-v` ask for (`text` is klog's line format). */
export function daemonLogger(command: string, o: DaemonFlags): Logger {
  const verbosity = verbosityFlag(command, o);
  if (o.loggingFormat === 'json') return jsonLogger(verbosity);
  if (o.loggingFormat === 'text') return klogLogger(verbosity);
  fail(command, `--logging-format must be text or json, got ${JSON.stringify(o.loggingFormat)}`);
}

/** Starts the listener(s) when asked for; a bad address or a failed bind exits 2. */
export async function startHealth(
  command: string,
  o: Omit<HealthOptions, 'registry' | 'notReady'>,
  registry: Registry,
  notReady: () => string | undefined,
  log: Logger,
): Promise<HealthServer | undefined> {
  if (o.healthAddr === undefined && o.metricsAddr === undefined) return undefined;
  let server: HealthServer;
  try {
    server = await serveHealth({ ...o, registry, notReady });
  } catch (e) {
    fail(command, (e as Error).message);
  }
  log.info(0, 'Serving health and metrics', {
    addresses: server.addresses,
    scheme: o.tls ? 'https' : 'http',
  });
  return server;
}

/**
 * A daemon's registry: client_golang's process series and Node.js's (`process_*`, `nodejs_*`)
 * and `kubenode_build_info`, then whatever the daemon adds.
 */
export function daemonRegistry(): Registry {
  const { Gauge, Registry } = promClient();
  const registry = new Registry();
  registerProcessMetrics(registry);
  const info = versionInfo();
  new Gauge({
    name: 'kubenode_build_info',
    help: 'A metric with a constant 1 value labelled by the kubenode version, the git commit it was built from and the Node.js version it runs on',
    labelNames: ['version', 'git_commit', 'node_version'],
    registers: [registry],
  }).set({ version: info.version, git_commit: info.gitCommit, node_version: info.node }, 1);
  return registry;
}
