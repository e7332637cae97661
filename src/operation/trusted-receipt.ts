/**
 * A receipt to act on: parsed only once its signature verifies with this host's keyring
 * (receipt-trust.ts). Promotion (manual, through the API, automatic) and the results worker's
 * actions (webhook, batch settlement, promotion) take nothing else; unsigned, forged or signed by
 * a key this host does not hold is refused with the reason (exit 6), never treated as verified.
 */
import { ReceiptSchema, type Receipt } from '../shared/contracts/receipt.js';
import { UhError } from '../shared/errors.js';
import { loadKeyring, type ReceiptKeySource } from './receipt-keys.js';
import { receiptTrustOfText, type ReceiptTrust } from './receipt-trust.js';

export type TrustResult =
  { ok: true; receipt: Receipt; key_id: string } | { ok: false; trust: ReceiptTrust | null; reason: string };

/** The receipt's text as stored (Redis artifact or receipt.json), checked against the keyring. */
export function trustReceipt(text: string | null | undefined, keySource: ReceiptKeySource): TrustResult {
  if (!text) return { ok: false, trust: null, reason: 'no receipt' };
  const trust = receiptTrustOfText(text, loadKeyring(keySource));
  if (trust.state !== 'valid') return { ok: false, trust, reason: `${trust.state}: ${trust.reason}` };
  const parsed = ReceiptSchema.safeParse(JSON.parse(text));
  if (!parsed.success) return { ok: false, trust, reason: 'a signed receipt that does not match uh.receipt.v0' };
  return { ok: true, receipt: parsed.data, key_id: trust.key_id ?? '' };
}

/** The trusted receipt, or an `untrusted_receipt` error naming why (exit 6). */
export function requireTrustedReceipt(
  text: string | null | undefined,
  keySource: ReceiptKeySource,
  operationId: string,
): Receipt {
  const trust = trustReceipt(text, keySource);
  if (trust.ok) return trust.receipt;
  throw new UhError('untrusted_receipt', `the receipt of ${operationId} cannot be trusted: ${trust.reason}`, {
    hint: "only a receipt signed by a fleet key verifies: add the fleet's public key (UH_RECEIPT_PUBLIC_KEYS), or look for tampering in Redis",
  });
}
