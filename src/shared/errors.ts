/**
 * The few error classes of Ultimate Harness. Each carries a `kind` (what went wrong, as data),
 * an operator `hint` (the next step), and is recognisable across realms and processes by
 * `Symbol.for` marker or by `name`, never only by `instanceof`.
 */
const MARKER = Symbol.for('uh.error');

export type UhErrorKind =
  | 'invalid_input' // a mission, manifest, flag or config value is wrong: exit 2
  | 'conflict' // the same operation_id with another contract digest: exit 2
  | 'unsupported_capability' // the runtime cannot do what the mission requires: exit 2
  | 'not_found' // an operation, adapter or file that does not exist: exit 2
  | 'runtime_unavailable' // binary missing, endpoint unreachable: the operator must act
  | 'push_rejected' // a remote refused a promotion push (or could not be reached): exit 3
  | 'untrusted_receipt' // a receipt that is unsigned, forged or signed by an unknown key: exit 6
  | 'sandbox' // git worktree or mirror failure
  | 'internal';

export class UhError extends Error {
  readonly [MARKER] = true;
  override readonly name: string = 'UhError';
  readonly kind: UhErrorKind;
  /** The operator's next step, one sentence. */
  readonly hint: string | undefined;
  /** One line per problem, each naming the path at fault (`scope.allowed_change_globs[2]: …`). */
  readonly details: readonly string[];

  constructor(
    kind: UhErrorKind,
    message: string,
    options: { hint?: string; details?: readonly string[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.hint = options.hint;
    this.details = options.details ?? [];
  }

  static isInstance(value: unknown): value is UhError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** Raised when a second contract is submitted under an existing operation_id. */
export class OperationConflictError extends UhError {
  override readonly name = 'OperationConflict';
  constructor(operationId: string, existingDigest: string, newDigest: string) {
    super('conflict', `operation ${operationId} already exists with another contract digest`, {
      hint: `existing ${existingDigest.slice(0, 19)}…, submitted ${newDigest.slice(0, 19)}…: use a new operation_id for a changed mission`,
    });
  }
}

export function invalidInput(message: string, details: readonly string[] = [], hint?: string): UhError {
  return new UhError('invalid_input', message, { details, ...(hint === undefined ? {} : { hint }) });
}

/** The message of anything thrown, without a stack. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
