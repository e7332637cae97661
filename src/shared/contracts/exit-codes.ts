/** `uh` exit codes (ARCHITECTURE "Status, verdict, exit codes"). No imports: the CLI entry loads this. */
export const EXIT = {
  ok: 0,
  failed: 1,
  invalid: 2,
  blocked: 3,
  cancelled: 4,
  unknown: 5,
  /** The receipt cannot be believed: unsigned, edited after signing, or signed by a key not in the keyring. */
  tampered: 6,
} as const;
