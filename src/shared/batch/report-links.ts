/**
 * Where the HTML report's per-trial links point when the batch ran on the fleet: the API's own
 * pages, never a path on a worker's host. `events` is the operation's event stream
 * (`GET /v1/operations/:id/events`), `transcript` the dashboard's operation page (`#/op/<id>`:
 * the runtime's messages as they happened, the final message, the checks and the diff). `base` is
 * the API's URL (`--api-url`), '' for a report the API serves itself. Inline batches link their
 * artifact files instead (producers/batch-links.ts).
 */
import type { TrialLink } from './report-html.js';
import type { TrialRow } from './report.js';

export function apiTrialLinks(base: string): (t: TrialRow) => TrialLink[] {
  const root = base.replace(/\/+$/, '');
  return (t) => {
    const id = encodeURIComponent(t.operation_id);
    return [
      { rel: 'events', label: 'events', href: `${root}/v1/operations/${id}/events` },
      { rel: 'transcript', label: 'transcript', href: `${root}/#/op/${id}` },
    ];
  };
}
