#!/usr/bin/env node
// The conntrack group (the reconciler daemon among it) loads its own modules alone.
const { main } =
  process.argv[2] === 'conntrack' ? await import('./main-conntrack.js') : await import('./program.js');

main(process.argv).then((code) => {
  process.exitCode = code;
});
