/**
 * Where a command hears Ctrl-C and SIGTERM. By default from this process's signals; while a
 * resident uh (`uh daemon start`) serves a run, from the client that handed the run over, whose
 * terminal got the signal (resident/server.ts).
 */
export type Interrupt = 'SIGINT' | 'SIGTERM';
export type InterruptListener = (signal: Interrupt) => void;

/** A source of interrupts: `listen` returns the function that stops listening. */
export interface InterruptSource {
  listen(listener: InterruptListener): () => void;
}

const processSignals: InterruptSource = {
  listen(listener) {
    const onInt = () => listener('SIGINT');
    const onTerm = () => listener('SIGTERM');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    return () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    };
  },
};

let source: InterruptSource = processSignals;

/** Calls `listener` on the first Ctrl-C or SIGTERM of this command; the result stops listening. */
export function onInterrupt(listener: InterruptListener): () => void {
  return source.listen(listener);
}

/** Runs `fn` with interrupts from `from` instead of the process's signals. */
export async function withInterrupts<T>(from: InterruptSource, fn: () => Promise<T>): Promise<T> {
  const before = source;
  source = from;
  try {
    return await fn();
  } finally {
    source = before;
  }
}
