/**
 * What a consumer may believe of a receipt: the one answer every consumer (`submit --wait`,
 * `status`, `collect`, `watch`, the API, the dashboard, promotion) asks before it reports or acts
 * on a receipt. Only `valid` may be shown or acted on as the operation's outcome; every other state
 * carries the reason to print (and is exit 6 on the CLI).
 */
import { EXIT } from '../shared/contracts/exit-codes.js';
import type { Keyring, ReceiptKey } from './receipt-keys.js';
import { verifyReceipt, type Verification } from './receipt-signature.js';

export type TrustState = 'valid' | 'unsigned' | 'invalid' | 'unknown_key';

export interface ReceiptTrust {
  state: TrustState;
  /** The key that signed (null when unsigned or unreadable). */
  key_id: string | null;
  /** One line for an operator: why it is (not) trusted. */
  reason: string;
}

const ADD_KEY = "add the fleet's public key (--public-key, UH_RECEIPT_PUBLIC_KEYS)";

export function trustOf(v: Verification): ReceiptTrust {
  switch (v.state) {
    case 'valid':
      return { state: 'valid', key_id: v.key_id, reason: `signed by key ${v.key_id}` };
    case 'invalid':
      return { state: 'invalid', key_id: v.key_id || null, reason: v.reason };
    case 'unsigned':
      return { state: 'unsigned', key_id: null, reason: 'no signature: nothing proves a worker wrote it' };
    case 'unknown_key':
      return {
        state: 'unknown_key',
        key_id: v.key_id,
        reason: `signed by key ${v.key_id}, which is not in this keyring: ${ADD_KEY}`,
      };
    case 'no_key':
      return {
        state: 'unknown_key',
        key_id: v.key_id,
        reason: `signed by key ${v.key_id}, and there is no receipt key here: ${ADD_KEY}`,
      };
  }
}

/** The trust of a receipt as stored (the raw JSON value, never a re-parsed copy). Pure. */
export function receiptTrust(raw: unknown, keys: Keyring | ReceiptKey | null): ReceiptTrust {
  return trustOf(verifyReceipt(raw, keys));
}

/** The same from the stored text; text that is not JSON is `invalid`. */
export function receiptTrustOfText(text: string, keys: Keyring | ReceiptKey | null): ReceiptTrust {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { state: 'invalid', key_id: null, reason: 'not JSON' };
  }
  return receiptTrust(raw, keys);
}

/** Exit 6 (EXIT.tampered) with the reason for anything but `valid`; null when the receipt may be believed. */
export function untrustedExit(trust: ReceiptTrust): { exit_code: typeof EXIT.tampered; reason: string } | null {
  return trust.state === 'valid' ? null : { exit_code: EXIT.tampered, reason: trust.reason };
}
