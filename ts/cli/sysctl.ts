// `kubenode admit`, `kubenode sysctl safe-list`, `kubenode sysctl probe`.
import type { Command } from 'commander';
import { PodAdmitChain } from '../admission/index.js';
import { isKubenodeError, KubenodeError } from '../errors.js';
import { probe } from '../sysctl/apply.js';
import { allowlistFromKubeletConfig } from '../sysctl/config.js';
import { safeSysctlList, safeSysctlTable } from '../sysctl/kernel.js';
import { isPlainObject, MAX_OBJECT_BYTES, parseDocuments, readInput } from './input.js';
import { addOutputOption, badInput, CliExit, out, outputFormat, printStructured, warn } from './output.js';
import { registerSysctlPolicy } from './sysctl-policy.js';

async function readPod(file: string): Promise<object> {
  const text = await readInput(file, 'pod file', MAX_OBJECT_BYTES);
  let docs: unknown[] = [];
  try {
    docs = parseDocuments(text);
  } catch (e) {
    badInput(`${file}: malformed YAML: ${(e as Error).message}`);
  }
  if (docs.length !== 1) badInput(`${file}: expected exactly one YAML document, found ${docs.length}`);
  const pod = docs[0];
  // Anything but a mapping (a scalar, a list, `!!binary` data) is not an object, let alone a pod.
  if (!isPlainObject(pod)) badInput(`${file}: not a Pod object`);
  const kind = pod.kind;
  if (kind !== undefined && kind !== 'Pod') badInput(`${file}: kind is ${JSON.stringify(kind)}, want Pod`);
  return pod;
}

interface AdmitOptions {
  output?: string;
  allowedUnsafeSysctls: string;
  kernel?: string;
  kubernetesVersion?: string;
}

export function registerSysctl(program: Command): void {
  addOutputOption(
    program
      .command('admit')
      .description(
        'run the kubelet admit handlers (sysctl allowlist) on a pod manifest; exit 0 admit, 1 reject',
      )
      .argument('<pod.yaml>', 'Pod manifest, or - for stdin')
      .option(
        '--allowed-unsafe-sysctls <list>',
        'comma-separated unsafe sysctls or patterns (ending in *)',
        '',
      )
      .option('--kernel <version>', 'kernel version for the safe list (default: running kernel)')
      .option(
        '--kubernetes-version <version>',
        'Kubernetes release of the kubelet whose safe list applies, e.g. v1.36 (default: v1.37, the newest known)',
      ),
  ).action(async (file: string, opts: AdmitOptions) => {
    const format = outputFormat(opts);
    let chain: PodAdmitChain;
    try {
      chain = new PodAdmitChain([
        allowlistFromKubeletConfig({
          allowedUnsafeSysctls: opts.allowedUnsafeSysctls,
          kernelVersion: opts.kernel,
          kubernetesVersion: opts.kubernetesVersion,
        }),
      ]);
    } catch (e) {
      badInput((e as Error).message);
    }
    const pod = await readPod(file);
    let r: Awaited<ReturnType<PodAdmitChain['admit']>>;
    try {
      r = await chain.admit({ pod });
    } catch (e) {
      if (isKubenodeError(e)) badInput(`${file}: ${e.message}`);
      throw e;
    }
    if (format !== 'text') printStructured(format, r);
    else out(r.admit ? 'ADMIT\n' : `REJECT ${r.reason}: ${r.message}\n`);
    if (!r.admit) throw new CliExit(1);
  });

  const sysctl = program.command('sysctl').description('sysctl admission helpers');
  registerSysctlPolicy(sysctl);
  addOutputOption(
    sysctl
      .command('safe-list')
      .description('safe sysctls for a kernel (default: the running kernel)')
      .option('--kernel <version>', 'kernel version, e.g. 4.15 or 5.15.0-75-generic')
      .option(
        '--kubernetes-version <version>',
        'Kubernetes release of the kubelet whose safe list applies, e.g. v1.36 (default: v1.37, the newest known)',
      ),
  ).action((opts: { output?: string; kernel?: string; kubernetesVersion?: string }) => {
    const format = outputFormat(opts);
    let list: ReturnType<typeof safeSysctlList>;
    try {
      list = safeSysctlList(opts.kernel, { kubernetesVersion: opts.kubernetesVersion });
    } catch (e) {
      const flag =
        e instanceof KubenodeError && e.kind === 'kubernetes-version' ? '--kubernetes-version' : '--kernel';
      badInput(`${flag}: ${(e as Error).message}`);
    }
    if (format !== 'text') {
      printStructured(format, { ...list, table: safeSysctlTable() });
      return;
    }
    if (list.kernelError) warn(`${list.kernelError}; using the ungated rows only`);
    out(`${list.names.join('\n')}\n`);
  });

  addOutputOption(
    sysctl
      .command('probe')
      .description(
        'change each safe/namespaced sysctl in throwaway namespaces and check the host is untouched (root)',
      )
      .argument('[names...]', 'sysctls to probe (default: safe list, IPC/UTS tables, fs.mqueue.*)'),
  ).action(async (names: string[], opts: { output?: string }) => {
    const format = outputFormat(opts);
    let report: Awaited<ReturnType<typeof probe>>;
    try {
      report = await probe(names.length > 0 ? names : undefined);
    } catch (e) {
      badInput((e as Error).message);
    }
    if (format !== 'text') printStructured(format, report);
    else {
      for (const r of report.results) {
        const extra =
          r.outcome === 'isolated' ? `host ${r.hostValue} / probe ${r.probeValue}` : (r.detail ?? '');
        out(`${r.outcome.padEnd(12)} ${(r.namespace || '-').padEnd(4)} ${r.name}  ${extra}\n`);
      }
      const s = report.summary;
      out(
        `${s.isolated} isolated, ${s.leaked} leaked, ${s.absent} absent, ${s.unchangeable} unchangeable, ${s['not-namespaced']} not namespaced (skipped), ${s.error} errors\n`,
      );
    }
    if (report.summary.leaked > 0) throw new CliExit(1);
  });
}
