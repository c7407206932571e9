import type { Command } from 'commander';
import { collect, formatText } from '../doctor.js';
import { addOutputOption, out, outputFormat, printJson } from './output.js';

export function registerDoctor(program: Command): void {
  addOutputOption(program.command('doctor').description('report what this node offers kubenode')).action(
    async (opts: { output?: string }) => {
      const format = outputFormat(opts);
      const report = await collect();
      if (format === 'json') printJson(report);
      else out(`${formatText(report)}\n`);
    },
  );
}
