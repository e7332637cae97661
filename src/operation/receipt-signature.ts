/**
 * Signed receipts. The signature is HMAC-SHA256 over the canonical JSON (keys sorted at every
 * level, no whitespace) of the receipt without its `signature` field, stored in the receipt as
 * `signature: {alg, key_id, value}`. The key lives outside every sandbox: `UH_RECEIPT_KEY`, or
 * the file `UH_RECEIPT_KEY_FILE` (default `<cache dir>/receipt.key`, created 0600 with 32 random
 * bytes the first time a receipt is signed). A fleet shares one key through `UH_RECEIPT_KEY`.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Receipt, ReceiptSignature } from '../shared/contracts/receipt.js';
import { UhError } from '../shared/errors.js';
import { byCodeUnit } from '../shared/compare.js';
import { makeDir } from '../shared/fs/make-dir.js';

export interface ReceiptKey {
  /** First 16 hex digits of sha256(key). */
  id: string;
  secret: Buffer;
}

/** Where the key comes from (the config's `receipts`). */
export interface ReceiptKeySource {
  key: string | undefined;
  keyFile: string;
}

/** JSON with sorted keys at every level: one text per value, whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => byCodeUnit(a, b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function keyFrom(secret: Buffer): ReceiptKey {
  return { id: createHash('sha256').update(secret).digest('hex').slice(0, 16), secret };
}

/** The key to sign with: `UH_RECEIPT_KEY`, else the key file (created 0600 when `create` and absent). */
export function loadReceiptKey(source: ReceiptKeySource, create: boolean): ReceiptKey | null {
  if (source.key !== undefined) return keyFrom(Buffer.from(source.key, 'utf8'));
  if (!existsSync(source.keyFile)) {
    if (!create) return null;
    makeDir(dirname(source.keyFile), 0o700);
    try {
      writeFileSync(source.keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error; // another process made it first
    }
    chmodSync(source.keyFile, 0o600);
  }
  const text = readFileSync(source.keyFile, 'utf8').trim();
  if (text.length < 32) {
    throw new UhError('invalid_input', `receipt key file ${source.keyFile} holds fewer than 32 characters`, {
      hint: 'remove it to have a new key made, or set UH_RECEIPT_KEY (at least 32 characters)',
    });
  }
  return keyFrom(Buffer.from(text, 'utf8'));
}

function mac(body: unknown, key: ReceiptKey): string {
  return createHmac('sha256', key.secret).update(canonicalJson(body)).digest('hex');
}

function withoutSignature(receipt: Record<string, unknown>): Record<string, unknown> {
  const { signature: _drop, ...body } = receipt;
  return body;
}

/** The receipt with its signature (any earlier signature replaced). */
export function signReceipt<R extends Receipt>(receipt: R, key: ReceiptKey): R {
  const body = withoutSignature(receipt);
  const signature: ReceiptSignature = { alg: 'hmac-sha256', key_id: key.id, value: mac(body, key) };
  return { ...body, signature } as R;
}

export type Verification =
  | { state: 'valid'; key_id: string }
  /** Signed by this key, but the content does not match: edited after signing. */
  | { state: 'invalid'; key_id: string; reason: string }
  /** No signature at all. */
  | { state: 'unsigned' }
  /** Signed by another key (another host's key file): cannot be checked here. */
  | { state: 'unknown_key'; key_id: string }
  /** No key available here to check with. */
  | { state: 'no_key'; key_id: string };

/** Check a receipt as read from disk or Redis (the raw JSON, never a re-parsed copy). */
export function verifyReceipt(raw: unknown, key: ReceiptKey | null): Verification {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { state: 'invalid', key_id: '', reason: 'not a JSON object' };
  const receipt = raw as Record<string, unknown>;
  const sig = receipt.signature as Partial<ReceiptSignature> | undefined;
  if (sig === undefined) return { state: 'unsigned' };
  if (typeof sig !== 'object' || sig === null || sig.alg !== 'hmac-sha256' || typeof sig.key_id !== 'string' || typeof sig.value !== 'string') {
    return { state: 'invalid', key_id: String(sig?.key_id ?? ''), reason: 'malformed signature' };
  }
  if (!key) return { state: 'no_key', key_id: sig.key_id };
  if (sig.key_id !== key.id) return { state: 'unknown_key', key_id: sig.key_id };
  const expected = Buffer.from(mac(withoutSignature(receipt), key), 'hex');
  const given = Buffer.from(sig.value, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { state: 'invalid', key_id: sig.key_id, reason: 'content does not match the signature (edited after signing)' };
  }
  return { state: 'valid', key_id: sig.key_id };
}

/** One line for a terminal: ✔ signature / ✘ INVALID / what could not be checked. */
export function verificationLine(v: Verification): string {
  switch (v.state) {
    case 'valid':
      return `✔ signature (key ${v.key_id})`;
    case 'invalid':
      return `✘ INVALID signature: ${v.reason}`;
    case 'unsigned':
      return '⚠ unsigned receipt';
    case 'unknown_key':
      return `⚠ signature by key ${v.key_id}, not this host's key: set the fleet's UH_RECEIPT_KEY to check it`;
    case 'no_key':
      return `⚠ signature by key ${v.key_id} not checked: no receipt key here (UH_RECEIPT_KEY or UH_RECEIPT_KEY_FILE)`;
  }
}
