// The `kubenode` command. Each subcommand lives in its own module and registers itself here.
import { Command } from 'commander';
import { KubenodeRangeError, KubenodeTypeError } from '../errors.js';
import { redactCredentials } from '../kube/redact.js';
import { registerCompletion } from './completion.js';
import { registerConntrack } from './conntrack.js';
import { registerDoctor } from './doctor.js';
import { applyCliContract, CliExit, EXIT_FAILURE, EXIT_USAGE, guardStreams, warn } from './output.js';
import { registerServicecidr } from './servicecidr.js';
import { registerServicecidrGroup } from './servicecidr-group.js';
import { registerSysctl } from './sysctl.js';
import { registerUserns } from './userns.js';
import { packageVersion, registerVersion } from './version.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('kubenode')
    .description('Kubernetes node primitives: sysctl admission, user namespaces, conntrack, ServiceCIDRs')
    .version(packageVersion(), '-V, --version', 'print the kubenode version');
  program.showHelpAfterError();
  registerConntrack(program);
  registerDoctor(program);
  registerServicecidr(program);
  registerServicecidrGroup(program);
  registerSysctl(program);
  registerUserns(program);
  registerVersion(program);
  // Last: it completes the tree registered above.
  registerCompletion(program);
  // After registration, so every subcommand (commander copies settings only at creation) gets it.
  applyCliContract(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  guardStreams();
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (e) {
    if (e instanceof CliExit) return e.exitCode;
    const ce = e as { code?: string; exitCode?: number };
    if (typeof ce.code === 'string' && ce.code.startsWith('commander.')) {
      // Help and version exit 0; usage errors exit 2, like other CLI tools.
      return ce.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    // A failure's message may quote what it failed on: never a credential.
    warn(redactCredentials((e as Error).message ?? String(e)));
    // Bad input is a usage error; anything else (no permission, a kernel or I/O failure, an
    // API server that refused) failed at run time.
    const badInput =
      e instanceof KubenodeTypeError ||
      e instanceof KubenodeRangeError ||
      (e as { code?: unknown }).code === 'ERR_KUBENODE_PARSE';
    return badInput ? EXIT_USAGE : EXIT_FAILURE;
  }
}
