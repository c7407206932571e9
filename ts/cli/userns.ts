// `kubenode userns ls|verify`: read-only listing of a pods directory and the kernel check of a
// pod's mapping.
import type { Command } from 'commander';
import { isKubenodeError } from '../errors.js';
import { listPods, verifyMapping } from '../userns/index.js';
import { addOutputOption, CliExit, out, outputFormat, printStructured, warn } from './output.js';

function fail(e: unknown): never {
  warn((e as Error).message ?? String(e));
  throw new CliExit(isKubenodeError(e) ? 1 : 2);
}

export function registerUserns(program: Command): void {
  const cmd = program.command('userns').description('user-namespace allocations of a kubelet pods directory');

  addOutputOption(
    cmd
      .command('ls')
      .argument('<podsDir>', 'kubelet pods directory (<root>/pods)')
      .description('list pod ranges'),
  ).action(async (podsDir: string, opts: { output?: string }) => {
    const format = outputFormat(opts);
    const pods = await listPods(podsDir).catch(fail);
    if (format !== 'text') {
      printStructured(format, pods);
    } else {
      const rows = [
        ['POD', 'FIRST ID', 'LENGTH'],
        ...pods.map((p) => [
          p.pod,
          p.error ? `error: ${p.error}` : String(p.hostId),
          p.error ? '' : String(p.length),
        ]),
      ];
      const w0 = Math.max(...rows.map((r) => (r[0] ?? '').length));
      const w1 = Math.max(...rows.map((r) => (r[1] ?? '').length));
      for (const r of rows) {
        out(`${(r[0] ?? '').padEnd(w0)}  ${(r[1] ?? '').padEnd(w1)}  ${r[2] ?? ''}`.trimEnd() + '\n');
      }
    }
    if (pods.some((p) => p.error)) process.exitCode = 1;
  });

  addOutputOption(
    cmd
      .command('verify')
      .argument('<podsDir>', 'kubelet pods directory (<root>/pods)')
      .argument('<podUid>', 'pod UID')
      .description(
        "start a process in a new user namespace with the pod's mapping and check uid 0 inside is hostId outside (root)",
      ),
  ).action(async (podsDir: string, podUid: string, opts: { output?: string }) => {
    const format = outputFormat(opts);
    const r = await verifyMapping(podsDir, podUid).catch(fail);
    if (format !== 'text') {
      printStructured(format, r);
    } else {
      out(
        [
          `pod ${podUid}: mapping 0 -> ${r.hostId} (${r.length} IDs)`,
          `  inside the namespace:   uid ${r.insideUid} gid ${r.insideGid}`,
          `  outside (/proc/${r.pid}/status): uid ${r.outsideUid} gid ${r.outsideGid}`,
          `  file created inside is owned by ${r.fileUid}:${r.fileGid}`,
          `  uid_map "${r.uidMap}", gid_map "${r.gidMap}"`,
          r.ok ? 'ok: uid 0 inside is hostId outside' : 'MISMATCH',
        ].join('\n') + '\n',
      );
    }
    if (!r.ok) process.exitCode = 1;
  });
}
