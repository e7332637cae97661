/**
 * `uh receipt verify <file> [--public-key k.pub]... [--key <hmac file>] [--json]`: check a
 * receipt's signature, for a CI consumer. Works on a machine with no uh config at all when given
 * the fleet's public key. Exit 0: signed by a key given (or known here) and unchanged. 6: not
 * proven (unsigned, edited, or signed by another key), with the reason. 2: bad input (no such
 * file, not JSON, no key to check with).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import {
  emptyKeyring,
  keyringOf,
  loadKeyring,
  loadReceiptKey,
  readPublicKeys,
  type Keyring,
} from '../../../operation/receipt-keys.js';
import { verifyReceipt } from '../../../operation/receipt-signature.js';
import { trustOf } from '../../../operation/receipt-trust.js';
import { helpText, parseCommand, writeJson, type CommandSpec } from '../cli-kit.js';

const VERIFY: CommandSpec = {
  usage: 'uh receipt verify <receipt.json> [--public-key <file|dir>]... [--key <hmac key file>] [--json]',
  summary:
    "Check a receipt's signature. With --public-key (a PEM file, or a dir of *.pub; repeat it for rotation) or --key " +
    "(a single host's HMAC key file) only those keys count; else this host's keyring (UH_RECEIPT_PUBLIC_KEYS, its own " +
    'signing key, UH_RECEIPT_KEY / UH_RECEIPT_KEY_FILE). Exit 0 valid; 6 unsigned, edited or signed by an unknown key ' +
    '(the reason on stdout); 2 bad input or no key at all.',
  options: {
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
    key: { type: 'string' },
    'public-key': { type: 'string', multiple: true },
  },
  details: [
    "A CI step needs only the receipt and the fleet's public key (uh receipt key --public on a worker, or GET /v1/receipt-key).",
  ],
  examples: [
    'uh receipt verify artifacts/receipt.json --public-key fleet.pub',
    'uh receipt verify receipt.json --public-key keys/ --json | jq .state',
  ],
};

function readJson(file: string): unknown {
  if (!existsSync(file)) throw invalidInput(`<receipt.json>: no such file ${file}`, [], VERIFY.usage);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw invalidInput(`<receipt.json>: ${file} is not JSON`, [], VERIFY.usage);
  }
}

/** The keys given on the command line, else this host's keyring. */
function keyringFor(values: Record<string, unknown>, config: UhConfig): Keyring {
  const publicKeys = (values['public-key'] as string[] | undefined) ?? [];
  const keyFile = values.key as string | undefined;
  if (publicKeys.length === 0 && keyFile === undefined) return loadKeyring(config.receipts);
  const ring = emptyKeyring();
  for (const [id, key] of readPublicKeys(publicKeys, '--public-key')) ring.publicKeys.set(id, key);
  if (keyFile !== undefined) {
    if (!existsSync(keyFile)) throw invalidInput(`--key: no such file ${keyFile}`, [], VERIFY.usage);
    const hmac = loadReceiptKey({ key: undefined, keyFile }, false);
    if (hmac) for (const [id, secret] of keyringOf(hmac).secrets) ring.secrets.set(id, secret);
  }
  return ring;
}

export async function receiptVerify(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(VERIFY, argv);
  if (values.help) return (void process.stdout.write(`${helpText(VERIFY)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh receipt verify needs one receipt file', [], VERIFY.usage);
  const raw = readJson(positionals[0] as string);
  const result = verifyReceipt(raw, keyringFor(values, config));
  if (result.state === 'no_key') {
    const hint = "pass the fleet's public key (--public-key k.pub), or set UH_RECEIPT_PUBLIC_KEYS";
    throw invalidInput('--public-key: no receipt key here to check with', [], hint);
  }
  const trust = trustOf(result);
  if (values.json) writeJson({ file: positionals[0], ...trust });
  else process.stdout.write(`${trust.state === 'valid' ? '✔' : '✘'} ${trust.state}: ${trust.reason}\n`);
  return trust.state === 'valid' ? EXIT.ok : EXIT.tampered;
}
