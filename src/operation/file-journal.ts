import { existsSync, readFileSync } from 'node:fs';
import type { RuntimeJournalV1 } from '../shared/runtime/v1/runtime-context.js';
import { writeAtomic } from './operation-files.js';

/** The inline runtime journal: one JSON file, rewritten atomically on every put. */
export function fileJournal(path: string): RuntimeJournalV1 {
  const read = (): Record<string, unknown> =>
    existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
  return {
    async get() {
      return read();
    },
    async put(patch) {
      writeAtomic(path, `${JSON.stringify({ ...read(), ...patch }, null, 2)}\n`);
    },
  };
}
