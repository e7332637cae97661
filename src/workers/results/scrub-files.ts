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
/** One read buffer for every scrub: each is synchronous, and the redactor keeps no view into it. */
let chunk: Buffer | null = null;

/** Scrub one file in place (through a temp file and a rename); true when it changed. */
export function scrubFile(path: string, secrets: readonly string[]): boolean {
  // Most files hold no secret: a pass that only reads says whether the file is to be rewritten.
  if (!byteRedactor(secrets).active || !redacted(path, secrets)) return false;
  const tmp = `${path}.${process.pid}.scrub`;
  const output = openSync(tmp, 'w');
  let changed: boolean;
  try {
    changed = redacted(path, secrets, (out) => writeSync(output, out));
  } finally {
    closeSync(output);
  }
  if (changed) renameSync(tmp, path);
  else rmSync(tmp, { force: true });
  return changed;
}

/**
 * The file at `path` through the redactor, each redacted chunk to `write`; true when a secret was
 * replaced. Without `write` it only reads, and stops at the first one.
 */
function redacted(path: string, secrets: readonly string[], write?: (out: Buffer) => void): boolean {
  const scrub = byteRedactor(secrets);
  const input = openSync(path, 'r');
  let changed = false;
  try {
    const buf = (chunk ??= Buffer.allocUnsafe(CHUNK));
    for (let n = readSync(input, buf); n > 0; n = readSync(input, buf)) {
      const out = scrub.push(buf.subarray(0, n));
      write?.(out);
      changed ||= out.includes('[redacted]');
      if (changed && !write) return true;
    }
    const rest = scrub.end();
    write?.(rest);
    return changed || rest.includes('[redacted]');
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
