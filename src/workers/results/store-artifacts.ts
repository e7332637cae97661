/**
 * The artifacts of a finished operation, read from the worker's operation dir into the strings
 * the settle writes to the artifact store (UH_ARTIFACT_STORE; Redis keeps the manifest's digest),
 * so `collect` works from any host that reads the store. Runtime logs travel as `runtime_log:<file>`. Text artifacts
 * over the cap (`UH_ARTIFACT_CAP_BYTES`, default 2 MiB) are cut at a line boundary and end with
 * a truncation marker naming the full size and where the full file stays. Check logs were
 * scrubbed of secrets when the check ended (verification/check-excerpt.ts).
 */
import { existsSync, openSync, readSync, closeSync, statSync, readFileSync, readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ARTIFACT_FILES, CHECK_LOG_FILE, RUNTIME_LOG_FILE, checkLogArtifact } from '../../operation/operation-files.js';

export function truncationMarker(kept: number, total: number, where: string): string {
  return `\n# uh: truncated: kept ${kept} of ${total} bytes (cap UH_ARTIFACT_CAP_BYTES); the full file is ${where}\n`;
}

/** Read a file, capped: whole when it fits, else its head up to the last newline plus a marker. */
export function readCapped(path: string, cap: number): string {
  const total = statSync(path).size;
  if (total <= cap) return readFileSync(path, 'utf8');
  const buf = Buffer.alloc(cap);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, cap, 0);
  } finally {
    closeSync(fd);
  }
  const cut = buf.lastIndexOf(0x0a);
  const head = buf.subarray(0, cut > 0 ? cut + 1 : cap);
  return head.toString('utf8') + truncationMarker(head.length, total, `${hostname()}:${path}`);
}

/**
 * Every artifact present in `dir`, capped, plus each check's log (`check_log:<name>`); the
 * receipt is never capped (it is bounded by design).
 */
export function collectArtifacts(dir: string, cap: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, file] of Object.entries(ARTIFACT_FILES)) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    out[name] = name === 'receipt' ? readFileSync(path, 'utf8') : readCapped(path, cap);
  }
  for (const file of readdirSync(dir)) {
    const check = CHECK_LOG_FILE.exec(file)?.[1];
    if (check) out[checkLogArtifact(check)] = readCapped(join(dir, file), cap);
    else if (RUNTIME_LOG_FILE.test(file)) out[`runtime_log:${file}`] = readCapped(join(dir, file), cap);
  }
  return out;
}
