/**
 * The dashboard's static shell: HTML and CSS. It holds no data and no token; app-script.ts
 * reads the API with the session cookie and builds the DOM with textContent only, so nothing
 * a mission says (title, messages, diff) is ever parsed as HTML.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>uh dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/app.css">
</head>
<body>
<header>
<strong>uh</strong>
<nav>
<a href="#/" data-testid="nav-operations">Operations</a>
<a href="#/workers" data-testid="nav-workers">Workers</a>
<a href="#/queues" data-testid="nav-queues">Queues</a>
<a href="#/batches" data-testid="nav-batches">Batches</a>
<a href="/admin/queues/">BullMQ</a>
</nav>
<button type="button" id="logout" hidden>Log out</button>
</header>
<main id="main"><p>Loading…</p></main>
<script src="/dashboard/app.js"></script>
</body>
</html>
`;

export const DASHBOARD_CSS = `
:root { color-scheme: light dark; --muted: #888; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --run: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1em; border-bottom: 1px solid #8884; }
header nav { display: flex; gap: 1em; flex: 1; }
main { padding: 1em; max-width: 1200px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #8883; vertical-align: top; }
th { font-weight: 600; }
form.filters { display: flex; gap: .6em; flex-wrap: wrap; margin-bottom: 1em; align-items: end; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
.badge { display: inline-block; padding: 0 .5em; border-radius: 1em; border: 1px solid currentColor; font-size: 12px; }
.s-running, .s-verifying { color: var(--run); }
.s-queued { color: var(--muted); }
.s-finished { color: var(--ok); }
.s-unknown, .v-failed, .v-timed_out, .v-verification_failed, .v-scope_violation, .st-failed, .st-cancelled, .st-blocked { color: var(--bad); }
.v-passed, .v-verified, .st-completed { color: var(--ok); }
.v-unverified { color: var(--warn); }
.sig-valid { color: var(--ok); }
.sig-unsigned, .sig-invalid, .sig-unknown_key, .v-unproven { color: var(--bad); font-weight: 700; }
pre { background: #8881; padding: .6em; overflow: auto; max-height: 30em; white-space: pre-wrap; word-break: break-word; }
pre.diff span { display: block; }
pre.diff .add { color: var(--ok); }
pre.diff .del { color: var(--bad); }
pre.diff .hunk { color: var(--run); }
pre.diff .file { font-weight: 700; }
ol.events { font-family: ui-monospace, monospace; font-size: 12px; max-height: 24em; overflow: auto; }
ol.events .type { font-weight: 600; margin-right: .6em; }
section { margin: 1.2em 0; }
.error { color: var(--bad); }
.muted { color: var(--muted); }
button.danger { color: var(--bad); }
`;
