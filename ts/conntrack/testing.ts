// Test and benchmark hooks on a Conntrack handle. Not part of the public API: the package's
// entry points do not export this module; the repository's tests and benches import it directly.
// Fault injection and the pinned path exist only in the tests' binary (`npm run build:test-hooks`);
// the release binary has neither.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Conntrack as NativeConntrack, NativeError } from '../binding.js';
import { KubenodeError } from '../errors.js';
import { packageRoot } from '../native.js';
import { type Conntrack, type Flow, flowBatch, handleOf } from './client.js';
import { conntrackError } from './errors.js';
import type { IPFamily } from './tables.js';

/** Newest modification time of the .node files under `dir` (0 when there are none). */
function newestBinary(dir: string): number {
  try {
    const files = readdirSync(dir, { recursive: true }).map(String);
    return Math.max(
      0,
      ...files.filter((f) => f.endsWith('.node')).map((f) => statSync(join(dir, f)).mtimeMs),
    );
  } catch {
    return 0;
  }
}

// A process that imports this module loads the tests' binary (node-gyp-build reads
// KUBENODE_PREBUILD when the binding first loads, so this module must be imported before any
// module that loads it, ts/index.ts among them), unless it is missing or
// older than the release binary: a stale one must not hide a rebuilt core. Every other process,
// the packaging and image tests' included, keeps the release binary.
const testBuild = join(packageRoot, 'build', 'test-hooks');
const testBuilt = newestBinary(join(testBuild, 'prebuilds'));
if (
  process.env.KUBENODE_PREBUILD === undefined &&
  testBuilt > 0 &&
  testBuilt >= newestBinary(join(packageRoot, 'prebuilds'))
) {
  process.env.KUBENODE_PREBUILD = testBuild;
}

/** The fault kinds of the core's `Fault`. */
export type FaultKind = 'recvEintr' | 'recvEnobufs' | 'dumpIntr' | 'trunc';

/** What the tests' binary adds to a native handle (crates/kubenode-node/src/conntrack/hooks.rs). */
export interface NativeTestHooks {
  injectFault(kind: FaultKind, count: number): NativeError | null;
  pinCostChoice(preferTargeted?: boolean | null): NativeError | null;
}

/** `n`'s test hooks; throws a `KubenodeError` (ERR_KUBENODE_BINDING_MISSING) for a release binary. */
export function nativeTestHooks(n: NativeConntrack): NativeTestHooks {
  const h = n as NativeConntrack & Partial<NativeTestHooks>;
  if (typeof h.injectFault !== 'function' || typeof h.pinCostChoice !== 'function') {
    throw new KubenodeError(
      'ERR_KUBENODE_BINDING_MISSING',
      'the loaded kubenode binary has no test hooks: build them (`npm run build:test-hooks`) and import this module before anything loads the binding',
    );
  }
  return h as NativeConntrack & NativeTestHooks;
}

/** Fault injection for tests of the recovery paths (see the crate's `Faults`). */
export interface Faults {
  recvEintr?: number;
  recvEnobufs?: number;
  dumpIntr?: number;
  trunc?: number;
  /** Pins `cleanStaleEntries`' choice: `true` takes the targeted path whenever the handle may. */
  preferTargeted?: boolean;
}

/** Creates entries; returns how many the kernel accepted. */
export async function createEntries(
  ct: Conntrack,
  family: IPFamily,
  flows: Flow[],
): Promise<{ created: number; failed: number; firstError?: string }> {
  const o = await flowBatch(ct, 'create', family, flows);
  return {
    created: o.ok,
    failed: o.failed + o.notFound,
    ...(o.firstError ? { firstError: o.firstError } : {}),
  };
}

/** The fault kinds `Faults` arms, each set (or disarmed) on every call. */
const FAULT_KINDS: readonly FaultKind[] = ['recvEintr', 'recvEnobufs', 'dumpIntr', 'trunc'];

/** Arms faults on the handle; throws a `KubenodeError` (ERR_KUBENODE_CONFLICT) while an operation runs. */
export function injectFaults(ct: Conntrack, faults: Faults): void {
  // The pin goes first: a busy handle refuses it before any count changes.
  const calls: Array<(n: NativeTestHooks) => NativeError | null> = [
    (n) => n.pinCostChoice(faults.preferTargeted),
    ...FAULT_KINDS.map((kind) => (n: NativeTestHooks) => n.injectFault(kind, faults[kind] ?? 0)),
  ];
  for (const call of calls) {
    let e: NativeError | null;
    try {
      e = call(nativeTestHooks(handleOf(ct)));
    } catch (thrown) {
      throw conntrackError(thrown);
    }
    if (e) throw conntrackError(e);
  }
}
