/**
 * zod's mode for this process, set before any schema exists: main.ts imports this module first.
 * zod compiles a fast path for each object schema on its first parse (`new Function`), which pays
 * off in a process that parses the same shapes thousands of times, and it decides that when the
 * schema is made, not when it parses. A command that parses its config, one mission and a few
 * dozen runtime lines runs ~3% faster without it (docs/benchmarks.md), so every command but the
 * ones that serve until stopped runs jitless.
 */
import { z } from 'zod';

/** Commands that serve until stopped: they keep zod's compiled parsers. */
export const LONG_RUNNING = new Set(['worker start', 'api start']);

/** True when the command line `argv` (after `uh`) is one that serves until stopped. */
export const longRunning = (argv: readonly string[]): boolean => LONG_RUNNING.has(`${argv[0]} ${argv[1]}`);

if (!longRunning(process.argv.slice(2))) z.config({ jitless: true });
