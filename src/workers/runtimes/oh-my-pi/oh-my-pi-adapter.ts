/**
 * The `oh-my-pi` runtime (`omp`, a pi fork with the same `--print --mode json` wire; see
 * `../pi/pi-protocol.ts` for its differences). It shares the pi implementation in `../pi/`; only
 * its defaults differ: the `omp` binary, and the prompt as the last argument, the form the spec
 * names (omp 18 also reads a piped stdin: `prompt_via: stdin` works too).
 */
import { createPiAdapter } from '../pi/pi-adapter.js';

export const ohMyPiAdapter = createPiAdapter({
  id: 'oh-my-pi',
  displayName: 'oh-my-pi (omp --mode json)',
  binary: 'omp',
  prompt_via: 'argv',
  install: 'bun install -g @oh-my-pi/pi-coding-agent',
  agentDir: { env: 'PI_CODING_AGENT_DIR', home: '.omp/agent' },
});
