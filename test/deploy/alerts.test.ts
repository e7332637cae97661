/**
 * The alerting rules and the Grafana dashboard (issue 31): the rules pass `promtool check rules`
 * and their unit tests (`promtool test rules`: each alert fires on the fleet state it names, and
 * only then); the dashboard parses and every expression, in it and in the rules, reads only
 * metrics uh exports (the names registered by the /metrics registry, default process metrics
 * included), so a renamed metric breaks this test rather than a panel in production.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ApiMetrics } from '../../src/producers/http/metrics.js';
import type { QueueClient } from '../../src/producers/queue/queue-client.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = join(ROOT, 'infra/prometheus/uh-alerts.yml');
const DASHBOARD = join(ROOT, 'infra/grafana/uh-fleet-dashboard.json');

/** promtool (Debian package `prometheus`; .ci/run installs it), with its output on failure. */
function promtool(args: string[]): string {
  try {
    return execFileSync('promtool', args, { cwd: join(ROOT, 'infra/prometheus'), encoding: 'utf8' });
  } catch (error) {
    const e = error as { code?: string; stdout?: string; stderr?: string; message: string };
    if (e.code === 'ENOENT')
      throw new Error('promtool is not installed: apt-get install prometheus (see .ci/run)', { cause: error });
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`, { cause: error });
  }
}

/** Every series name uh's /metrics can export (histograms with their _bucket/_sum/_count series). */
function exportedNames(): Set<string> {
  const metrics = new ApiMetrics(null as unknown as QueueClient);
  const names = new Set<string>();
  for (const m of metrics.registry.getMetricsAsArray()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
  }
  return names;
}

/** Metric names in a PromQL expression: identifiers not followed by `(` and not inside `{…}`, quotes or `[…]`. */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]');
  // Keywords, and aggregations written `sum by (…) (…)` (not followed by their parenthesis).
  const keywords = new Set(
    'by without on ignoring group_left group_right and or unless offset bool sum min max avg count group stddev stdvar topk bottomk quantile count_values'.split(
      ' ',
    ),
  );
  const found = [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1] as string);
  // Label lists after by/without/on: `by (runtime)`.
  const labelLists = [...bare.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)].flatMap((m) =>
    (m[1] as string).split(',').map((l) => l.trim()),
  );
  return found.filter((n) => !keywords.has(n) && !labelLists.includes(n) && !/^\d/.test(n));
}

describe('Prometheus alerting rules', () => {
  it('pass promtool check rules and promtool test rules', () => {
    expect(promtool(['check', 'rules', RULES])).toMatch(/SUCCESS: \d+ rules found/);
    expect(promtool(['test', 'rules', 'uh-alerts.test.yml'])).toContain('SUCCESS');
  });

  it('cover the fleet failures an operator must hear about, each expression on exported metrics', () => {
    const doc = parse(readFileSync(RULES, 'utf8')) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
    };
    const rules = doc.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'UhResultsWorkerDown',
        'UhRuntimeQueueUnserved',
        'UhWorkerGone',
        'UhUnknownOperations',
        'UhOutboxLag',
        'UhQueueAge',
        'UhDiskBelowFloor',
        'UhWebhookFailures',
      ]),
    );
    const names = exportedNames();
    for (const rule of rules) {
      const used = metricsIn(rule.expr);
      expect(used.length, rule.alert).toBeGreaterThan(0);
      for (const name of used) expect(names.has(name), `${rule.alert} reads ${name}`).toBe(true);
    }
  });
});

describe('Grafana dashboard', () => {
  it('parses, and every panel query reads only metrics uh exports', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      uid: string;
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    expect(dashboard.uid).toBe('uh-fleet');
    const names = exportedNames();
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ title: p.title, expr: t.expr })));
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set<string>();
    for (const { title, expr } of exprs) {
      const metrics = metricsIn(expr);
      expect(metrics.length, title).toBeGreaterThan(0);
      for (const name of metrics) {
        expect(names.has(name), `panel "${title}" reads ${name}`).toBe(true);
        used.add(name);
      }
    }
    // The dashboard shows what the alerts watch.
    for (const name of ['uh_workers_live', 'uh_outbox_lag', 'uh_operations_unknown', 'process_resident_memory_bytes'])
      expect(used.has(name), name).toBe(true);
  });

  it('the checker catches a metric uh does not export', () => {
    expect(metricsIn('sum by (runtime) (rate(uh_no_such_total{state="x"}[5m])) > 0')).toEqual(['uh_no_such_total']);
    expect(exportedNames().has('uh_no_such_total')).toBe(false);
  });
});
