import { SUITES } from './suites.js';

const wanted = process.argv.slice(2);
const selected = wanted.length === 0 ? SUITES : SUITES.filter((s) => wanted.includes(s.name));
if (selected.length === 0) {
  console.error(`no bench suite named ${wanted.join(', ')}; have: ${SUITES.map((s) => s.name).join(', ')}`);
  process.exit(2);
}
console.log(`# uh benchmarks (node ${process.version}, ${new Date().toISOString()})`);
for (const suite of selected) {
  await suite.run();
}
// Every suite closes what it opened; should a library keep a handle alive anyway (an idle
// socket, a timer), name it and exit rather than hang the command after the figures are out.
const left = (process as unknown as { _getActiveHandles?: () => object[] })._getActiveHandles?.() ?? [];
const named = left
  .map((h) => h.constructor?.name ?? 'handle')
  .filter((n) => !['WriteStream', 'ReadStream', 'TTY'].includes(n));
if (named.length > 0)
  console.error(`bench: exiting with ${named.length} handle(s) still open: ${[...new Set(named)].join(', ')}`);
process.exit(process.exitCode ?? 0);
