/**
 * The settled record's compact form. A Redis hash whose every value fits in 64 bytes is stored
 * as a listpack (a few bytes per field); one longer value (the job payload, a digest, a path)
 * turns the whole hash into a hashtable of ~100 bytes per field. So when an operation settles
 * with its artifacts in the store, its record is written anew: short fields in the hash
 * (digests as bare hex: create-or-attach compares the contract digest there), the running-only and
 * empty fields dropped, and every longer value (the job payload, the prompt digest, the worker,
 * the sandbox path, the manifest pointer) in one deflated JSON string beside it (`<p>:op:<op>:overflow`).
 * `get` merges the two back; nothing else sees the difference.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** Redis's `hash-max-listpack-value` default: the longest value a listpack-encoded hash holds. */
const LISTPACK_VALUE = 64;
/** Meaningful only while an operation runs (owner checks, the runtime journal). */
const RUNNING_ONLY = new Set(['owner', 'journal', 'runtime_started_at']);

/** Kept as bare hex (64 bytes) in the compact hash; `sha256:` again when read. */
const DIGEST_FIELDS = new Set(['contract_digest', 'prompt_digest', 'artifacts']);

export interface CompactRecord {
  hash: Record<string, string>;
  /** The long fields, deflated; empty when there are none. */
  overflow: Buffer;
}

export function compactRecord(record: Record<string, string>): CompactRecord {
  const hash: Record<string, string> = {};
  const long: Record<string, string> = {};
  for (const [field, value] of Object.entries(record)) {
    if (value === '' || RUNNING_ONLY.has(field)) continue;
    const short = DIGEST_FIELDS.has(field) ? value.replace(/^sha256:/, '') : value;
    if (Buffer.byteLength(short) <= LISTPACK_VALUE) hash[field] = short;
    else long[field] = value;
  }
  const overflow = Object.keys(long).length === 0 ? Buffer.alloc(0) : deflateRawSync(JSON.stringify(long));
  return { hash, overflow };
}

/** The record as it was before compaction (a record never compacted passes unchanged). */
export function expandRecord(hash: Record<string, string>, overflow: Buffer | null): Record<string, string> {
  const long = overflow && overflow.length > 0 ? (JSON.parse(inflateRawSync(overflow).toString('utf8')) as object) : {};
  const out: Record<string, string> = { ...hash, ...(long as Record<string, string>) };
  for (const field of DIGEST_FIELDS) {
    const value = out[field];
    if (value !== undefined && /^[0-9a-f]{64}$/.test(value)) out[field] = `sha256:${value}`;
  }
  return out;
}
