// `kubenode version`: the package version and the commit it was built from (dist/build-info.json,
// written at build time by scripts/build-info.mjs; absent when running from the sources).

import type { Command } from 'commander';
import { fs } from '../node-builtins.js';
import { addOutputOption, out, outputFormat, printStructured } from './output.js';

export interface VersionInfo {
  version: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  node: string;
  platform: string;
}

/** The package version; package.json sits two levels up from both ts/cli and dist/cli. */
export function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export function versionInfo(): VersionInfo {
  let build: Partial<VersionInfo> = {};
  try {
    build = JSON.parse(
      fs.readFileSync(new URL('../build-info.json', import.meta.url), 'utf8'),
    ) as VersionInfo;
  } catch {
    // Sources, not a build: no commit recorded.
  }
  return {
    version: packageVersion(),
    gitCommit: build.gitCommit ?? 'unknown',
    gitTreeState: build.gitTreeState ?? 'unknown',
    buildDate: build.buildDate ?? 'unknown',
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
  };
}

export function registerVersion(program: Command): void {
  addOutputOption(
    program.command('version').description('print the version and the git commit it was built from'),
  ).action((opts: { output?: string }) => {
    const format = outputFormat(opts);
    const v = versionInfo();
    if (format !== 'text') printStructured(format, v);
    else
      out(
        `kubenode ${v.version} (commit ${v.gitCommit}, tree ${v.gitTreeState}, built ${v.buildDate}) on Node ${v.node} ${v.platform}\n`,
      );
  });
}
