// Node's builtins whose ES module import costs memory the daemons never use, loaded with
// require() instead. An `import … from 'node:X'` (even of one name) makes Node build the
// module's whole namespace, which reads every lazy getter on it: `node:http`'s WebSocket,
// CloseEvent and MessageEvent load the bundled undici and web streams (~3 MiB resident on
// Node 24), `node:fs`'s `promises` and stream classes load fs/promises, readline and the stream
// implementations, `node:tls`'s `rootCertificates` parses every bundled root certificate, and
// `node:net`'s BlockList and SocketAddress load their classes. require() leaves them unread.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The `node:http` module, loaded without its lazy web APIs. */
export const http: typeof import('node:http') = require('node:http');
/** The `node:fs` module, loaded without its lazy `promises` and stream classes. */
export const fs: typeof import('node:fs') = require('node:fs');
/** The `node:net` module, loaded without its lazy BlockList and SocketAddress. */
export const net: typeof import('node:net') = require('node:net');
/** The `node:tls` module, loaded without reading its lazy `rootCertificates`. */
export const tls: typeof import('node:tls') = require('node:tls');
