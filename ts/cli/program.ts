// The `kubenode` command. Each subcommand lives in its own module and registers itself here.
import { Command } from 'commander';
import { registerConntrack } from './conntrack.js';
import { registerDoctor } from './doctor.js';
import { CliExit } from './output.js';
import { registerServicecidr } from './servicecidr.js';
import { registerSysctl } from './sysctl.js';
import { registerUserns } from './userns.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('kubenode')
    .description('Kubernetes node primitives: sysctl admission, user namespaces, conntrack, ServiceCIDRs');
  program.showHelpAfterError();
  registerConntrack(program);
  registerDoctor(program);
  registerServicecidr(program);
  registerSysctl(program);
  registerUserns(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(argv);
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (e) {
    if (e instanceof CliExit) return e.exitCode;
    const ce = e as { code?: string; exitCode?: number };
    if (typeof ce.code === 'string' && ce.code.startsWith('commander.')) {
      // Help and version exit 0; usage errors exit 2, like other CLI tools.
      return ce.exitCode === 0 ? 0 : 2;
    }
    process.stderr.write(`kubenode: ${(e as Error).message ?? String(e)}\n`);
    return 2;
  }
}
