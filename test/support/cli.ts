import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const UH_BIN = fileURLToPath(new URL('../../bin/uh.js', import.meta.url));
export const FAKE_AGENT = fileURLToPath(new URL('../fixtures/bin/fake-agent.mjs', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Peak resident memory of the uh process in KiB (VmHWM), sampled until it exited. */
  peakRssKb: number;
}

/** Run the built `uh` CLI as a real child process. */
export function runCli(
  args: string[],
  options: {
    cwd: string;
    env?: Record<string, string | undefined>;
    onSpawn?: (pid: number) => void;
    sampleMemory?: boolean;
    /** Run as this uid and gid (the test process must be root); unset or null: as this process. */
    as?: { uid: number; gid: number } | null;
  },
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [UH_BIN, ...args], {
      cwd: options.cwd,
      env: { ...process.env, UH_LOG_LEVEL: 'silent', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.as ? { uid: options.as.uid, gid: options.as.gid } : {}),
    });
    let stdout = '';
    let stderr = '';
    let peak = 0;
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const sampler = options.sampleMemory
      ? setInterval(async () => {
          try {
            const { readFileSync } = await import('node:fs');
            const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
            if (m) peak = Math.max(peak, Number(m[1]));
          } catch {
            // exited
          }
        }, 20)
      : undefined;
    if (child.pid) options.onSpawn?.(child.pid);
    child.on('close', (code) => {
      if (sampler) clearInterval(sampler);
      resolve({ code, stdout, stderr, peakRssKb: peak });
    });
  });
}
