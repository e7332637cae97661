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
