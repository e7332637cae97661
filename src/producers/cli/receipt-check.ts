/**
 * The signature check `uh mission status`, `collect` and `uh receipt verify` share: the receipt's
 * raw JSON against this host's receipt key (`UH_RECEIPT_KEY` or the key file; never created here).
 * A receipt whose signature does not verify makes the command exit EXIT.tampered (6).
 */
import type { UhConfig } from '../../shared/config.js';
import { EXIT } from '../../shared/contracts/status.js';
import { loadReceiptKey, verificationLine, verifyReceipt, type Verification } from '../../operation/receipt-signature.js';

export function checkReceiptText(text: string, config: Pick<UhConfig, 'receipts'>): Verification {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { state: 'invalid', key_id: '', reason: 'not JSON' };
  }
  return verifyReceipt(raw, loadReceiptKey(config.receipts, false));
}

/** Print the verdict on the signature (stderr when stdout carries JSON); the exit code it forces, if any. */
export function reportSignature(v: Verification, json: boolean): number | null {
  const line = `${verificationLine(v)}\n`;
  if (json || v.state === 'invalid') process.stderr.write(line);
  else process.stdout.write(line);
  return v.state === 'invalid' ? EXIT.tampered : null;
}
