/**
 * The dashboard's batches pages (`#/batches`, `#/batch/<id>`), spliced into app-script.ts's
 * closure (they use its `el`, `badge`, `opLink`, `table`, `pollPage`). Same rules: values go in
 * through textContent only; the full report opens /v1/batches/<id>/report.html (its own CSP).
 */
export const BATCH_PAGES = String.raw`
  function pctText(v) { return v === null || v === undefined ? 'n/a' : Math.round(v * 100) + '%'; }
  function batchLink(id) { return el('a', { href: '#/batch/' + encodeURIComponent(id), text: id }); }
  function batchesPage() {
    pollPage('Batches', '/v1/batches', function (body) {
      return table('batches', ['batch', 'title', 'state', 'tasks', 'runtimes', 'trials', 'created'], body.batches.map(function (b) {
        return el('tr', {}, [el('td', {}, [batchLink(b.batch_id)]), el('td', { text: b.title }), el('td', {}, [badge('s-', b.state)]),
          el('td', { text: b.tasks || '\u2013' }), el('td', { text: b.runtimes.join(', ') }), el('td', { text: b.trials }), el('td', { text: b.created_at })]);
      }));
    });
  }
  function batchPage(id) {
    pollPage('Batch ' + id, '/v1/batches/' + encodeURIComponent(id), function (body) {
      var r = body.report;
      var errors = r.trials.filter(function (t) { return t.error !== null; }).length;
      var nodes = [el('p', {}, [badge('s-', body.state), ' ', el('span', { 'data-testid': 'batch-errors', text: errors + ' infrastructure errors (excluded from the rates)' }), ' \u00b7 ',
        el('a', { href: '/v1/batches/' + encodeURIComponent(id) + '/report.html', target: '_blank', rel: 'noopener', text: 'full report' })])];
      nodes.push(table('batch-runtimes', ['runtime', 'pass@1', 'settled', 'errors', 'retried', 'mean reward', 'score'], r.runtimes.map(function (x) {
        return el('tr', {}, [el('td', { text: x.runtime }), el('td', { text: pctText(x.pass_at_1) }), el('td', { text: x.passed + '/' + x.settled }), el('td', { text: x.errors }),
          el('td', { text: x.retried }), el('td', { text: x.mean_reward === null ? '\u2013' : x.mean_reward }), el('td', { text: pctText(r.scores[x.runtime]) })]);
      })));
      if (r.matrix.length > 0) nodes.push(el('h2', { text: 'Tasks \u00d7 runtimes' }), table('batch-matrix', ['task'].concat(r.batch.runtimes), r.matrix.map(function (m) {
        return el('tr', {}, [el('td', { text: m.task })].concat(m.cells.map(function (c) {
          return el('td', { text: pctText(c.pass_at_1) + ' (' + c.passed + '/' + c.settled + ')' + (c.errors ? ' ' + c.errors + ' err' : '') });
        })));
      })));
      nodes.push(el('h2', { text: 'Trials' }), table('batch-trials', ['operation', 'task', 'runtime', 'trial', 'status', 'verdict', 'reward', 'error'], r.trials.map(function (t) {
        return el('tr', { class: t.error ? 'error' : '' }, [el('td', {}, [opLink(t.operation_id)]), el('td', { text: t.task || '\u2013' }), el('td', { text: t.runtime }), el('td', { text: t.trial }),
          el('td', {}, [badge('st-', t.status)]), el('td', {}, [badge('v-', t.verdict)]), el('td', { text: t.reward === null ? '\u2013' : t.reward }), el('td', { text: t.error || '' })]);
      })));
      return el('div', {}, nodes);
    });
  }
`;
