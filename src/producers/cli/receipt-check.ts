/**
 * The signature check every CLI consumer of a receipt shares (`uh mission status`, `collect`,
 * `watch`, `submit --wait`): the receipt's raw JSON against this host's keyring
 * (`UH_RECEIPT_PUBLIC_KEYS`, this host's own signing key, its HMAC key; nothing is made here).
 * Anything but a valid signature exits EXIT.tampered (6) with the reason, and the receipt's
 * claims (status, verdict) are never printed as the outcome.
 */
import type { UhConfig } from '../../shared/config.js';
import { loadKeyring, type Keyring } from '../../operation/receipt-keys.js';
import { receiptTrustOfText, untrustedExit, type ReceiptTrust } from '../../operation/receipt-trust.js';

export type { ReceiptTrust } from '../../operation/receipt-trust.js';

export function hostKeyring(config: Pick<UhConfig, 'receipts'>): Keyring {
  return loadKeyring(config.receipts);
}

export function checkReceiptText(text: string, config: Pick<UhConfig, 'receipts'>, keyring?: Keyring): ReceiptTrust {
  return receiptTrustOfText(text, keyring ?? hostKeyring(config));
}

/** The refusal line of an untrusted receipt. */
export function untrustedLine(operationId: string, trust: ReceiptTrust): string {
  return `✘ ${operationId}: receipt NOT trusted (${trust.state}): ${trust.reason}`;
}

/**
 * Say what the signature check found: `✔ signature` on stdout (unless JSON) when valid, else the
 * refusal on stderr. Returns the exit code it forces (6), or null when the receipt may be believed.
 */
export function reportSignature(trust: ReceiptTrust, json: boolean, operationId = 'receipt'): number | null {
  const refused = untrustedExit(trust);
  if (!refused) {
    if (!json) process.stdout.write(`✔ signature (key ${trust.key_id})\n`);
    return null;
  }
  process.stderr.write(
    `${untrustedLine(operationId, trust)}\nhint: its status and verdict are not shown: nothing proves a worker wrote them\n`,
  );
  return refused.exit_code;
}

/** The receipt for `--json`: under `receipt` only when trusted, else under `untrusted_receipt`. */
export function receiptFields<T>(
  receipt: T | null,
  trust: ReceiptTrust | null,
): { receipt: T | null; untrusted_receipt?: T } {
  if (receipt === null || trust === null || trust.state === 'valid') return { receipt };
  return { receipt: null, untrusted_receipt: receipt };
}
