// Preload (`--require`) that makes loading @kubernetes/client-node fail, through require() and
// through import alike, so a daemon that still needs it cannot start.
const Module = require('node:module');

const MESSAGE = 'FORBIDDEN: @kubernetes/client-node was loaded';
const forbidden = (s) => /(^|[\\/]node_modules[\\/])@kubernetes[\\/]client-node([\\/]|$)/.test(s);

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const file = resolve.call(this, request, ...rest);
  if (forbidden(request) || forbidden(file)) throw new Error(`${MESSAGE} (require ${request})`);
  return file;
};

const hooks = `
const forbidden = ${forbidden.toString()};
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (forbidden(specifier) || forbidden(r.url)) throw new Error(${JSON.stringify(MESSAGE)} + ' (import ' + specifier + ')');
  return r;
}`;
Module.register(`data:text/javascript,${encodeURIComponent(hooks)}`);
