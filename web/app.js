'use strict';
// IronVise dashboard. Everything the server sends is rendered as text
// (textContent), never as HTML, so ledger content cannot script the page.
(function () {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'ironvise-token';
  const KINDS = ['guard_denial', 'tripwire_rejection', 'egress_denial', 'sandbox_aborted', 'session_aborted', 'policy_denial', 'observation'];
  const DEFAULT_KINDS = KINDS.slice(0, 5);
  const state = { token: null, view: 'sessions', session: null, lastId: 0, es: null, backoff: 2000, timers: {} };

  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  // el builds an element; strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return e;
  }
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); return node; };
  const short = (s, n) => (s && s.length > n ? s.slice(0, n - 1) + '…' : s || '');
  const when = (ts) => (ts ? ts.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '');
  const debounce = (name, ms, fn) => { clearTimeout(state.timers[name]); state.timers[name] = setTimeout(fn, ms); };
  // shortID shows a session id by its first 8 hex digits — a UUIDv7's
  // creation time, shared by sessions created in the same minute — and its
  // last 6, which are random and tell them apart.
  const shortID = (id) => id.slice(0, 8) + '…' + id.slice(-6);

  // ---- token ----------------------------------------------------------
  function initToken() {
    const u = new URL(location.href);
    const t = u.searchParams.get('token');
    if (t) {
      sessionStorage.setItem(TOKEN_KEY, t);
      u.searchParams.delete('token');
      history.replaceState(null, '', u.pathname + u.search + u.hash);
    }
    state.token = sessionStorage.getItem(TOKEN_KEY);
    // A parent window may hand the token over — only a parent of this
    // origin: a foreign page framing the dashboard (the server forbids
    // framing, frame-ancestors 'none', but a browser may ignore it) must
    // not log it in with its own token and show it data of its choosing.
    window.addEventListener('message', (ev) => {
      if (window.parent === window || ev.source !== window.parent || ev.origin !== location.origin) return;
      const d = ev.data;
      if (d && d.type === 'ectoledgerSetToken' && typeof d.token === 'string' && d.token) useToken(d.token);
    });
  }

  function useToken(t) {
    state.token = t;
    sessionStorage.setItem(TOKEN_KEY, t);
    start();
  }

  function showLogin(msg) {
    $('login').hidden = false;
    document.querySelectorAll('.view').forEach((v) => { v.hidden = true; });
    $('login-error').textContent = msg || '';
    $('login-token').focus();
  }

  // ---- API ------------------------------------------------------------
  async function api(method, path, body, raw) {
    const headers = { Authorization: 'Bearer ' + state.token };
    let payload;
    if (body !== undefined) {
      if (raw) { payload = body; headers['Content-Type'] = 'text/plain; charset=utf-8'; }
      else { payload = JSON.stringify(body); headers['Content-Type'] = 'application/json'; }
    }
    const res = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
    const text = await res.text();
    let data = text;
    try { data = text ? JSON.parse(text) : null; } catch (_) { /* plain text (policies) */ }
    if (res.status === 401) {
      showLogin('The server refused the token: ' + ((data && data.error) || res.statusText));
      throw new ApiError(401, 'unauthorized');
    }
    if (!res.ok) throw new ApiError(res.status, (data && data.error) || text || res.statusText);
    return data;
  }

  // ---- views ----------------------------------------------------------
  function show(view) {
    state.view = view;
    $('login').hidden = true;
    document.querySelectorAll('.view').forEach((v) => { v.hidden = v.id !== 'view-' + view; });
    document.querySelectorAll('.tab').forEach((b) => {
      if (b.dataset.view === view || (view === 'session' && b.dataset.view === 'sessions')) b.setAttribute('aria-current', 'page');
      else b.removeAttribute('aria-current');
    });
    const loaders = { sessions: loadSessions, policies: loadPolicies, tripwire: loadTripwire, tokens: loadTokens, webhooks: loadWebhooks, audit: loadAuditForm };
    if (loaders[view]) loaders[view]().catch(report);
  }

  function report(err) {
    if (err && err.status === 401) return;
    console.warn(err);
  }

  // ---- sessions -------------------------------------------------------
  async function loadSessions() {
    const st = $('filter-status').value;
    const list = await api('GET', '/api/sessions?limit=100' + (st ? '&status=' + encodeURIComponent(st) : ''));
    const body = clear($('sessions-body'));
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'No sessions yet. Start an audit, or create one through the API.')));
    for (const s of list) {
      const open = () => openSession(s.id);
      body.append(el('tr', { class: 'clickable', 'data-session': s.id, onclick: open },
        el('td', {}, el('button', { type: 'button', class: 'linkish', onclick: (e) => { e.stopPropagation(); open(); }, 'aria-label': 'Open session ' + s.id, title: s.id }, el('code', {}, shortID(s.id)))),
        el('td', { class: 'goal', title: s.goal }, s.goal),
        el('td', {}, el('span', { class: 'pill ' + s.status }, s.status)),
        el('td', {}, s.sealed ? 'sealed' : '—'),
        el('td', {}, s.event_count),
        el('td', { class: 'denials' + (s.denials ? ' some' : ''), 'data-denials': String(s.denials ?? '') }, s.denials ?? '—'),
        el('td', {}, when(s.created_at))));
    }
  }

  async function openSession(id) {
    state.session = id;
    show('session');
    $('s-verify-result').textContent = '';
    clear($('s-apply-result'));
    await renderSession();
    $('s-back').focus();
  }

  async function renderSession() {
    const id = state.session;
    const [s, events] = await Promise.all([api('GET', '/api/sessions/' + id), api('GET', '/api/events?session_id=' + id)]);
    $('s-id').textContent = s.id;
    const meta = clear($('s-meta'));
    const row = (k, v) => { meta.append(el('dt', {}, k), el('dd', {}, v)); };
    row('Goal', s.goal);
    row('Status', el('span', { class: 'pill ' + s.status }, s.status + (s.sealed ? ' · sealed' : '')));
    row('Policy', s.policy_hash ? short(s.policy_hash, 20) : 'none');
    row('Sandbox', s.sandbox_tier || '');
    row('Model', s.llm_backend ? s.llm_backend + '/' + s.llm_model : 'external agent (intents)');
    row('Events', String(s.event_count));
    row('Created', when(s.created_at) + (s.finished_at ? ' · finished ' + when(s.finished_at) : ''));
    $('s-seal').disabled = s.sealed;
    renderTimeline(events);
    renderWorkspace(s, events);
    await renderPending(s);
  }

  async function renderPending(s) {
    const box = $('s-pending');
    box.hidden = true;
    if (s.sealed || s.status !== 'running') return;
    const p = await api('GET', '/api/approvals/' + s.id + '/pending');
    if (!p.pending) return;
    const g = p.pending;
    const decide = (approved) => async () => {
      try {
        await api('POST', '/api/approvals/' + s.id, { gate_id: g.gate_id, approved, reason: approved ? 'approved in the dashboard' : 'denied in the dashboard' });
        await renderSession();
      } catch (e) { box.append(el('p', { class: 'error', role: 'alert' }, e.message)); }
    };
    clear(box).append(el('strong', {}, 'Approval needed: '), g.action_name + ' ' + g.action_params_summary + ' ',
      el('button', { type: 'button', onclick: decide(true) }, 'Approve'), ' ',
      el('button', { type: 'button', class: 'danger', onclick: decide(false) }, 'Deny'));
    box.hidden = false;
  }

  function target(intent) {
    if (!intent || !intent.params) return '';
    const p = intent.params;
    return p.command || p.path || p.url || (Array.isArray(p.findings) ? p.findings.length + ' findings' : '');
  }

  // groupEvents turns a chain into timeline items: one per intent (with its
  // verdicts, approval, commit, sandbox result and observation) and one per
  // other event.
  function groupEvents(events) {
    const items = [];
    const byIntent = {};
    const byStep = {};
    for (const e of events) {
      const p = e.payload || {};
      // A client's own event (event_origin "client", signed into the
      // payload) never joins an intent IronVise checked and ran: it is
      // shown apart, labelled.
      if (p.event_origin === 'client') { items.push({ kind: 'event', event: e, payload: p }); continue; }
      const g = (p.intent_id && byIntent[p.intent_id]) || (p.step !== undefined && byStep[p.step]);
      switch (p.type) {
        case 'intent_proposed': {
          const grp = { kind: 'intent', step: p.step, intent: p.intent, raw: p.raw, source: p.source, verdicts: [], events: [e] };
          byIntent[p.intent_id] = grp; byStep[p.step] = grp; items.push(grp);
          continue;
        }
        case 'check_verdict':
          if (p.check !== 'prompt_scan' && g) { g.verdicts.push(p); continue; }
          break;
        case 'approval_required': if (g) { g.approval = p; continue; } break;
        case 'approval_decision': if (g) { g.decision = p; continue; } break;
        case 'action': if (g && p.intent_seq !== undefined) { g.action = p; continue; } break;
        case 'sandbox_result': if (g) { g.sandbox = p; continue; } break;
        case 'egress': if (g) { (g.egress = g.egress || []).push(p); continue; } break;
        case 'observation': if (g && p.action_seq !== undefined) { g.observation = p; continue; } break;
        case 'workspace_diff': if (g) { g.diff = p; continue; } break;
      }
      items.push({ kind: 'event', event: e, payload: p });
    }
    return items;
  }

  function renderTimeline(events) {
    const ol = clear($('s-timeline'));
    for (const it of groupEvents(events)) ol.append(it.kind === 'intent' ? intentItem(it) : eventItem(it));
  }

  function intentItem(g) {
    const deny = g.verdicts.find((v) => v.decision === 'deny');
    let outcome = 'allow';
    if (deny) outcome = 'deny';
    else if (g.sandbox && g.sandbox.status === 'aborted') outcome = 'abort';
    const action = g.intent ? g.intent.action : '(not a valid intent)';
    const li = el('li', { class: 'step ' + outcome, 'data-outcome': outcome });
    li.append(el('h3', {}, 'Step ' + g.step, el('code', {}, action), el('span', {}, short(target(g.intent), 140)),
      el('span', { class: 'pill ' + (outcome === 'allow' ? 'ok' : 'deny') }, outcome === 'allow' ? 'allowed' : outcome === 'deny' ? 'denied' : 'sandbox aborted')));
    if (deny) {
      li.append(el('p', { class: 'why' }, 'Denied by ' + deny.check + ' — ' + deny.code + (deny.rule ? ' (rule ' + deny.rule + ')' : '') + ': ' + deny.message));
    }
    li.append(el('div', { class: 'verdicts', 'aria-label': 'Checks' }, g.verdicts.map((v) =>
      el('span', { class: 'pill ' + (v.decision === 'deny' ? 'deny' : 'ok'), title: v.message }, v.check + (v.phase === 'execute' ? ' (execute)' : '') + ': ' + v.decision + (v.code && v.code !== 'ok' ? ' · ' + v.code : '')))));
    if (g.approval) {
      const d = g.decision;
      li.append(el('p', {}, 'Approval gate ' + (g.approval.gates || []).join(', ') + ': ' + (d ? (d.approved ? 'approved' : 'rejected') + ' by ' + d.decided_by + (d.reason && d.reason !== d.decided_by ? ' (' + d.reason + ')' : '') : 'waiting')));
    }
    if (g.sandbox) {
      const s = g.sandbox;
      li.append(el('p', { class: 'sandbox' }, 'Sandbox ' + s.tier + ' · ' + s.status + (s.exit_code !== null && s.exit_code !== undefined ? ' · exit ' + s.exit_code : '') +
        (s.signal ? ' · ' + s.signal : '') + (s.duration_ms !== undefined ? ' · ' + s.duration_ms + ' ms' : '') + (s.reason ? ' — ' + s.reason : '')));
    }
    if (g.egress) li.append(egressList(g.egress));
    if (g.diff) li.append(diffBlock(g.diff));
    if (g.observation) {
      const o = g.observation;
      if (o.labels && o.labels.length) li.append(el('p', { class: 'muted' }, 'Scanner: ' + o.labels.join(', ')));
      li.append(el('pre', {}, short(o.content, 4000)));
    }
    return li;
  }

  // changeLine is one path of a change set: what happened to it, and its
  // mode or symlink target when those changed.
  function changeLine(c) {
    let s = c.op + ' ' + (c.from ? c.from + ' → ' : '') + c.path;
    if (c.kind && c.kind !== 'file') s += ' (' + c.kind + ')';
    if (c.mode && c.base_mode && c.mode !== c.base_mode) s += ' mode ' + c.base_mode + ' → ' + c.mode;
    if (c.target) s += ' → ' + c.target;
    return s;
  }

  // diffBlock is a step's workspace_diff: its state, the forbidden paths
  // that discarded it, and each changed path with its text diff (folded).
  function diffBlock(d) {
    const changes = d.changes || [];
    const forbidden = d.forbidden || [];
    const state = d.accepted ? 'kept for apply' : forbidden.length ? 'discarded (forbidden paths)' : 'discarded' + (d.error ? ': ' + d.error : '');
    const box = el('div', { class: 'diff', 'data-accepted': d.accepted ? 'true' : 'false' },
      el('p', { class: d.accepted ? '' : 'why' }, 'Workspace: ' + changes.length + ' path(s) changed · ' + state));
    for (const f of forbidden) box.append(el('p', { class: 'why' }, 'Forbidden: ' + f.change.path + ' matches ' + f.glob));
    const ul = el('ul', { class: 'changes' });
    for (const c of changes) {
      const li = el('li', { 'data-path': c.path }, el('code', {}, changeLine(c)));
      if (c.diff) li.append(el('details', {}, el('summary', {}, 'diff'), el('pre', { class: 'udiff' }, c.diff)));
      else if (c.diff_skipped) li.append(el('span', { class: 'muted' }, ' (no diff: ' + c.diff_skipped + ')'));
      ul.append(li);
    }
    box.append(ul);
    return box;
  }

  // renderWorkspace shows the panel of a session in overlay mode: what its
  // accepted steps changed, what was already applied, and the apply
  // buttons (admin tokens; the server refuses the others).
  function renderWorkspace(s, events) {
    const box = $('s-workspace');
    const genesis = events.find((e) => e.payload && e.payload.type === 'genesis');
    const w = genesis && genesis.payload.workspace;
    box.hidden = !(w && w.mode === 'overlay');
    if (box.hidden) return;
    let kept = 0, paths = 0, applied = 0;
    for (const e of events) {
      const p = e.payload || {};
      if (p.type === 'workspace_diff' && p.accepted) { kept++; paths += (p.changes || []).length; }
      if (p.type === 'workspace_applied') applied++;
    }
    // A sealed chain takes no more events: an apply or a discard after the
    // seal is recorded on the instance chain, which this page does not read.
    let state = applied ? ' · applied ' + applied + ' time(s)' : ' · not applied: the real workspace is unchanged';
    if (s.sealed) state = (applied ? ' · applied ' + applied + ' time(s) before the seal' : '') +
      ' · sealed: an apply or a discard since is recorded on the instance chain (Preview apply shows what is left)';
    $('s-workspace-summary').textContent = 'Overlay on ' + w.path + ' · ' + kept + ' step(s) kept, ' + paths + ' path(s) changed' + state +
      ((w.forbidden_paths || []).length ? ' · forbidden: ' + w.forbidden_paths.join(', ') : '');
    $('s-apply').disabled = $('s-apply-dry').disabled = kept === 0;
  }

  async function applyWorkspace(dryRun) {
    const out = clear($('s-apply-result'));
    if (!dryRun && !confirm('Write the session\'s changes into the real workspace?')) return;
    try {
      const r = await api('POST', '/api/sessions/' + state.session + '/apply', { dry_run: dryRun });
      const res = r.result || {};
      const changes = res.changes || [];
      out.append(el('p', { 'data-result': dryRun ? 'dry-run' : 'applied' },
        (dryRun ? 'Would apply ' : res.applied ? 'Applied ' : 'Nothing to apply: ') + changes.length + ' path(s)' +
        ((res.steps || []).length ? ' from step(s) ' + res.steps.join(', ') : '')),
        el('ul', { class: 'changes' }, changes.map((c) => el('li', {}, el('code', {}, changeLine(c))))));
      if (!dryRun) await renderSession();
    } catch (e) {
      out.append(el('p', { class: 'error', role: 'alert', 'data-result': 'refused' }, e.message));
    }
  }

  // egressTarget is host:port of an egress event.
  function egressTarget(p) { return (p.host || p.addr || '-') + (p.port ? ':' + p.port : ''); }

  // egressLine is one connection: verdict, target, bytes, time, and the
  // rule that allowed it or the reason it was refused.
  function egressLine(p) {
    return p.verdict + ' ' + p.protocol + ' ' + egressTarget(p) + ' · ' + (p.bytes_up || 0) + ' B up, ' + (p.bytes_down || 0) + ' B down · ' +
      (p.duration_ms || 0) + ' ms · ' + (p.verdict === 'allow' ? 'rule ' + p.rule : p.code + ': ' + p.reason);
  }

  // egressList shows the connections of a step's command through the
  // egress proxy, refused ones marked.
  function egressList(list) {
    const denied = list.filter((p) => p.verdict !== 'allow').length;
    return el('div', { class: 'egress', 'aria-label': 'Network egress' },
      el('p', {}, 'Network: ' + list.length + ' connection(s) through the egress proxy' + (denied ? ', ' + denied + ' refused' : '')),
      el('ul', {}, list.map((p) => el('li', { class: p.verdict === 'allow' ? 'ok' : 'deny', 'data-verdict': p.verdict }, short(egressLine(p), 400)))));
  }

  // networkText is the genesis's record of the sandbox network.
  function networkText(n) {
    if (!n) return '';
    if (n.mode !== 'proxy') return ' · network ' + n.mode;
    return ' · network proxy to ' + ((n.allowed_domains || []).join(', ') || '(no host)') + ((n.allow_cidrs || []).length ? ' and ' + n.allow_cidrs.join(', ') : '');
  }

  function eventItem(it) {
    const p = it.payload;
    let text = '';
    let cls = 'info';
    switch (p.type) {
      case 'genesis': text = p.message + (p.sandbox_tier ? ' · sandbox ' + p.sandbox_tier : '') + networkText(p.network) + (p.workspace ? ' · workspace ' + p.workspace.mode : ''); break;
      case 'workspace_applied': text = 'applied ' + (p.changes || []).length + ' path(s) from step(s) ' + (p.steps || []).join(', ') + ' to ' + p.workspace + ' · by ' + p.by; break;
      case 'workspace_discarded': text = 'discarded ' + (p.changes || []).length + ' path(s) of step(s) ' + (p.steps || []).join(', ') + ' unapplied · by ' + p.by; break;
      case 'egress': text = 'step ' + p.step + ' · ' + egressLine(p); if (p.verdict !== 'allow') cls = 'deny'; break;
      case 'prompt_input': text = short(p.content, 300); break;
      case 'check_verdict': text = p.check + ': ' + p.decision + ' · ' + p.code + (p.message && p.message !== 'ok' ? ' — ' + p.message : ''); if (p.decision === 'deny') cls = 'deny'; break;
      case 'thought': case 'observation': text = short(p.content, 400); break;
      case 'circuit_breaker': text = p.reason + ' after ' + p.consecutive_failures + ' consecutive failures'; cls = 'deny'; break;
      case 'session_halted': text = p.code + ': ' + p.message; cls = 'deny'; break;
      case 'session_sealed': text = 'sealed · ' + p.status + ' · ' + p.event_count + ' events'; break;
      case 'verifiable_credential': text = 'verifiable credential issued'; break;
      case 'chat_message': text = p.role + ': ' + short(p.content, 300); break;
      case 'schema_error': text = p.message; break;
      default: text = short(JSON.stringify(p), 300);
    }
    const client = p.event_origin === 'client';
    return el('li', { class: 'step ' + (client ? 'client' : cls), 'data-origin': client ? 'client' : null, 'data-type': p.type },
      el('h3', {}, el('code', {}, '#' + it.event.sequence), el('span', {}, p.type),
        client ? el('span', { class: 'pill client', title: 'Appended by a client through the API: recorded as said, not produced by IronVise, never evidence' }, 'appended by client') : null),
      el('p', {}, text));
  }

  async function verify() {
    const out = clear($('s-verify-result'));
    out.append(el('span', { class: 'pill' }, 'verifying…'));
    try {
      const v = await api('GET', '/api/sessions/' + state.session + '/verify');
      clear(out);
      out.append(el('span', { class: 'pill ' + (v.ok ? 'ok' : 'fail'), 'data-result': v.ok ? 'ok' : 'fail' }, v.ok ? 'verified' : 'verification FAILED'));
      for (const [name, key] of [['chain', 'chain_ok'], ['signatures', 'signatures_ok'], ['goal', 'goal_ok'], ['log', 'log_ok'], ['seal', 'seal_ok'], ['findings', 'findings_ok']]) {
        out.append(el('span', { class: 'pill ' + (v[key] ? 'ok' : 'fail'), 'data-check': name }, name + ': ' + (v[key] ? 'ok' : 'failed')));
      }
      if (v.error) out.append(el('span', { class: 'error' }, 'first problem at sequence ' + v.error.sequence + ': ' + v.error.problem));
    } catch (e) { clear(out).append(el('span', { class: 'error', role: 'alert' }, e.message)); }
  }

  async function seal() {
    try { await api('POST', '/api/sessions/' + state.session + '/seal'); await renderSession(); }
    catch (e) { $('s-verify-result').textContent = e.message; }
  }

  async function downloadCertificate() {
    const res = await fetch('/api/certificates/' + state.session, { headers: { Authorization: 'Bearer ' + state.token } });
    if (!res.ok) { $('s-verify-result').textContent = 'certificate: HTTP ' + res.status; return; }
    const url = URL.createObjectURL(await res.blob());
    const a = el('a', { href: url, download: state.session + '.elc' });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  // ---- live stream ----------------------------------------------------
  function connect() {
    if (state.es) state.es.close();
    const es = new EventSource('/api/stream?after=' + state.lastId + '&token=' + encodeURIComponent(state.token));
    state.es = es;
    es.onopen = () => { state.backoff = 2000; setStream('live', 'live'); };
    es.addEventListener('event', (m) => {
      let d;
      try { d = JSON.parse(m.data); } catch (_) { return; }
      if (d.id > state.lastId) state.lastId = d.id;
      onLiveEvent(d);
    });
    es.onerror = () => {
      es.close();
      setStream('reconnecting', '');
      // Reconnect with backoff: 2 s doubling to 30 s
      // (docs/design/api.md#dashboard).
      setTimeout(connect, state.backoff);
      state.backoff = Math.min(state.backoff * 2, 30000);
    };
  }

  function setStream(text, cls) { const s = $('stream-state'); s.textContent = text; s.className = 'pill ' + cls; }

  function summary(p) {
    switch (p.type) {
      case 'check_verdict': return p.check + ' ' + p.decision + ' ' + p.code;
      case 'intent_proposed': return p.intent ? p.intent.action + ' ' + short(target(p.intent), 80) : 'invalid intent';
      case 'sandbox_result': return p.tier + ' ' + p.status + (p.exit_code !== null && p.exit_code !== undefined ? ' exit ' + p.exit_code : '');
      case 'egress': return p.verdict + ' ' + egressTarget(p);
      case 'observation': case 'thought': case 'prompt_input': return short(p.content, 100);
      case 'session_sealed': return p.status;
      case 'admin_change': return p.target + ' ' + p.action;
      default: return '';
    }
  }

  function onLiveEvent(d) {
    const p = d.payload || {};
    const body = $('live-body');
    const deny = (p.type === 'check_verdict' && p.decision === 'deny') || (p.type === 'egress' && p.verdict === 'deny');
    const client = p.event_origin === 'client';
    body.insertBefore(el('tr', { class: deny ? 'deny' : '' }, el('td', {}, String(d.id)), el('td', {}, d.session_id ? el('code', { title: d.session_id }, shortID(d.session_id)) : 'instance'),
      el('td', {}, el('span', { class: 'pill ' + (deny ? 'deny' : '') }, p.type), client ? el('span', { class: 'pill client' }, 'client') : null), el('td', {}, summary(p))), body.firstChild);
    while (body.children.length > 300) body.removeChild(body.lastChild);
    if (state.view === 'sessions' && d.session_id) debounce('sessions', 400, () => loadSessions().catch(report));
    if (state.view === 'session' && d.session_id === state.session) debounce('session', 300, () => renderSession().catch(report));
  }

  // ---- audit form -----------------------------------------------------
  async function loadAuditForm() {
    const names = await api('GET', '/api/policies');
    const sel = $('audit-policy');
    const cur = sel.value;
    clear(sel).append(el('option', { value: '' }, '(none)'), names.map((n) => el('option', { value: n }, n)));
    sel.value = cur;
  }

  async function startAudit(ev) {
    ev.preventDefault();
    $('audit-error').textContent = '';
    const body = { goal: $('audit-goal').value, agent_loop: $('audit-loop').checked };
    if ($('audit-policy').value) body.policy = $('audit-policy').value;
    try { const s = await api('POST', '/api/sessions', body); await openSession(s.id); }
    catch (e) { $('audit-error').textContent = e.message; }
  }

  // ---- policies -------------------------------------------------------
  async function loadPolicies() {
    const names = await api('GET', '/api/policies');
    const ul = clear($('policy-list'));
    for (const n of names) ul.append(el('li', {}, el('button', { type: 'button', onclick: () => loadPolicy(n) }, n)));
  }

  async function loadPolicy(name) {
    $('policy-error').textContent = ''; $('policy-ok').textContent = '';
    $('policy-name').value = name;
    $('policy-text').value = await api('GET', '/api/policies/' + encodeURIComponent(name));
    $('policy-text').focus();
  }

  async function savePolicy(ev) {
    ev.preventDefault();
    $('policy-error').textContent = ''; $('policy-ok').textContent = '';
    const name = $('policy-name').value;
    try {
      const r = await api('PUT', '/api/policies/' + encodeURIComponent(name), $('policy-text').value, true);
      $('policy-ok').textContent = 'Saved ' + r.name + ' (sha256 ' + r.policy_hash + ')';
      await loadPolicies();
    } catch (e) { $('policy-error').textContent = e.message; }
  }

  async function deletePolicy() {
    $('policy-error').textContent = ''; $('policy-ok').textContent = '';
    const name = $('policy-name').value;
    if (!name || !confirm('Delete policy ' + name + '?')) return;
    try { await api('DELETE', '/api/policies/' + encodeURIComponent(name)); $('policy-ok').textContent = 'Deleted ' + name; $('policy-text').value = ''; await loadPolicies(); }
    catch (e) { $('policy-error').textContent = e.message; }
  }

  // ---- tripwire -------------------------------------------------------
  const lines = (v) => v.split('\n').map((s) => s.trim()).filter((s) => s !== '');

  async function loadTripwire() {
    const t = await api('GET', '/api/tripwire');
    $('tw-paths').value = t.allowed_paths.join('\n');
    $('tw-domains').value = t.allowed_domains.join('\n');
    $('tw-banned').value = t.banned_command_patterns.join('\n');
    $('tw-minj').value = t.min_justification_length;
    $('tw-https').checked = t.require_https;
  }

  async function saveTripwire(ev) {
    ev.preventDefault();
    $('tripwire-error').textContent = ''; $('tripwire-ok').textContent = '';
    const n = Number($('tw-minj').value);
    const body = {
      allowed_paths: lines($('tw-paths').value), allowed_domains: lines($('tw-domains').value),
      banned_command_patterns: lines($('tw-banned').value), require_https: $('tw-https').checked,
      min_justification_length: Number.isInteger(n) ? n : $('tw-minj').value,
    };
    try { await api('PUT', '/api/tripwire', body); $('tripwire-ok').textContent = 'Saved. New checks use it from now on.'; await loadTripwire(); }
    catch (e) { $('tripwire-error').textContent = e.message; }
  }

  // ---- tokens ---------------------------------------------------------
  async function loadTokens() {
    const rows = await api('GET', '/api/tokens');
    const body = clear($('tokens-body'));
    for (const t of rows) {
      body.append(el('tr', {}, el('td', {}, el('code', {}, t.token_hash.slice(0, 16))), el('td', {}, t.role), el('td', {}, t.label || ''),
        el('td', {}, when(t.created_at)), el('td', {}, when(t.expires_at) || 'never'),
        el('td', {}, el('button', { type: 'button', class: 'danger', onclick: () => deleteToken(t.token_hash) }, 'Delete'))));
    }
  }

  async function createToken(ev) {
    ev.preventDefault();
    $('token-error').textContent = ''; $('token-new').textContent = '';
    const body = { role: $('token-role').value };
    if ($('token-label').value) body.label = $('token-label').value;
    if ($('token-days').value) body.expires_in_days = Number($('token-days').value);
    try {
      const r = await api('POST', '/api/tokens', body);
      $('token-new').textContent = 'New ' + r.role + ' token (shown once, copy it now): ' + r.token;
      await loadTokens();
    } catch (e) { $('token-error').textContent = e.message; }
  }

  async function deleteToken(hash) {
    if (!confirm('Delete token ' + hash.slice(0, 16) + '…?')) return;
    try { await api('DELETE', '/api/tokens/' + hash); await loadTokens(); }
    catch (e) { $('token-error').textContent = e.message; }
  }

  // ---- webhooks -------------------------------------------------------
  async function loadWebhooks() {
    const rows = await api('GET', '/api/webhooks');
    const body = clear($('webhooks-body'));
    for (const w of rows) {
      body.append(el('tr', {}, el('td', {}, w.label), el('td', {}, el('code', {}, w.url)), el('td', {}, w.siem_format), el('td', {}, w.filter_kinds.join(', ')),
        el('td', {}, w.enabled ? 'yes' : 'no'),
        el('td', {}, el('button', { type: 'button', onclick: () => toggleWebhook(w) }, w.enabled ? 'Disable' : 'Enable'), ' ',
          el('button', { type: 'button', class: 'danger', onclick: () => deleteWebhook(w) }, 'Delete'))));
    }
  }

  async function createWebhook(ev) {
    ev.preventDefault();
    $('webhook-error').textContent = '';
    const kinds = KINDS.filter((k) => $('wh-kind-' + k).checked);
    const body = { label: $('wh-label').value, url: $('wh-url').value, siem_format: $('wh-format').value, filter_kinds: kinds };
    if ($('wh-bearer').value) body.bearer_token = $('wh-bearer').value;
    try { await api('POST', '/api/webhooks', body); $('webhook-form').reset(); setDefaultKinds(); await loadWebhooks(); }
    catch (e) { $('webhook-error').textContent = e.message; }
  }

  async function toggleWebhook(w) {
    try { await api('PUT', '/api/webhooks/' + w.id + '/toggle', { enabled: !w.enabled }); await loadWebhooks(); }
    catch (e) { $('webhook-error').textContent = e.message; }
  }

  async function deleteWebhook(w) {
    if (!confirm('Delete webhook ' + w.label + '?')) return;
    try { await api('DELETE', '/api/webhooks/' + w.id); await loadWebhooks(); }
    catch (e) { $('webhook-error').textContent = e.message; }
  }

  function setDefaultKinds() { for (const k of KINDS) $('wh-kind-' + k).checked = DEFAULT_KINDS.includes(k); }

  // ---- start ----------------------------------------------------------
  function wire() {
    document.querySelectorAll('.tab').forEach((b) => b.addEventListener('click', () => show(b.dataset.view)));
    $('login-form').addEventListener('submit', (ev) => { ev.preventDefault(); useToken($('login-token').value.trim()); });
    $('filter-status').addEventListener('change', () => loadSessions().catch(report));
    $('refresh-sessions').addEventListener('click', () => loadSessions().catch(report));
    $('s-back').addEventListener('click', () => show('sessions'));
    $('s-verify').addEventListener('click', verify);
    $('s-seal').addEventListener('click', seal);
    $('s-apply-dry').addEventListener('click', () => applyWorkspace(true));
    $('s-apply').addEventListener('click', () => applyWorkspace(false));
    $('s-cert').addEventListener('click', () => downloadCertificate().catch(report));
    $('live-clear').addEventListener('click', () => clear($('live-body')));
    $('audit-form').addEventListener('submit', startAudit);
    $('policy-form').addEventListener('submit', savePolicy);
    $('policy-delete').addEventListener('click', deletePolicy);
    $('tripwire-form').addEventListener('submit', saveTripwire);
    $('token-form').addEventListener('submit', createToken);
    $('webhook-form').addEventListener('submit', createWebhook);
    const kinds = $('wh-kinds');
    for (const k of KINDS) kinds.append(el('label', { class: 'check' }, el('input', { type: 'checkbox', id: 'wh-kind-' + k }), ' ' + k));
    setDefaultKinds();
    // Escape goes back from a session to the list.
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && state.view === 'session') show('sessions'); });
  }

  async function start() {
    if (!state.token) { showLogin(''); return; }
    try { await api('GET', '/api/sessions?limit=1'); } catch (e) { if (e.status !== 401) showLogin(e.message); return; }
    $('metrics-link').href = '/metrics?token=' + encodeURIComponent(state.token);
    fetch('/api/status').then((r) => r.json()).then((s) => { $('version').textContent = s.version + (s.demo_mode ? ' · demo' : ''); }).catch(() => {});
    // Follow from a little before the current head rather than replaying
    // the whole ledger into the live table.
    try { const m = await api('GET', '/api/metrics'); state.lastId = Math.max(0, m.total_events - 100); } catch (_) { /* replay all */ }
    show('sessions');
    connect();
  }

  initToken();
  wire();
  start();
})();
