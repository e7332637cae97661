import type { ChangedFile } from '../../shared/contracts/receipt.js';
import { byCodeUnit } from '../../shared/compare.js';

const STATUS: Record<string, ChangedFile['status']> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  T: 'type_changed',
};

/** Parse `git diff --name-status -z` output (`R100\0old\0new\0`). Pure. */
export function parseNameStatusZ(output: string): ChangedFile[] {
  const parts = output.split('\0');
  const out: ChangedFile[] = [];
  let i = 0;
  while (i < parts.length) {
    const code = parts[i];
    if (!code) {
      i += 1;
      continue;
    }
    const status = STATUS[code[0] ?? ''];
    if (status === undefined) {
      i += 1;
      continue;
    }
    if (status === 'renamed' || status === 'copied') {
      const from = parts[i + 1] ?? '';
      const to = parts[i + 2] ?? '';
      out.push({ path: to, status, from });
      i += 3;
    } else {
      out.push({ path: parts[i + 1] ?? '', status });
      i += 2;
    }
  }
  return out.sort((a, b) => byCodeUnit(a.path, b.path));
}
