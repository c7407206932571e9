// The `kubenode` command. Each subcommand lives in its own module and registers itself here.
import type { Command } from 'commander';
import { registerCompletion } from './completion.js';
import { registerConntrack } from './conntrack.js';
import { registerDoctor } from './doctor.js';
import { applyCliContract } from './output.js';
import { rootCommand, runProgram } from './run.js';
import { registerServicecidr } from './servicecidr.js';
import { registerServicecidrGroup } from './servicecidr-group.js';
import { registerSysctl } from './sysctl.js';
import { registerUserns } from './userns.js';
import { registerVersion } from './version.js';

export function buildProgram(): Command {
  const program = rootCommand();
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

export function main(argv: string[]): Promise<number> {
  return runProgram(argv, buildProgram);
}
