/**
 * Receipt keys: the one a host signs with and the keyring a consumer verifies with.
 *
 * - Ed25519 (the default, and the fleet's): the private key only where receipts are made
 *   (`UH_RECEIPT_SIGNING_KEY` as a PEM value, or the PKCS#8 PEM file `UH_RECEIPT_SIGNING_KEY_FILE`,
 *   default `<cache dir>/receipt-signing.pem`, made 0600 with its `.pub` on first signing when
 *   nothing is configured); anyone verifies with the public key alone (`UH_RECEIPT_PUBLIC_KEYS`).
 * - HMAC-SHA256 for a single host that asks for it (`UH_RECEIPT_KEY`, `UH_RECEIPT_KEY_FILE`):
 *   whoever can verify can also sign, so it is never the fleet default.
 *
 * Key id: the first 16 hex digits of sha256 of the SPKI DER (Ed25519) or of the secret (HMAC).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  linkSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { UhError } from '../shared/errors.js';
import { makeDir } from '../shared/fs/make-dir.js';

export interface HmacReceiptKey {
  alg: 'hmac-sha256';
  /** First 16 hex digits of sha256(secret). */
  id: string;
  secret: Buffer;
}

export interface Ed25519ReceiptKey {
  alg: 'ed25519';
  /** First 16 hex digits of sha256(SPKI DER of the public key). */
  id: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** The key a host signs with. */
export type ReceiptKey = HmacReceiptKey | Ed25519ReceiptKey;

/** What a consumer verifies with: public keys (several, for rotation) and this host's HMAC key if any. */
export interface Keyring {
  publicKeys: Map<string, KeyObject>;
  secrets: Map<string, Buffer>;
}

/** Where the keys come from (the config's `receipts`). */
export interface ReceiptKeySource {
  /** `UH_RECEIPT_KEY`: an HMAC secret (single host). */
  key: string | undefined;
  /** The HMAC key file: `UH_RECEIPT_KEY_FILE`, default `<cache dir>/receipt.key`. */
  keyFile: string;
  /** Which key signs. Absent (a source shaped before Ed25519): the HMAC key, as then. */
  signer?: 'ed25519' | 'hmac';
  /** `UH_RECEIPT_SIGNING_KEY`: the Ed25519 private key as a PEM value (a mounted secret). */
  signingKey?: string | undefined;
  /** `UH_RECEIPT_SIGNING_KEY_FILE`, default `<cache dir>/receipt-signing.pem`. */
  signingKeyFile?: string;
  /** The signing key file is the default one: made (0600, with its `.pub`) on first signing. */
  createSigningKey?: boolean;
  /** `UH_RECEIPT_PUBLIC_KEYS`: PEM files, or directories of `*.pub` files. */
  publicKeys?: string[];
}

/** The default source of a host with nothing configured: Ed25519 keys in its cache dir. */
export function defaultReceiptKeySource(cacheDir: string): ReceiptKeySource {
  return {
    key: undefined,
    keyFile: join(cacheDir, 'receipt.key'),
    signer: 'ed25519',
    signingKey: undefined,
    signingKeyFile: join(cacheDir, SIGNING_KEY_NAME),
    createSigningKey: true,
    publicKeys: [],
  };
}

export const SIGNING_KEY_NAME = 'receipt-signing.pem';
export const PUBLIC_KEY_NAME = 'receipt-signing.pub';

export function keyFrom(secret: Buffer): HmacReceiptKey {
  return { alg: 'hmac-sha256', id: createHash('sha256').update(secret).digest('hex').slice(0, 16), secret };
}

/** The key id of an Ed25519 public key: first 16 hex of sha256(SPKI DER). */
export function publicKeyId(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export function publicKeyPem(publicKey: KeyObject): string {
  return publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

function badKey(where: string, why: string, hint: string): UhError {
  return new UhError('invalid_input', `receipt key ${where}: ${why}`, { hint });
}

/** The last key parsed, by its PEM text: an operation loads it when it opens and again to sign. */
let lastParsed: { pem: string; key: Ed25519ReceiptKey } | null = null;

/** An Ed25519 signing key from PEM (PKCS#8) text; `where` names the variable or file in errors. */
export function ed25519KeyFrom(pem: string, where: string): Ed25519ReceiptKey {
  if (lastParsed?.pem === pem) return lastParsed.key;
  const key = parseEd25519(pem, where);
  lastParsed = { pem, key };
  return key;
}

function parseEd25519(pem: string, where: string): Ed25519ReceiptKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw badKey(where, 'is not a PEM private key', 'make a key pair: uh receipt key --generate <dir>');
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    const type = privateKey.asymmetricKeyType ?? 'unknown';
    throw badKey(where, `is a ${type} key, not Ed25519`, 'make one: uh receipt key --generate <dir>');
  }
  const publicKey = createPublicKey(privateKey);
  return { alg: 'ed25519', id: publicKeyId(publicKey), privateKey, publicKey };
}

/** Write `text` to `file` only if it does not exist yet, whole (a reader never sees half a key). */
function writeOnce(file: string, text: string, mode: number): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, text, { mode, flag: 'wx' });
  try {
    linkSync(tmp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error; // another process made it first
  } finally {
    unlinkSync(tmp);
  }
  chmodSync(file, mode);
}

