/**
 * Signed receipts. The signature covers the canonical JSON (keys sorted at every level, no
 * whitespace) of the receipt without its `signature` field, stored in the receipt as
 * `signature: {alg, key_id, value}` (hex):
 * - `ed25519`: an Ed25519 signature (the default; verifiable anywhere with the public key alone);
 * - `hmac-sha256`: an HMAC for a single host (`UH_RECEIPT_KEY` / `UH_RECEIPT_KEY_FILE`).
 * The keys and where they come from: receipt-keys.ts. What a consumer makes of the result:
 * receipt-trust.ts.
 */
import { createHmac, sign, timingSafeEqual, verify } from 'node:crypto';
import type { Receipt, ReceiptSignature } from '../shared/contracts/receipt.js';
import { byCodeUnit } from '../shared/compare.js';
import { emptyKeyring, keyringOf, type Keyring, type ReceiptKey } from './receipt-keys.js';

export {
  defaultReceiptKeySource,
  keyFrom,
  loadKeyring,
  loadReceiptKey,
  type Keyring,
  type ReceiptKey,
  type ReceiptKeySource,
} from './receipt-keys.js';

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

function mac(body: unknown, secret: Buffer): string {
  return createHmac('sha256', secret).update(canonicalJson(body)).digest('hex');
}

function withoutSignature(receipt: Record<string, unknown>): Record<string, unknown> {
  const { signature: _drop, ...body } = receipt;
  return body;
}

function signatureOf(body: Record<string, unknown>, key: ReceiptKey): ReceiptSignature {
  if (key.alg === 'hmac-sha256') return { alg: 'hmac-sha256', key_id: key.id, value: mac(body, key.secret) };
  const value = sign(null, Buffer.from(canonicalJson(body), 'utf8'), key.privateKey).toString('hex');
  return { alg: 'ed25519', key_id: key.id, value };
}

/** The receipt with its signature (any earlier signature replaced). */
export function signReceipt<R extends Receipt>(receipt: R, key: ReceiptKey): R {
  const body = withoutSignature(receipt);
  return { ...body, signature: signatureOf(body, key) } as R;
}

export type Verification =
  | { state: 'valid'; key_id: string }
  /** Signed by a known key, but the content does not match: edited after signing (or a forged signature). */
  | { state: 'invalid'; key_id: string; reason: string }
  /** No signature at all. */
  | { state: 'unsigned' }
  /** Signed by a key this keyring does not hold (another host's or fleet's key). */
  | { state: 'unknown_key'; key_id: string }
  /** No key at all here to check with. */
  | { state: 'no_key'; key_id: string };

const VALUE_HEX: Record<string, number> = { 'hmac-sha256': 64, ed25519: 128 };

function wellFormed(sig: unknown): sig is ReceiptSignature {
  if (typeof sig !== 'object' || sig === null) return false;
  const s = sig as Record<string, unknown>;
  const length = typeof s.alg === 'string' ? VALUE_HEX[s.alg] : undefined;
  return (
    length !== undefined &&
    typeof s.key_id === 'string' &&
    /^[0-9a-f]{16}$/.test(s.key_id) &&
    typeof s.value === 'string' &&
    s.value.length === length &&
    /^[0-9a-f]+$/.test(s.value)
  );
}

function matches(body: Record<string, unknown>, sig: ReceiptSignature, ring: Keyring): boolean | null {
  if (sig.alg === 'ed25519') {
    const publicKey = ring.publicKeys.get(sig.key_id);
    if (!publicKey) return null;
    return verify(null, Buffer.from(canonicalJson(body), 'utf8'), publicKey, Buffer.from(sig.value, 'hex'));
  }
  const secret = ring.secrets.get(sig.key_id);
  if (!secret) return null;
  const expected = Buffer.from(mac(body, secret), 'hex');
  const given = Buffer.from(sig.value, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Check a receipt as read from disk or Redis (the raw JSON, never a re-parsed copy) against one
 * signing key (its verifying half) or a keyring (several public keys: rotation); null: no key.
 */
export function verifyReceipt(raw: unknown, keys: ReceiptKey | Keyring | null): Verification {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return { state: 'invalid', key_id: '', reason: 'not a JSON object' };
  const receipt = raw as Record<string, unknown>;
  const sig = receipt.signature;
  if (sig === undefined) return { state: 'unsigned' };
  if (!wellFormed(sig)) {
    const keyId = typeof sig === 'object' && sig !== null ? String((sig as { key_id?: unknown }).key_id ?? '') : '';
    return { state: 'invalid', key_id: keyId, reason: 'malformed signature' };
  }
  const ring = keys === null ? emptyKeyring() : 'alg' in keys ? keyringOf(keys) : keys;
  if (ring.publicKeys.size === 0 && ring.secrets.size === 0) return { state: 'no_key', key_id: sig.key_id };
  const ok = matches(withoutSignature(receipt), sig, ring);
  if (ok === null) return { state: 'unknown_key', key_id: sig.key_id };
  if (!ok)
    return {
      state: 'invalid',
      key_id: sig.key_id,
      reason: 'content does not match the signature (edited after signing)',
    };
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
      return '✘ unsigned receipt: nothing proves a worker wrote it';
    case 'unknown_key':
      return `✘ signature by key ${v.key_id}, which this host does not know: add the fleet's public key (--public-key, UH_RECEIPT_PUBLIC_KEYS)`;
    case 'no_key':
      return `✘ signature by key ${v.key_id} not checked: no receipt key here (--public-key, UH_RECEIPT_PUBLIC_KEYS)`;
  }
}
