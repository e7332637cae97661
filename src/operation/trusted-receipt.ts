/**
 * A receipt to act on: parsed only once its signature verifies with this host's key. Promotion
 * (manual, through the API, automatic) and the results worker's actions (webhook, batch
 * settlement, promotion) take nothing else; unsigned, forged or signed by a key this host does
 * not hold is refused with the reason (exit 6), never treated as verified.
 */
import { ReceiptSchema, type Receipt } from '../shared/contracts/receipt.js';
import { UhError } from '../shared/errors.js';
import { loadReceiptKey, verificationLine, verifyReceipt, type ReceiptKeySource, type Verification } from './receipt-signature.js';

export type TrustResult = { ok: true; receipt: Receipt; key_id: string } | { ok: false; verification: Verification | null; reason: string };

/** The receipt's text as stored (Redis artifact or receipt.json), checked against the key. */
export function trustReceipt(text: string | null | undefined, keySource: ReceiptKeySource): TrustResult {
  if (!text) return { ok: false, verification: null, reason: 'no receipt' };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, verification: null, reason: 'the receipt is not JSON' };
  }
  const verification = verifyReceipt(raw, loadReceiptKey(keySource, false));
  if (verification.state !== 'valid') return { ok: false, verification, reason: verificationLine(verification) };
  const parsed = ReceiptSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, verification, reason: 'a signed receipt that does not match uh.receipt.v0' };
  return { ok: true, receipt: parsed.data, key_id: verification.key_id };
}

/** The trusted receipt, or an `untrusted_receipt` error naming why (exit 6). */
export function requireTrustedReceipt(text: string | null | undefined, keySource: ReceiptKeySource, operationId: string): Receipt {
  const trust = trustReceipt(text, keySource);
  if (trust.ok) return trust.receipt;
  throw new UhError('untrusted_receipt', `the receipt of ${operationId} cannot be trusted: ${trust.reason}`, {
    hint: 'only a receipt signed by a fleet key verifies; check UH_RECEIPT_KEY on this host, or look for tampering in Redis',
  });
}
