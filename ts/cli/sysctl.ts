// `kubenode admit`, `kubenode sysctl safe-list`, `kubenode sysctl probe`.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import { PodAdmitChain } from '../admission/index.js';
import { isKubenodeError } from '../errors.js';
import { probe } from '../sysctl/apply.js';
import { allowlistFromKubeletConfig } from '../sysctl/config.js';
import { safeSysctlList, safeSysctlTable } from '../sysctl/kernel.js';
import { addOutputOption, CliExit, outputFormat, printJson } from './output.js';
import { registerSysctlPolicy } from './sysctl-policy.js';

function fail(message: string): never {
  process.stderr.write(`kubenode: ${message}\n`);
  throw new CliExit(2);
}

async function readPod(file: string): Promise<unknown> {
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  } catch (e) {
    fail(`cannot read ${file}: ${(e as Error).message}`);
  }
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) fail(`${file}: not a YAML document stream`);
  const nonEmpty = docs.filter((d) => d.contents !== null);
  if (nonEmpty.length !== 1) fail(`${file}: expected exactly one YAML document, found ${nonEmpty.length}`);
  const doc = nonEmpty[0]!;
  if (doc.errors.length > 0) fail(`${file}: malformed YAML: ${doc.errors[0]!.message}`);
  const pod = doc.toJS() as unknown;
  if (typeof pod !== 'object' || pod === null || Array.isArray(pod)) fail(`${file}: not a Pod object`);
  const kind = (pod as { kind?: unknown }).kind;
  if (kind !== undefined && kind !== 'Pod') fail(`${file}: kind is ${JSON.stringify(kind)}, want Pod`);
  return pod;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
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
      fail((e as Error).message);
    }
    const pod = await readPod(file);
    let r: Awaited<ReturnType<PodAdmitChain['admit']>>;
    try {
      r = await chain.admit({ pod: pod as object });
    } catch (e) {
      if (isKubenodeError(e)) fail(`${file}: ${e.message}`);
      throw e;
    }
    if (format === 'json') printJson(r);
    else process.stdout.write(r.admit ? 'ADMIT\n' : `REJECT ${r.reason}: ${r.message}\n`);
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
        e instanceof Error && /Kubernetes version/.test(e.message) ? '--kubernetes-version' : '--kernel';
      fail(`${flag}: ${(e as Error).message}`);
    }
    if (format === 'json') {
      printJson({ ...list, table: safeSysctlTable() });
      return;
    }
    if (list.kernelError)
      process.stderr.write(`kubenode: ${list.kernelError}; using the ungated rows only\n`);
    process.stdout.write(`${list.names.join('\n')}\n`);
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
      fail((e as Error).message);
    }
    if (format === 'json') printJson(report);
    else {
      for (const r of report.results) {
        const extra =
          r.outcome === 'isolated' ? `host ${r.hostValue} / probe ${r.probeValue}` : (r.detail ?? '');
        process.stdout.write(
          `${r.outcome.padEnd(12)} ${(r.namespace || '-').padEnd(4)} ${r.name}  ${extra}\n`,
        );
      }
      const s = report.summary;
      process.stdout.write(
        `${s.isolated} isolated, ${s.leaked} leaked, ${s.absent} absent, ${s.unchangeable} unchangeable, ${s['not-namespaced']} not namespaced (skipped), ${s.error} errors\n`,
      );
    }
    if (report.summary.leaked > 0) throw new CliExit(1);
  });
}
