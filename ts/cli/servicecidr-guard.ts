// `kubenode servicecidr guard render --config FILE`: a guard file as a ValidatingAdmissionPolicy
// and its binding (YAML documents, or a JSON list).
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { isKubenodeError } from '../errors.js';
import { parseServiceCIDRGuard, type ServiceCIDRGuard } from '../servicecidr/guard.js';
import { MAX_OBJECT_BYTES, readInput } from './input.js';
import { out, printJson, badInput as usage } from './output.js';

export function registerServicecidrGuard(group: Command): void {
  const guard = group
    .command('guard')
    .description(
      'an admission policy restricting which ServiceCIDRs may be added (allowed prefixes, forbidden overlaps, the default protected)',
    );
  guard
    .command('render')
    .description('render a guard file as a ValidatingAdmissionPolicy + ValidatingAdmissionPolicyBinding')
    .requiredOption('--config <file>', `guard file (YAML or JSON, kind ServiceCIDRGuard), or - for stdin`)
    .option('-o, --output <format>', 'output format: yaml or json', 'yaml')
    .action(async (opts: { config: string; output?: string }) => {
      const format = opts.output ?? 'yaml';
      if (format !== 'yaml' && format !== 'json')
        usage(`unknown output format ${JSON.stringify(format)} (want yaml or json)`);
      const text = await readInput(opts.config, 'guard file', MAX_OBJECT_BYTES);
      let g: ServiceCIDRGuard;
      try {
        g = parseServiceCIDRGuard(text, opts.config);
      } catch (e) {
        if (isKubenodeError(e)) usage(e.message);
        throw e;
      }
      const [policy, binding] = g.render();
      if (format === 'json') printJson([policy, binding]);
      else out(`${stringify(policy, { lineWidth: 0 })}---\n${stringify(binding, { lineWidth: 0 })}`);
    });
}