/** A new Ed25519 key pair in `dir` (private 0600, public 0644); refuses to replace one. */
export function generateKeyPair(dir: string): { key: Ed25519ReceiptKey; privateFile: string; publicFile: string } {
  const privateFile = join(dir, SIGNING_KEY_NAME);
  const publicFile = join(dir, PUBLIC_KEY_NAME);
  for (const file of [privateFile, publicFile]) {
    if (existsSync(file)) {
      throw new UhError('invalid_input', `${file} exists: uh never replaces a key`, {
        hint: 'pick an empty dir, or remove the old pair first',
      });
    }
  }
  makeDir(dir, 0o700);
  const { privateKey } = generateKeyPairSync('ed25519');
  writeOnce(privateFile, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 0o600);
  const key = ed25519KeyFrom(readFileSync(privateFile, 'utf8'), privateFile);
  writeOnce(publicFile, publicKeyPem(key.publicKey), 0o644);
  return { key, privateFile, publicFile };
}

/** The Ed25519 key a source names; null when none is there (and `create` is false or not allowed). */
function loadEd25519(source: ReceiptKeySource, create: boolean): Ed25519ReceiptKey | null {
  if (source.signingKey !== undefined) return ed25519KeyFrom(source.signingKey, 'UH_RECEIPT_SIGNING_KEY');
  const file = source.signingKeyFile ?? join(dirname(source.keyFile), SIGNING_KEY_NAME);
  if (!existsSync(file)) {
    if (!create) return null;
    if (!source.createSigningKey) {
      const hint = 'mount the fleet key there, or make a pair: uh receipt key --generate <dir>';
      throw badKey(`file ${file} (UH_RECEIPT_SIGNING_KEY_FILE)`, 'no such file', hint);
    }
    makeDir(dirname(file), 0o700);
    const { privateKey } = generateKeyPairSync('ed25519');
    writeOnce(file, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 0o600);
    const made = ed25519KeyFrom(readFileSync(file, 'utf8'), file);
    const pub = join(dirname(file), PUBLIC_KEY_NAME);
    if (!existsSync(pub)) writeOnce(pub, publicKeyPem(made.publicKey), 0o644);
    return made;
  }
  return ed25519KeyFrom(readFileSync(file, 'utf8'), file);
}

function loadHmac(source: ReceiptKeySource, create: boolean): HmacReceiptKey | null {
  if (source.key !== undefined) return keyFrom(Buffer.from(source.key, 'utf8'));
  if (!existsSync(source.keyFile)) {
    if (!create) return null;
    makeDir(dirname(source.keyFile), 0o700);
    writeOnce(source.keyFile, `${randomBytes(32).toString('hex')}\n`, 0o600);
  }
  const text = readFileSync(source.keyFile, 'utf8').trim();
  if (text.length < 32) {
    const hint = 'remove it to have a new key made, or set UH_RECEIPT_KEY (at least 32 characters)';
    throw badKey(`file ${source.keyFile}`, 'holds fewer than 32 characters', hint);
  }
  return keyFrom(Buffer.from(text, 'utf8'));
}

/**
 * The key to sign with: the source's signer (Ed25519 unless HMAC was asked for), made on first
 * use when `create` and it is uh's default file. Null when there is none and `create` is false.
 */
export function loadReceiptKey(source: ReceiptKeySource, create: boolean): ReceiptKey | null {
  return source.signer === 'ed25519' ? loadEd25519(source, create) : loadHmac(source, create);
}

function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? [];
}

function publicKeysOfFile(file: string, where: string, into: Map<string, KeyObject>): void {
  const blocks = pemBlocks(readFileSync(file, 'utf8'));
  const hint = 'export one: uh receipt key --public > k.pub';
  if (blocks.length === 0)
    throw badKey(`${where} ${file}`, 'holds no PEM public key (-----BEGIN PUBLIC KEY-----)', hint);
  for (const pem of blocks) {
    const key = createPublicKey({ key: pem, format: 'pem' });
    if (key.asymmetricKeyType !== 'ed25519')
      throw badKey(`${where} ${file}`, `holds a ${key.asymmetricKeyType ?? 'unknown'} key, not Ed25519`, hint);
    into.set(publicKeyId(key), key);
  }
}

/** Ed25519 public keys by key id from PEM files (several blocks each) and directories of `*.pub`. */
export function readPublicKeys(paths: string[], where = 'UH_RECEIPT_PUBLIC_KEYS'): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const path of paths) {
    if (!existsSync(path)) {
      throw badKey(
        `${where} ${path}`,
        'no such file or directory',
        'name PEM public key files, or a directory of *.pub files',
      );
    }
    if (!statSync(path).isDirectory()) {
      publicKeysOfFile(path, where, keys);
      continue;
    }
    const names = readdirSync(path)
      .filter((n) => n.endsWith('.pub'))
      .sort();
    for (const name of names) publicKeysOfFile(join(path, name), where, keys);
  }
  return keys;
}

export function emptyKeyring(): Keyring {
  return { publicKeys: new Map(), secrets: new Map() };
}

/** A keyring holding one signing key's verifying half. */
export function keyringOf(key: ReceiptKey): Keyring {
  const ring = emptyKeyring();
  if (key.alg === 'ed25519') ring.publicKeys.set(key.id, key.publicKey);
  else ring.secrets.set(key.id, key.secret);
  return ring;
}

/**
 * This host's keyring: `UH_RECEIPT_PUBLIC_KEYS`, the public half of this host's own Ed25519
 * signing key (if there is one), and its HMAC key (if there is one; older receipts). Nothing is made.
 */
export function loadKeyring(source: ReceiptKeySource): Keyring {
  const ring = emptyKeyring();
  for (const [id, key] of readPublicKeys(source.publicKeys ?? [])) ring.publicKeys.set(id, key);
  if (source.signingKeyFile !== undefined || source.signingKey !== undefined) {
    const own = loadEd25519({ ...source, createSigningKey: false }, false);
    if (own) ring.publicKeys.set(own.id, own.publicKey);
  }
  const hmac = loadHmac(source, false);
  if (hmac) ring.secrets.set(hmac.id, hmac.secret);
  return ring;
}
