/**
 * Every benchmark suite, in the order `npm run bench` runs them. A suite prints its own
 * figures and ratios. Add a suite: its file in bench/ and one line here.
 * `npm run bench -- <name>` runs only the named suites.
 */
export interface BenchSuite {
  name: string;
  run: () => Promise<void>;
}

import { runHermesProxySseBench } from './hermes-proxy-sse.js';
import { runInlineVsFloor } from './inline-vs-floor.js';
import { runCodexVsUh09 } from './codex-vs-uh09.js';
import { runJsonRpcBench } from './jsonrpc-ndjson.bench.js';
import { runCodexAppServerBench } from './codex-app-server.bench.js';
import { runPiJsonl } from './pi-jsonl.js';
import { runQueueLatency } from './queue-latency.js';
import { runDiffCapture } from './diff-capture.js';
import { runCowSandboxes } from './cow-sandboxes.js';
import { runCowMissions } from './cow-missions.js';

export const SUITES: BenchSuite[] = [
  { name: 'inline', run: runInlineVsFloor },
  { name: 'codex-vs-uh09', run: runCodexVsUh09 },
  { name: 'jsonrpc-ndjson', run: runJsonRpcBench },
  { name: 'codex-app-server', run: runCodexAppServerBench },
  { name: 'pi-jsonl', run: runPiJsonl },
  { name: 'queue', run: runQueueLatency },
  { name: 'hermes-proxy-sse', run: runHermesProxySseBench },
  { name: 'diff', run: runDiffCapture },
  { name: 'cow', run: runCowSandboxes },
  { name: 'cow-missions', run: runCowMissions },
];
