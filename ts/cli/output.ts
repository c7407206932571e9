// Shared CLI plumbing. Every byte the CLI prints goes through `out`/`err` here, so control
// characters from input are escaped once for every message (file names, sysctl names, errors of
// any layer, commander's own usage errors), and a closed stdout ends the output quietly.
import type { Command } from 'commander';
import { escapeControls } from '../quote.js';
import { yaml } from '../yaml-lazy.js';

export type OutputFormat = 'text' | 'json' | 'yaml';

/** Thrown to end a command with a specific exit code after printing. */
export class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

/** Exit codes, the same for every subcommand (README: "Exit codes"). */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

// Once the reader of a stream has gone (`kubenode conntrack list | head`), further output is
// dropped instead of raising EPIPE; the command still ends with its own exit code.
const closed = { stdout: false, stderr: false };

function guard(name: 'stdout' | 'stderr'): void {
  process[name].on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') closed[name] = true;
    else throw e;
  });
}

let guarded = false;
/** Installs the EPIPE handling on stdout and stderr (once per process). */
export function guardStreams(): void {
  if (guarded) return;
  guarded = true;
  guard('stdout');
  guard('stderr');
}

export function out(text: string): void {
  if (!closed.stdout) process.stdout.write(escapeControls(text));
}

export function err(text: string): void {
  if (!closed.stderr) process.stderr.write(escapeControls(text));
}

/** Terminal control sequences the CLI itself emits (progress line); nothing from input. */
export function terminalControl(seq: string): void {
  if (!closed.stderr) process.stderr.write(seq);
}

/** Prints `kubenode: <message>` on stderr. */
export function warn(message: string): void {
  err(`kubenode: ${message}\n`);
}

/** Prints the message and ends the command with exit code 2 (usage error or bad input). */
export function badInput(message: string): never {
  warn(message);
  throw new CliExit(EXIT_USAGE);
}

/**
 * Exit overrides and output routing for a command and all its subcommands: commander's usage
 * errors then exit 2 through `main` and its messages pass the same escaping.
 */
export function applyCliContract(cmd: Command): void {
  cmd.exitOverride();
  cmd.configureOutput({ writeOut: out, writeErr: err });
  for (const sub of cmd.commands) applyCliContract(sub);
}

export function addOutputOption(cmd: Command): Command {
  return cmd.option('-o, --output <format>', 'output format: text, json or yaml', 'text');
}

export function outputFormat(opts: { output?: string }): OutputFormat {
  const f = opts.output ?? 'text';
  if (f !== 'text' && f !== 'json' && f !== 'yaml')
    badInput(`unknown output format ${JSON.stringify(f)} (want text, json or yaml)`);
  return f;
}

export function printJson(v: unknown): void {
  // JSON.stringify escapes C0 controls but leaves DEL and C1 (a CSI introducer) raw; \u escapes
  // keep the document valid JSON with the same values.
  const text = JSON.stringify(v, null, 2).replace(
    /[\u007f-\u009f]/g,
    (ch) => `\\u${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`,
  );
  out(`${text}\n`);
}

/** A YAML document of `v`: the same data as `printJson`, for `-o yaml`. */
export function printYaml(v: unknown): void {
  // Through JSON first, so both formats carry exactly the same values (no undefined, no class
  // instances); the YAML library quotes control characters as escapes in double quotes.
  out(yaml().stringify(JSON.parse(JSON.stringify(v)) as unknown, { lineWidth: 0 }));
}

/** `-o json` or `-o yaml`. */
export function printStructured(format: 'json' | 'yaml', v: unknown): void {
  if (format === 'yaml') printYaml(v);
  else printJson(v);
}
