// `kubenode userns ls|verify|check`: read-only listing of a pods directory, the kernel check of
// a pod's mapping, and the pre-flight check of a pool against the pods on disk.
import type { Command } from 'commander';
import { isKubenodeError } from '../errors.js';
import { checkPool, listPods, type PoolCheck, verifyMapping } from '../userns/index.js';
import {
  addOutputOption,
  badInput,
  CliExit,
  EXIT_FAILURE,
  out,
  outputFormat,
  printStructured,
  warn,
} from './output.js';

function fail(e: unknown): never {
  warn((e as Error).message ?? String(e));
  throw new CliExit(isKubenodeError(e) ? 1 : 2);
}

/** A whole decimal number option (no sign, no exponent, at most 2^32 - 1 after the check). */
function uintOption(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[0-9]{1,10}$/.test(v) || Number(v) > 0xffffffff) {
    badInput(`--${name} must be a whole number from 0 to 4294967295, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

function table(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const r of rows) {
    const cells = r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)));
    out(`${cells.join('  ').trimEnd()}\n`);
  }
}

function printCheck(r: PoolCheck): void {
  const last = r.pool.firstId + r.pool.length - 1;
  out(
    `pool ${r.pool.firstId}-${last} (${r.pool.length} IDs, ${r.pool.source}), idsPerPod ${r.idsPerPod}: ` +
      `${r.usableSlots} ranges, maxPods ${r.maxPods}; ${r.pods} pods on disk with a range\n`,
  );
  if (r.fits) {
    out('ok: every pod on disk fits\n');
    return;
  }
  out(`${r.misfits.length} of ${r.pods} pods do not fit:\n`);
  table([
    ['POD', 'FIRST ID', 'LENGTH', 'REASON'],
    ...r.misfits.map((m) => [
      m.pod,
      m.hostId === undefined ? '-' : String(m.hostId),
      m.length === undefined ? '-' : String(m.length),
      m.reason,
    ]),
  ]);
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

  addOutputOption(
    cmd
      .command('check')
      .requiredOption('--pods-dir <dir>', 'kubelet pods directory (<root>/pods)')
      .option('--ids-per-pod <n>', 'userNamespaces.idsPerPod to check (default 65536)')
      .option('--max-pods <n>', 'kubelet maxPods (default 110)')
      .option(
        '--first-id <n>',
        "first host ID of the pool (with --length; default: the kubelet's, from getsubids or [idsPerPod, 2^32))",
      )
      .option('--length <n>', 'number of IDs in the pool (with --first-id)')
      .description(
        'pre-flight check: would every pod on disk keep its range with this pool and idsPerPod? Exit 1 names each pod that does not fit',
      ),
  ).action(
    async (opts: {
      podsDir: string;
      idsPerPod?: string;
      maxPods?: string;
      firstId?: string;
      length?: string;
      output?: string;
    }) => {
      const format = outputFormat(opts);
      const firstId = uintOption('first-id', opts.firstId);
      const length = uintOption('length', opts.length);
      if ((firstId === undefined) !== (length === undefined)) badInput('--first-id and --length go together');
      const idsPerPod = uintOption('ids-per-pod', opts.idsPerPod);
      const maxPods = uintOption('max-pods', opts.maxPods);
      // Nothing was checked when the configuration or the directory is unusable: bad input.
      const r = await checkPool({
        podsDir: opts.podsDir,
        ...(idsPerPod === undefined ? {} : { idsPerPod }),
        ...(maxPods === undefined ? {} : { maxPods }),
        ...(firstId === undefined || length === undefined ? {} : { mappings: { firstId, length } }),
      }).catch((e: unknown) => badInput((e as Error).message ?? String(e)));
      if (format !== 'text') printStructured(format, r);
      else printCheck(r);
      if (!r.fits) process.exitCode = EXIT_FAILURE;
    },
  );
}
