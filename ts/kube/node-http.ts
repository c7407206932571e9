// `node:http` loaded with require(). An ES module import of it (even of one name) makes Node 22
// and later build the module's whole namespace, which reads its lazy `WebSocket`, `CloseEvent`
// and `MessageEvent` getters and so loads the bundled undici and web streams: about 9 MiB of
// resident memory in a daemon that uses none of them. require() leaves the getters unread.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The `node:http` module, loaded without its lazy web APIs. */
export const http: typeof import('node:http') = require('node:http');
