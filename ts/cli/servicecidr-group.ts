// `kubenode servicecidr …`: one-shot ServiceCIDR commands (the controller daemon is
// `servicecidr-controller`).
import type { Command } from 'commander';
import { registerServicecidrGuard } from './servicecidr-guard.js';
import { registerServicecidrWhy } from './servicecidr-why.js';

export function registerServicecidrGroup(program: Command): void {
  const group = program
    .command('servicecidr')
    .description('inspect ServiceCIDRs and guard which ones may be added');
  registerServicecidrGuard(group);
  registerServicecidrWhy(group);
}
