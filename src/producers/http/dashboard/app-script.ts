/**
 * The dashboard's browser script (plain ES2017, no framework, no network beyond this API).
 * Every value from the API goes into the DOM through textContent or a fixed attribute we build
 * ourselves; innerHTML is never used, so a mission title `<script>…` shows as text.
 * Requests ride the HttpOnly session cookie; the script never sees the token.
 */
import { EVENT_TYPES } from '../../../shared/contracts/event.js';
import { BATCH_PAGES } from './batches-script.js';

const SCRIPT = String.raw`(function () {
  'use strict';
  var EVENT_NAMES = __EVENT_NAMES__;
  var SETTLED = { finished: true, unknown: true };
  var main = document.getElementById('main');
  var logout = document.getElementById('logout');
  var timers = [];
  var source = null;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null) return;
      if (k === 'text') e.textContent = String(v);
      else if (k === 'class') e.className = v;
      else if (k.indexOf('on') === 0) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }
  function cls(prefix, value) { return prefix + String(value || 'none').replace(/[^a-z_]/g, ''); }
  function badge(prefix, value) { return el('span', { class: 'badge ' + cls(prefix, value), text: value || '\u2013' }); }
  function opLink(id) { return el('a', { href: '#/op/' + encodeURIComponent(id), text: id }); }
  function show(nodes) { main.replaceChildren.apply(main, nodes); }
  function clearLive() {
    timers.forEach(clearInterval);
    timers = [];
    if (source) { source.close(); source = null; }
  }

  function Unauthorized() {}
  function api(path, options) {
    var opts = Object.assign({ credentials: 'same-origin' }, options || {});
    opts.headers = Object.assign({ 'x-uh-dashboard': '1' }, opts.headers || {});
    return fetch(path, opts).then(function (res) {
      if (res.status === 401) { showLogin(); throw new Unauthorized(); }
      return res;
    });
  }
  function json(path) {
    return api(path).then(function (res) {
      return res.json().then(function (body) {
        if (!res.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + res.status));
        return body;
      });
    });
  }
  function failed(err) {
    if (err instanceof Unauthorized) return;
    show([el('p', { class: 'error', text: String(err && err.message || err) })]);
  }

  function showLogin(message) {
    clearLive();
    logout.hidden = true;
    var input = el('input', { type: 'password', name: 'token', autocomplete: 'current-password', 'data-testid': 'token', required: 'required' });
    var note = el('p', { class: 'error', text: message || '' });
    var form = el('form', { 'data-testid': 'login', onsubmit: function (ev) {
      ev.preventDefault();
      fetch('/v1/session', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: input.value }) })
        .then(function (res) { input.value = ''; if (res.ok) route(); else note.textContent = 'Wrong token.'; });
    } }, [el('label', {}, ['API token (UH_API_TOKEN) ', input]), ' ', el('button', { type: 'submit', text: 'Log in' })]);
    show([el('h1', { text: 'Log in' }), form, note]);
  }

  // ---- operations list ----
  var filters = { state: '', runtime: '', verdict: '', label: '' };
  function select(name, options) {
    var s = el('select', { name: name }, options.map(function (o) { return el('option', { value: o, text: o || 'any' }); }));
    s.value = filters[name];
    return s;
  }
  function operationsPage() {
    var form = el('form', { class: 'filters', 'data-testid': 'filters' }, [
      el('label', {}, ['state', select('state', ['', 'queued', 'running', 'verifying', 'finished', 'unknown'])]),
      el('label', {}, ['runtime', el('input', { name: 'runtime', value: filters.runtime, size: 12 })]),
      el('label', {}, ['verdict', select('verdict', ['', 'verified', 'verification_failed', 'scope_violation', 'unverified'])]),
      el('label', {}, ['label', el('input', { name: 'label', value: filters.label, placeholder: 'key=value', size: 14 })]),
      el('button', { type: 'submit', text: 'Filter' }),
    ]);
    var body = el('tbody', { 'data-testid': 'operations' });
    var more = el('p', { class: 'muted' });
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      Object.keys(filters).forEach(function (k) { filters[k] = form.elements[k].value.trim(); });
      load();
    });
    function load() {
      var q = new URLSearchParams({ limit: '100' });
      Object.keys(filters).forEach(function (k) { if (filters[k]) q.set(k, filters[k]); });
      return json('/v1/operations?' + q.toString()).then(function (page) {
        body.replaceChildren.apply(body, page.operations.map(function (op) {
          return el('tr', { 'data-operation': op.operation_id }, [
            el('td', {}, [opLink(op.operation_id)]), el('td', { class: 'title', text: op.title || '' }),
            el('td', { text: op.runtime }), el('td', {}, [badge('s-', op.state)]), el('td', {}, [badge('st-', op.status)]),
            el('td', {}, [badge('v-', op.verdict)]), el('td', { class: 'muted', text: op.updated_at }),
          ]);
        }));
        more.textContent = page.next_cursor ? 'Showing the newest 100 matches.' : page.operations.length + ' operation(s).';
      }).catch(failed);
    }
    show([el('h1', { text: 'Operations' }), form, el('table', {}, [
      el('thead', {}, [el('tr', {}, ['operation', 'title', 'runtime', 'state', 'status', 'verdict', 'updated'].map(function (h) { return el('th', { text: h }); }))]), body,
    ]), more]);
    load();
    timers.push(setInterval(load, 2000));
  }

  // ---- one operation ----
  function diffView(text) {
    return el('pre', { class: 'diff', 'data-testid': 'diff' }, text.split('\n').map(function (line) {
      var kind = /^(\+\+\+|---|diff --git)/.test(line) ? 'file' : line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : line.indexOf('@@') === 0 ? 'hunk' : '';
      return el('span', { class: kind, text: line });
    }));
  }
  // The receipt carries each check's head and tail (scrubbed, a few KiB); the full log is an artifact.
  function checkOutput(c) {
    var head = c.output_head || '', tail = c.output_tail || '';
    if (!head && !tail) return el('span', { class: 'muted', text: c.output_bytes + ' bytes, no output kept' });
    var text = head === tail || !tail ? head : (tail.indexOf(head) === 0 ? tail : head + '\n\u2026\n' + tail);
    return el('pre', { 'data-testid': 'check-output', text: text });
  }
  function checksView(checks) {
    if (!checks || checks.length === 0) return el('p', { class: 'muted', text: 'No checks.' });
    return el('table', { 'data-testid': 'checks' }, [el('tr', {}, ['check', 'command', 'result', 'exit', 'seconds', 'output'].map(function (h) { return el('th', { text: h }); }))].concat(checks.map(function (c) {
      return el('tr', {}, [el('td', { text: c.name }), el('td', {}, [el('code', { text: (c.argv || []).join(' ') })]),
        el('td', {}, [badge('v-', c.passed ? 'passed' : (c.timed_out ? 'timed_out' : 'failed'))]), el('td', { text: c.exit_code === null ? (c.signal || '') : c.exit_code }),
        el('td', { text: (c.duration_ms / 1000).toFixed(1) }), el('td', {}, [checkOutput(c)])]);
    })));
  }
  function eventLine(type, data) {
    var rest = Object.assign({}, data.data || data);
    return el('li', { 'data-type': type }, [el('span', { class: 'type', text: type }), el('span', { class: 'muted', text: (data.ts || data.at || '') + ' ' }), JSON.stringify(rest)]);
  }
  function operationPage(id) {
    var head = el('div');
    var events = el('ol', { class: 'events', 'data-testid': 'events' });
    var streaming = el('p', { class: 'muted', 'data-testid': 'stream-state', text: 'connecting\u2026' });
    var result = el('div', { 'data-testid': 'result' });
    var outcome = el('p', { 'data-testid': 'cancel-outcome' });
    var cancel = el('button', { type: 'button', class: 'danger', 'data-testid': 'cancel', text: 'Cancel', onclick: function () {
      cancel.disabled = true;
      api('/v1/operations/' + encodeURIComponent(id) + '/cancel', { method: 'POST' }).then(function (res) { return res.json(); })
        .then(function (body) { outcome.textContent = 'Cancel: ' + (body.outcome || (body.error && body.error.message)); }).catch(failed);
    } });
    // An unknown operation (dispatch not proven) is settled by recover, never re-run: the server decides how.
    var recover = el('button', { type: 'button', class: 'danger', 'data-testid': 'recover', text: 'Recover', hidden: true, onclick: function () {
      recover.disabled = true;
      api('/v1/operations/' + encodeURIComponent(id) + '/recover', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(function (res) { return res.json(); })
        .then(function (body) { outcome.textContent = 'Recover: ' + (body.steps ? body.steps.join('; ') : (body.error && body.error.message)); return settle(); }).catch(failed);
    } });
    // A record's verdict is not proof: once the receipt is read, an untrusted one shows the verdict as unproven.
    function header(op, sig) {
      var verdict = sig && sig.state !== 'valid' ? badge('v-', 'unproven') : badge('v-', op.verdict);
      head.replaceChildren(el('h1', { 'data-testid': 'op-title', text: op.title || op.operation_id }),
        el('p', {}, [el('code', { text: op.operation_id }), ' ', op.runtime, ' ', badge('s-', op.state), ' ', badge('st-', op.status), ' ', verdict,
          op.exit_code === null ? '' : ' exit ' + op.exit_code, op.unknown_reason ? ' \u2014 ' + op.unknown_reason : '']));
      cancel.hidden = !!SETTLED[op.state];
      recover.hidden = op.state !== 'unknown';
    }
    var SIGNATURE_TEXT = { valid: 'signature valid', unsigned: 'UNSIGNED receipt', invalid: 'INVALID signature', unknown_key: 'signed by an unknown key' };
    // A verified operation can become a branch (docs/promotion.md); the server decides the policy.
    function promoteBox(r) {
      if (r.verdict !== 'verified') return el('span');
      var said = el('span', { 'data-testid': 'promote-outcome' });
      var button = el('button', { type: 'button', 'data-testid': 'promote', text: 'Promote to a branch', onclick: function () {
        button.disabled = true;
        api('/v1/operations/' + encodeURIComponent(id) + '/promote', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(function (res) { return res.json(); })
          .then(function (body) { said.textContent = body.promotion ? ' branch ' + body.promotion.branch + ' at ' + String(body.promotion.commit).slice(0, 12) : ' ' + (body.error && body.error.message); }).catch(failed);
      } });
      return el('p', {}, [button, said]);
    }
    function settle() {
      return json('/v1/operations/' + encodeURIComponent(id)).then(function (body) {
        var sig = body.signature || (body.receipt ? { state: 'unsigned', key_id: null, reason: 'no signature state from the server' } : null);
        header(body.operation, sig);
        var r = body.receipt;
        if (!r) return;
        var trusted = sig.state === 'valid';
        var sigBox = el('p', { 'data-testid': 'signature', 'data-state': sig.state }, [
          el('span', { class: 'badge ' + cls('sig-', sig.state), text: SIGNATURE_TEXT[sig.state] || sig.state }), ' ', sig.reason || '']);
        var parts = [sigBox, trusted ? promoteBox(r) : el('span'), el('h2', { text: 'Final message' }), el('pre', { 'data-testid': 'final-message', text: r.final_message || '(none)' }),
          el('h2', { text: 'Checks' }), checksView(r.checks), el('h2', { text: 'Diff' })];
        var diffBox = el('div', {}, [el('p', { class: 'muted', text: 'No changes.' })]);
        parts.push(diffBox, el('h2', { text: 'Receipt' }), el('pre', { 'data-testid': 'receipt', text: JSON.stringify(r, null, 2) }));
        result.replaceChildren.apply(result, parts);
        if (r.diff_bytes > 0) api('/v1/operations/' + encodeURIComponent(id) + '/diff').then(function (res) { return res.text(); })
          .then(function (text) { diffBox.replaceChildren(diffView(text)); }).catch(failed);
      });
    }
    show([el('p', {}, [el('a', { href: '#/', text: '\u2190 operations' })]), head, cancel, recover, outcome, el('h2', { text: 'Events' }), streaming, events, result]);
    json('/v1/operations/' + encodeURIComponent(id)).then(function (body) {
      header(body.operation);
      source = new EventSource('/v1/operations/' + encodeURIComponent(id) + '/events');
      source.onopen = function () { streaming.textContent = 'live'; };
      EVENT_NAMES.forEach(function (name) {
        source.addEventListener(name, function (ev) {
          var data = {};
          try { data = JSON.parse(ev.data); } catch (e) { data = { raw: ev.data }; }
          if (name === 'end') {
            source.close();
            source = null;
            streaming.textContent = 'settled';
            settle().catch(failed);
          } else {
            events.appendChild(eventLine(name, data));
            if (name !== 'runtime.log' && name !== 'runtime.output') json('/v1/operations/' + encodeURIComponent(id)).then(function (b) { header(b.operation); }).catch(function () {});
          }
        });
      });
      source.onerror = function () { if (source) streaming.textContent = 'reconnecting\u2026'; };
    }).catch(failed);
  }

  // ---- fleet ----
  function table(testid, heads, rows) {
    return el('table', { 'data-testid': testid }, [el('thead', {}, [el('tr', {}, heads.map(function (h) { return el('th', { text: h }); }))]), el('tbody', {}, rows)]);
  }
  function pollPage(title, path, render) {
    var box = el('div');
    function load() { return json(path).then(function (body) { box.replaceChildren(render(body)); }).catch(failed); }
    show([el('h1', { text: title }), box]);
    load();
    timers.push(setInterval(load, 3000));
  }
  function workersPage() {
    pollPage('Workers', '/v1/workers', function (body) {
      return table('workers', ['worker', 'role', 'host', 'runtimes', 'concurrency', 'running', 'last heartbeat'], body.workers.map(function (w) {
        return el('tr', {}, [el('td', { text: w.id }), el('td', { text: w.role || 'runtime' }), el('td', { text: w.host || '' }), el('td', { text: w.runtimes.join(', ') }), el('td', { text: w.concurrency == null ? '' : w.concurrency }),
          el('td', {}, w.running_operations.map(function (id) { return el('div', {}, [opLink(id)]); })), el('td', { text: w.last_heartbeat || '' })]);
      }));
    });
  }
  function queuesPage() {
    var states = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'];
    pollPage('Queues', '/v1/queues', function (body) {
      return table('queues', ['runtime', 'live workers'].concat(states), body.queues.map(function (q) {
        return el('tr', { class: q.live_workers === 0 && q.jobs.waiting > 0 ? 'error' : '' }, [el('td', { text: q.runtime }), el('td', { text: q.live_workers })]
          .concat(states.map(function (s) { return el('td', { text: q.jobs[s] }); })));
      }));
    });
  }

__BATCH_PAGES__
  function route() {
    clearLive();
    logout.hidden = false;
    var hash = location.hash || '#/';
    var m = /^#\/op\/(.+)$/.exec(hash);
    if (m) operationPage(decodeURIComponent(m[1]));
    else if (hash === '#/workers') workersPage();
    else if (hash === '#/queues') queuesPage();
    else if (hash === '#/batches') batchesPage();
    else if (/^#\/batch\/(.+)$/.test(hash)) batchPage(decodeURIComponent(hash.slice('#/batch/'.length)));
    else operationsPage();
  }
  logout.addEventListener('click', function () {
    fetch('/v1/session', { method: 'DELETE', credentials: 'same-origin', headers: { 'x-uh-dashboard': '1' } }).then(function () { showLogin(); });
  });
  window.addEventListener('hashchange', route);
  route();
})();
`;

/** The script with the event names of this build (one SSE listener per named event). */
export function dashboardScript(): string {
  return SCRIPT.replace('__EVENT_NAMES__', JSON.stringify([...EVENT_TYPES, 'end'])).replace(
    '__BATCH_PAGES__',
    BATCH_PAGES,
  );
}
