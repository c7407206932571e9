// `kubenode servicecidr why NAME`: the IPAddresses that hold a ServiceCIDR, their Services, and
// whether another ServiceCIDR would take each over. Exit 0 when found, 1 when it does not
// exist (or the API server fails), 2 for bad input or configuration.
import type { Command } from 'commander';
import { type LoadedKubeConfig, loadKubeConfig } from '../kube/config.js';
import { redactCredentials } from '../kube/redact.js';
import { explainServiceCIDR, type ServiceCIDRExplanation } from '../servicecidr/why.js';
import {
  addOutputOption,
  badInput,
  CliExit,
  EXIT_FAILURE,
  out,
  outputFormat,
  printStructured,
  warn,
} from './output.js';

const VERDICT: Record<ServiceCIDRExplanation['verdict'], string> = {
  blocked: 'blocked: IPAddresses inside it would be left without a ServiceCIDR',
  containedInOther: 'deletable: every CIDR is inside another ServiceCIDR',
  noOrphans: 'deletable: another ServiceCIDR takes over every IPAddress inside it',
};

/** The explanation as `kubenode servicecidr why` prints it. */
export function formatWhy(x: ServiceCIDRExplanation): string {
  const lines = [
    `ServiceCIDR ${x.serviceCIDR}: ${x.cidrs.join(', ') || '(no CIDRs)'}`,
    `  deletion:   ${x.deletionTimestamp ? `requested at ${x.deletionTimestamp}` : 'not requested'}`,
    `  finalizers: ${x.finalizers.join(', ') || '(none)'}`,
    `  ready:      ${x.ready ? `${x.ready.status}${x.ready.reason ? ` ${x.ready.reason}` : ''}${x.ready.message ? `: ${x.ready.message}` : ''}` : '(no condition)'}`,
    `  verdict:    ${VERDICT[x.verdict]}`,
  ];
  const blocking = x.holders.filter((h) => h.blocking).length;
  lines.push(`  ${x.holders.length} IPAddress(es) inside, ${blocking} blocking`);
  if (x.holders.length > 0) {
    const rows = x.holders.map((h) => [
      h.ipAddress,
      h.service ? `${h.service.namespace}/${h.service.name}` : '-',
      h.takenOverBy.length > 0 ? h.takenOverBy.join(',') : h.blocking ? '- (blocks)' : '-',
    ]);
    const head = ['IPADDRESS', 'SERVICE', 'TAKEN OVER BY'];
    const width = head.map((t, i) => Math.max(t.length, ...rows.map((r) => (r[i] ?? '').length)));
    const fmt = (r: string[]) =>
      `  ${r.map((c, i) => (i < r.length - 1 ? c.padEnd(width[i] ?? 0) : c)).join('  ')}`.trimEnd();
    lines.push(fmt(head), ...rows.map(fmt));
  }
  for (const u of x.unparsable) lines.push(`  ! IPAddress ${u} is not an address (the controller skips it)`);
  return `${lines.join('\n')}\n`;
}

export function registerServicecidrWhy(group: Command): void {
  addOutputOption(
    group
      .command('why')
      .argument('<name>', 'the ServiceCIDR')
      .description(
        'list the IPAddresses that hold a ServiceCIDR, the Service owning each, and which other ServiceCIDR would take each over',
      )
      .option(
        '--kubeconfig <file>',
        'kubeconfig file (default: KUBECONFIG, else the in-cluster configuration)',
      ),
  ).action(async (name: string, opts: { output?: string; kubeconfig?: string }) => {
    const format = outputFormat(opts);
    let loaded: LoadedKubeConfig;
    try {
      loaded = await loadKubeConfig(opts.kubeconfig);
    } catch (e) {
      badInput(`servicecidr why: ${redactCredentials((e as Error).message)}`);
    }
    const { kubeConfig } = loaded;
    const x = await explainServiceCIDR(kubeConfig, name);
    if (!x) {
      warn(`servicecidr why: ServiceCIDR ${JSON.stringify(name)} not found`);
      throw new CliExit(EXIT_FAILURE);
    }
    if (format === 'text') out(formatWhy(x));
    else printStructured(format, x);
  });
}
