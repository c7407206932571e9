#!/usr/bin/env node
// Records the git commit the build comes from in dist/build-info.json (read by `kubenode
// version`), so a packed tarball and the image built from it say which source they are.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const git = (...args) => {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
};
const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
const commit = git('rev-parse', 'HEAD');
const dirty = commit === undefined ? undefined : git('status', '--porcelain', '--untracked-files=no') !== '';
writeFileSync(
  'dist/build-info.json',
  `${JSON.stringify(
    {
      version,
      gitCommit: commit ?? 'unknown',
      gitTreeState: dirty === undefined ? 'unknown' : dirty ? 'dirty' : 'clean',
      buildDate: new Date().toISOString(),
    },
    null,
    2,
  )}\n`,
);
