/**
 * The last net before anything is stored: every file an operation dir holds (logs the runtime or
 * its adapter wrote by any route, the final message, check logs) is streamed through the byte
 * redactor and replaced when a secret was found. The diff and the receipt are left as they are
 * (their digests and signature cover them); events and mission.json were redacted as written.
 */
import { closeSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { byteRedactor } from '../../shared/redact.js';

const UNTOUCHED = new Set(['diff.patch', 'receipt.json', 'operation.json', 'events.jsonl']);
const CHUNK = 64 * 1024;

/** Scrub one file in place (through a temp file and a rename); true when it changed. */
export function scrubFile(path: string, secrets: readonly string[]): boolean {
  const scrub = byteRedactor(secrets);
  // Most files hold no secret: a pass that only reads says whether the file is to be rewritten.
  if (!scrub.active || !redactsAny(path, secrets)) return false;
  const tmp = `${path}.${process.pid}.scrub`;
  const input = openSync(path, 'r');
  const output = openSync(tmp, 'w');
  let changed = false;
  try {
    const buf = Buffer.alloc(CHUNK);
    for (let n = readSync(input, buf); n > 0; n = readSync(input, buf)) {
      const raw = buf.subarray(0, n);
      const out = scrub.push(raw);
      writeSync(output, out);
      if (!changed && out.includes('[redacted]')) changed = true;
    }
    const rest = scrub.end();
    writeSync(output, rest);
    changed ||= rest.includes('[redacted]');
  } finally {
    closeSync(input);
    closeSync(output);
  }
  if (changed) renameSync(tmp, path);
  else rmSync(tmp, { force: true });
  return changed;
}

/** True when the redactor changes something in the file at `path` (it is only read). */
function redactsAny(path: string, secrets: readonly string[]): boolean {
  const scrub = byteRedactor(secrets);
  const input = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(CHUNK);
    for (let n = readSync(input, buf); n > 0; n = readSync(input, buf))
      if (scrub.push(buf.subarray(0, n)).includes('[redacted]')) return true;
    return scrub.end().includes('[redacted]');
  } finally {
    closeSync(input);
  }
}

/** Scrub every regular file of an operation dir but the diff, the receipt, the record and the events. */
export function scrubOperationFiles(dir: string, secrets: readonly string[]): void {
  if (byteRedactor(secrets).active === false) return;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (UNTOUCHED.has(name) || name.endsWith('.tmp') || !statSync(path).isFile()) continue;
    scrubFile(path, secrets);
  }
}
