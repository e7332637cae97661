/**
 * Mission-provided text (title, objective, final message, check names, file paths, error
 * messages quoting input) printed for a human: control characters, C1 codes and bidi overrides
 * become visible escapes (`\x1b`, `\u202e`), so no input can drive the terminal.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const UNSAFE_WITH_LINES = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function escapeChar(c: string): string {
  const code = c.charCodeAt(0);
  if (c === '\n') return '\\n';
  if (c === '\t') return '\\t';
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Safe for a terminal; newlines and tabs kept unless `oneLine`. */
export function terminalText(value: string, options: { oneLine?: boolean } = {}): string {
  return value.replace(options.oneLine ? UNSAFE_WITH_LINES : UNSAFE, escapeChar);
}
