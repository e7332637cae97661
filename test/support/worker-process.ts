/**
 * `uh worker start` as a separate OS process, for queue tests: resolves once the worker printed
 * its ready line; `stop()` sends a signal and waits for the exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { UH_BIN } from './cli.js';

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  output: () => string;
  /** Resolves with the exit code (null after a kill signal). */
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
  /** Wait until the worker's output contains `text`. */
  waitForOutput: (text: string, timeoutMs?: number) => Promise<void>;
}

export async function startWorker(
  args: string[],
  options: {
    cwd: string;
    env: Record<string, string | undefined>;
    /** Run as this uid and gid (the test process must be root); unset or null: as this process. */
    as?: { uid: number; gid: number } | null;
  },
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [UH_BIN, 'worker', 'start', ...args], {
    cwd: options.cwd,
    env: { ...process.env, UH_LOG_LEVEL: 'silent', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.as ? { uid: options.as.uid, gid: options.as.gid } : {}),
  });
  let out = '';
  const waiters: Array<() => void> = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of waiters.splice(0)) w();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const waitForOutput = (text: string, timeoutMs = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`worker did not print "${text}" within ${timeoutMs} ms; output:\n${out}`)),
        timeoutMs,
      );
      const check = () => {
        if (out.includes(text)) {
          clearTimeout(timer);
          resolve();
        } else waiters.push(check);
      };
      void exited.then(() => {
        if (!out.includes(text)) {
          clearTimeout(timer);
          reject(new Error(`worker exited before printing "${text}"; output:\n${out}`));
        }
      });
      check();
    });
  await waitForOutput(args.includes('--runtime') || !args.includes('--results') ? 'ready' : 'results-ready');
  return {
    child,
    pid: child.pid as number,
    output: () => out,
    exited,
    waitForOutput,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
