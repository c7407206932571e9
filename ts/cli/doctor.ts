import type { Command } from 'commander';
import { collect, formatText, unusable } from '../doctor.js';
import {
  addOutputOption,
  CliExit,
  EXIT_FAILURE,
  out,
  outputFormat,
  printStructured,
  warn,
} from './output.js';

export function registerDoctor(program: Command): void {
  addOutputOption(
    program
      .command('doctor')
      .description(
        'report what this node offers kubenode; exits 1 when the binding (or a --require section) is unusable',
      )
      .option(
        '--require <sections>',
        'comma-separated sections that must have no missing check too (e.g. conntrack,user namespaces)',
      )
      .option(
        '--pods-dir <dir>',
        'the kubelet pods directory, probed for idmapped mounts',
        '/var/lib/kubelet/pods',
      )
      .option(
        '--cri-socket <socket>',
        'ask the container runtime (CRI Status) whether --runtime-handler supports user namespaces',
      )
      .option(
        '--runtime-handler <name>',
        "the RuntimeClass handler to check (default: the runtime's default handler)",
        '',
      ),
  ).action(
    async (opts: {
      output?: string;
      require?: string;
      podsDir: string;
      criSocket?: string;
      runtimeHandler: string;
    }) => {
      const format = outputFormat(opts);
      const report = await collect({
        podsDir: opts.podsDir,
        ...(opts.criSocket === undefined
          ? {}
          : { criSocket: opts.criSocket, runtimeHandler: opts.runtimeHandler }),
      });
      if (format === 'text') out(`${formatText(report)}\n`);
      else printStructured(format, report);
      const required = (opts.require ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const bad = unusable(report, required);
      // The report is printed in full either way; the exit code makes it a pre-flight check.
      if (bad.length > 0) {
        warn(`doctor: unusable: ${bad.join('; ')}`);
        throw new CliExit(EXIT_FAILURE);
      }
    },
  );
}
