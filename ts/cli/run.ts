// The root command and the run of a program by the CLI contract, apart from the subcommands:
// an entry point that needs one command group (the conntrack daemon) loads that group alone.
import { Command } from 'commander';
import { KubenodeRangeError, KubenodeTypeError } from '../errors.js';
import { redactCredentials } from '../kube/redact.js';
import { applyCliContract, CliExit, EXIT_FAILURE, EXIT_USAGE, guardStreams, warn } from './output.js';
import { packageVersion } from './version.js';

/** The root command with no subcommand yet. */
export function rootCommand(): Command {
  const program = new Command();
  program
    .name('kubenode')
    .description('Kubernetes node primitives: sysctl admission, user namespaces, conntrack, ServiceCIDRs')
    .version(packageVersion(), '-V, --version', 'print the kubenode version');
  program.showHelpAfterError();
  return program;
}

/** A program of the root command and the groups `register` adds, with the CLI contract applied. */
export function programOf(...register: ((program: Command) => void)[]): Command {
  const program = rootCommand();
  for (const r of register) r(program);
  applyCliContract(program);
  return program;
}

/** Parses `argv` with the program `build` makes; the exit code, by the CLI contract. */
export async function runProgram(argv: string[], build: () => Command): Promise<number> {
  guardStreams();
  const program = build();
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
