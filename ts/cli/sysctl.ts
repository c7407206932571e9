// `kubenode admit`, `kubenode sysctl safe-list`, `kubenode sysctl probe`.
import type { Command } from 'commander';
import { PodAdmitChain } from '../admission/index.js';
import { isKubenodeError, KubenodeError } from '../errors.js';
import { probe } from '../sysctl/apply.js';
import { allowlistFromKubeletConfig, type KubeletSysctlConfig } from '../sysctl/config.js';
import { sandboxSysctls, validateDefaultPodSysctls } from '../sysctl/defaults.js';
import { safeSysctlList, safeSysctlTable } from '../sysctl/kernel.js';
import { loadKubeletSysctlConfig } from '../sysctl/kubelet-config.js';
import { assertPodShape } from '../sysctl/pod.js';
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
  // A pod the API server would not decode is bad input, not a failed admit handler.
  try {
    assertPodShape(pod);
  } catch (e) {
    if (isKubenodeError(e)) badInput(`${file}: ${e.message}`);
    throw e;
  }
  return pod;
}

interface AdmitOptions {
  output?: string;
  allowedUnsafeSysctls?: string;
  kubeletConfig?: string;
  kernel?: string;
  kubernetesVersion?: string;
}

/** The kubelet settings of `kubenode admit`: the config file, if any, overridden by the flags. */
async function admitConfig(opts: AdmitOptions): Promise<KubeletSysctlConfig> {
  let config: KubeletSysctlConfig = {};
  if (opts.kubeletConfig !== undefined) {
    try {
      config = await loadKubeletSysctlConfig(opts.kubeletConfig);
    } catch (e) {
      if (isKubenodeError(e)) badInput(e.message);
      throw e;
    }
  }
  return {
    ...config,
    ...(opts.allowedUnsafeSysctls !== undefined ? { allowedUnsafeSysctls: opts.allowedUnsafeSysctls } : {}),
    ...(opts.kernel !== undefined ? { kernelVersion: opts.kernel } : {}),
    ...(opts.kubernetesVersion !== undefined ? { kubernetesVersion: opts.kubernetesVersion } : {}),
  };
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
        'comma-separated unsafe sysctls or patterns (ending in *); overrides the config file',
      )
      .option(
        '--kubelet-config <file>',
        'KubeletConfiguration file: allowedUnsafeSysctls, featureGates and defaultPodSysctls (v1.37); an admitted pod then shows its sandbox sysctls',
      )
      .option('--kernel <version>', 'kernel version for the safe list (default: running kernel)')
      .option(
        '--kubernetes-version <version>',
        'Kubernetes release of the kubelet whose safe list applies, e.g. v1.36 (default: v1.37, the newest known)',
      ),
  ).action(async (file: string, opts: AdmitOptions) => {
    const format = outputFormat(opts);
    const config = await admitConfig(opts);
    let chain: PodAdmitChain;
    try {
      chain = new PodAdmitChain([allowlistFromKubeletConfig(config)]);
      // A kubelet refuses to start with a bad defaultPodSysctls: so does this command.
      const errors = validateDefaultPodSysctls(config);
      if (errors.length > 0) badInput(errors.join('\n'));
    } catch (e) {
      if (e instanceof CliExit) throw e;
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
    // What the runtime is asked to set: the node's defaults that apply, then the pod's own.
    let sandbox: ReturnType<typeof sandboxSysctls> | undefined;
    try {
      if (r.admit && opts.kubeletConfig !== undefined) sandbox = sandboxSysctls(pod, config);
    } catch (e) {
      if (isKubenodeError(e)) badInput(`${file}: ${e.message}`);
      throw e;
    }
    if (format !== 'text')
      printStructured(format, sandbox === undefined ? r : { ...r, sandboxSysctls: sandbox });
    else {
      out(r.admit ? 'ADMIT\n' : `REJECT ${r.reason}: ${r.message}\n`);
      for (const s of sandbox ?? []) out(`sandbox sysctl ${s.name}=${s.value}\n`);
    }
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
