/**
 * `uh receipt verify <file> [--key <file>] [--json]`: check a receipt's signature, for a CI
 * consumer. Exit 0: signed by this key and unchanged. 1: not proven (edited, unsigned, or signed
 * by another key). 2: bad input (no such file, not JSON, no key to check with).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import { loadReceiptKey, verificationLine, verifyReceipt } from '../../../operation/receipt-signature.js';
import { helpText, parseCommand, writeJson, type CommandSpec } from '../cli-kit.js';

const VERIFY: CommandSpec = {
  usage: 'uh receipt verify <receipt.json> [--key <key file>] [--json]',
  summary:
    "Check a receipt's signature with the receipt key (--key file, else UH_RECEIPT_KEY, else UH_RECEIPT_KEY_FILE or <cache dir>/receipt.key). Exit 0 valid, 1 invalid (edited, unsigned or signed by another key), 2 bad input.",
  options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false }, key: { type: 'string' } },
  examples: ['uh receipt verify artifacts/receipt.json', 'UH_RECEIPT_KEY=… uh receipt verify receipt.json --json | jq .state'],
};

function readJson(file: string): unknown {
  if (!existsSync(file)) throw invalidInput(`<receipt.json>: no such file ${file}`, [], VERIFY.usage);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw invalidInput(`<receipt.json>: ${file} is not JSON`, [], VERIFY.usage);
  }
}

export async function receiptVerify(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(VERIFY, argv);
  if (values.help) return void process.stdout.write(`${helpText(VERIFY)}\n`), EXIT.ok;
  if (positionals.length !== 1) throw invalidInput('uh receipt verify needs one receipt file', [], VERIFY.usage);
  const raw = readJson(positionals[0] as string);
  const keyFile = values.key as string | undefined;
  if (keyFile !== undefined && !existsSync(keyFile)) throw invalidInput(`--key: no such file ${keyFile}`, [], VERIFY.usage);
  const key = loadReceiptKey(keyFile !== undefined ? { key: undefined, keyFile } : config.receipts, false);
  const result = verifyReceipt(raw, key);
  if (result.state === 'no_key') {
    throw invalidInput('--key: no receipt key here to check with', [], 'pass --key <file>, or set UH_RECEIPT_KEY / UH_RECEIPT_KEY_FILE');
  }
  if (values.json) writeJson({ file: positionals[0], ...result });
  else process.stdout.write(`${verificationLine(result)}\n`);
  return result.state === 'valid' ? EXIT.ok : EXIT.failed;
}
