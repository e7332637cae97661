/**
 * The runtime-final-message sentinel (spec "Runtime-final-message capture protocol").
 * A fenced block tagged `uh-runtime-final-message`; the LAST complete block wins; CRLF,
 * surrounding whitespace and spaces after the tag are tolerated.
 */
export const SENTINEL_TAG = 'uh-runtime-final-message';

/** Appended to every prompt by the pipeline (never by an adapter). */
export function runtimeFinalMessageInstruction(): string {
  return [
    '## Runtime final message',
    '',
    'At the very end of your response, emit your one-paragraph summary inside',
    `a fenced code block tagged \`${SENTINEL_TAG}\`:`,
    '',
    '```' + SENTINEL_TAG,
    '<one-paragraph summary of what you did, what changed, and any caveats>',
    '```',
    '',
    'This fenced block MUST be the last block in your output. The harness extracts its content verbatim into runtime-final.txt.',
  ].join('\n');
}

const openFence = (tag: string): RegExp => new RegExp(`^\\s*\`\`\`${tag}[ \\t]*$`);
const CLOSE = /^\s*```\s*$/;
/** Content kept per block; a longer block is cut with a marker (memory stays bounded). */
const MAX_BLOCK_CHARS = 64 * 1024;
/** Outside a block, an unfinished line longer than this cannot be an opening fence: skip it. */
const MAX_FENCE_LINE_CHARS = 1024;

/**
 * Streaming scanner: feed text in any chunking; `result()` is the last complete block or null.
 * Memory is bounded by one line plus one block, whatever the stream's size. `tag` defaults to the
 * final-message sentinel (the usage block, `uh-runtime-usage`, uses the same fences).
 */
export class SentinelScanner {
  private readonly open: RegExp;
  private readonly maxBlockChars: number;
  private partial = '';
  private inBlock = false;
  private current: string[] = [];
  private currentChars = 0;
  private last: string | null = null;
  /** Inside an over-long line outside any block: drop text up to the next newline. */
  private skipping = false;

  constructor(tag: string = SENTINEL_TAG, maxBlockChars: number = MAX_BLOCK_CHARS) {
    this.open = openFence(tag);
    this.maxBlockChars = maxBlockChars;
  }

  push(chunk: string): this {
    let text = this.partial + chunk;
    if (this.skipping) {
      // Without this, a long unbroken line would be re-split on every push (quadratic).
      const newline = text.indexOf('\n');
      if (newline < 0) return this;
      text = text.slice(newline + 1);
      this.skipping = false;
    }
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(line);
    if (!this.inBlock && this.partial.length > MAX_FENCE_LINE_CHARS) {
      this.partial = '';
      this.skipping = true;
    } else if (this.partial.length > this.maxBlockChars * 2) this.partial = this.partial.slice(-this.maxBlockChars * 2);
    return this;
  }

  result(): string | null {
    if (this.partial !== '') {
      const rest = this.partial;
      this.partial = '';
      this.line(rest);
    }
    return this.last;
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!this.inBlock) {
      if (this.open.test(line)) {
        this.inBlock = true;
        this.current = [];
        this.currentChars = 0;
      }
      return;
    }
    if (CLOSE.test(line)) {
      this.inBlock = false;
      this.last = this.current.join('\n').trim();
      return;
    }
    if (this.open.test(line)) {
      // An unclosed block followed by a new opening: the newer one is the candidate.
      this.current = [];
      this.currentChars = 0;
      return;
    }
    if (this.currentChars < this.maxBlockChars) {
      this.current.push(line);
      this.currentChars += line.length + 1;
      if (this.currentChars >= this.maxBlockChars) this.current.push('[… final message truncated by uh]');
    }
  }
}

/** The last sentinel block's content in `text`, or null when there is none. */
export function extractRuntimeFinalMessageSentinel(text: string): string | null {
  return new SentinelScanner().push(text).result();
}

/** Sentinel preferred, the runtime's native text as fallback. */
export function resolveFinalMessage(
  scanned: string | null,
  nativeFallback: string | null,
): { final_message: string; final_message_source: 'sentinel' | 'native' | 'none' } {
  if (scanned !== null) return { final_message: scanned, final_message_source: 'sentinel' };
  if (nativeFallback !== null && nativeFallback.trim() !== '') {
    return { final_message: nativeFallback.trim(), final_message_source: 'native' };
  }
  return { final_message: '', final_message_source: 'none' };
}
