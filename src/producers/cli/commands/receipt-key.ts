/**
 * `uh receipt key --public | --generate <dir>`: publish this host's receipt public key, or make
 * an Ed25519 key pair for a fleet (the private key for the workers, the public one for everyone).
 */
import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import { generateKeyPair, loadReceiptKey, publicKeyPem } from '../../../operation/receipt-keys.js';
import { helpText, parseCommand, writeJson, type CommandSpec } from '../cli-kit.js';

const KEY: CommandSpec = {
  usage: 'uh receipt key --public [--json] | uh receipt key --generate <dir> [--json]',
  summary:
    '--public: print the public key (PEM, on stdout) of the Ed25519 key this host signs receipts with, and its key id ' +
    '(stderr). --generate <dir>: make a key pair for a fleet: <dir>/receipt-signing.pem (private, 0600: mount it on ' +
    'the workers as UH_RECEIPT_SIGNING_KEY_FILE) and <dir>/receipt-signing.pub (give it to every verifier: ' +
    'UH_RECEIPT_PUBLIC_KEYS, --public-key).',
  options: {
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
    public: { type: 'boolean', default: false },
    generate: { type: 'string' },
  },
  details: ["Key id: the first 16 hex digits of sha256 of the public key (SPKI DER), as in every signature's key_id."],
  examples: ['uh receipt key --public > fleet.pub', 'uh receipt key --generate ./fleet-key'],
};

function printPublic(config: UhConfig, json: boolean): number {
  if (config.receipts.signer !== 'ed25519') {
    const message =
      'this host signs receipts with an HMAC key (UH_RECEIPT_KEY / UH_RECEIPT_KEY_FILE), which has no public key';
    throw new UhError('invalid_input', message, {
      hint: 'give the fleet an Ed25519 key: uh receipt key --generate <dir>, then UH_RECEIPT_SIGNING_KEY_FILE',
    });
  }
  const key = loadReceiptKey(config.receipts, false);
  if (!key || key.alg !== 'ed25519') {
    throw new UhError('not_found', `no receipt signing key here yet (${config.receipts.signingKeyFile})`, {
      hint: 'it is made on the first signed receipt (uh mission run), or make a fleet pair: uh receipt key --generate <dir>',
    });
  }
  const pem = publicKeyPem(key.publicKey);
  if (json) writeJson({ alg: 'ed25519', key_id: key.id, public_key: pem });
  else {
    process.stdout.write(pem);
    process.stderr.write(`key id ${key.id}\n`);
  }
  return EXIT.ok;
}

export async function receiptKey(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(KEY, argv);
  if (values.help) return (void process.stdout.write(`${helpText(KEY)}\n`), EXIT.ok);
  if (positionals.length > 0) throw invalidInput(`unexpected argument ${positionals[0]}`, [], KEY.usage);
  const dir = values.generate as string | undefined;
  if (values.public === (dir !== undefined)) {
    throw invalidInput('uh receipt key needs one of --public or --generate <dir>', [], KEY.usage);
  }
  if (values.public) return printPublic(config, Boolean(values.json));
  const made = generateKeyPair(dir as string);
  if (values.json) {
    writeJson({
      alg: 'ed25519',
      key_id: made.key.id,
      private_key_file: made.privateFile,
      public_key_file: made.publicFile,
    });
  } else {
    process.stdout.write(
      `key id ${made.key.id}\n  private: ${made.privateFile} (0600; workers: UH_RECEIPT_SIGNING_KEY_FILE)\n` +
        `  public:  ${made.publicFile} (verifiers: UH_RECEIPT_PUBLIC_KEYS, --public-key)\n`,
    );
  }
  return EXIT.ok;
}
