// Shared CLI plumbing: output format option and a typed early exit.
import type { Command } from 'commander';

export type OutputFormat = 'text' | 'json';

/** Thrown to end a command with a specific exit code after printing. */
export class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

export function addOutputOption(cmd: Command): Command {
  return cmd.option('-o, --output <format>', 'output format: text or json', 'text');
}

export function outputFormat(opts: { output?: string }): OutputFormat {
  const f = opts.output ?? 'text';
  if (f !== 'text' && f !== 'json') {
    process.stderr.write(`kubenode: unknown output format ${JSON.stringify(f)} (want text or json)\n`);
    throw new CliExit(2);
  }
  return f;
}

export function printJson(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
}
