#!/usr/bin/env node
// Each daemon's command loads its own modules alone; every other command loads the whole CLI.
const daemon = process.argv[2];
const { main } =
  daemon === 'conntrack'
    ? await import('./main-conntrack.js')
    : daemon === 'servicecidr-controller'
      ? await import('./main-servicecidr-controller.js')
      : await import('./program.js');

main(process.argv).then((code) => {
  process.exitCode = code;
});
