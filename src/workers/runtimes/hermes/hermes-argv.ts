import type { HermesSettings } from './hermes-settings.js';

/** What the installed `hermes chat` offers, read from its `--help`. */
export interface HermesFeatures {
  /** `--format stream-json` (JSONL events and a terminal `result`). */
  streamJson: boolean;
  /** `--query-file PATH` (`-` reads the prompt from stdin). */
  queryFile: boolean;
}

/** Features from the text of `hermes chat --help`. Pure. */
export function parseHermesHelp(help: string): HermesFeatures {
  return { streamJson: /stream-json/.test(help), queryFile: /--query-file\b/.test(help) };
}

export interface HermesLaunchMode {
  format: 'stream-json' | 'text';
  /** The prompt goes through stdin with `--query-file -` instead of `-q <prompt>`. */
  promptViaStdin: boolean;
}

/** The launch mode for a config and the detected features. Pure. */
export function hermesLaunchMode(config: HermesSettings, features: HermesFeatures): HermesLaunchMode {
  const format = config.format === 'auto' ? (features.streamJson ? 'stream-json' : 'text') : config.format;
  return { format, promptViaStdin: config.prompt_via === 'auto' && features.queryFile };
}

/** `hermes chat -q <prompt> -Q [--format stream-json] --source … …`. Never passed through a shell. */
export function buildHermesArgv(config: HermesSettings, prompt: string, mode: HermesLaunchMode): string[] {
  const argv = [config.binary, 'chat'];
  if (mode.promptViaStdin) argv.push('--query-file', '-');
  else argv.push('-q', prompt);
  argv.push('-Q');
  if (mode.format === 'stream-json') argv.push('--format', 'stream-json');
  argv.push('--source', config.source);
  if (config.model) argv.push('-m', config.model);
  if (config.provider) argv.push('--provider', config.provider);
  if (config.toolsets) argv.push('-t', config.toolsets.join(','));
  if (config.yolo) argv.push('--yolo');
  if (config.max_turns !== undefined) argv.push('--max-turns', String(config.max_turns));
  if (config.ignore_rules) argv.push('--ignore-rules');
  if (config.ignore_user_config) argv.push('--ignore-user-config');
  argv.push(...config.extra_args);
  return argv;
}
