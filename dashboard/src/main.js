// The metaopt dashboard: a hash-routed single-page app over the server's /api/v1/.
//   #/                      studies
//   #/studies/<study_id>    one study: history plot, trials
//   #/models                registry models and the studies bound to each
import './style.css';
import { ApiError, get, getAll, setToken, token } from './api.js';
import { h } from './dom.js';
import {
  TRIAL_STATES, configuration, goalOf, kindOf, number, shortEnum, source, time, trialState,
} from './format.js';
import { historyPlot } from './plot.js';

const REFRESH_MS = 3000;
const TRIALS_PER_PAGE = 100;
const app = document.getElementById('app');
const statusLine = document.getElementById('status');
const liveBox = document.getElementById('live');
const signOut = document.getElementById('signout');

let view = null; // { refresh: async () => void }
let refreshing = false;

function lastActivity(study) {
  const times = [study.createTime, study.bestTrial?.createTime, study.bestTrial?.completeTime]
    .filter(Boolean).map((t) => new Date(t).getTime());
  return times.length > 0 ? new Date(Math.max(...times)).toISOString() : '';
}

// `text` cut to `length` characters (the table cell's title keeps the whole of it).
function clip(text, length) {
  if (!text) return '';
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function studyLink(id) {
  return h('a', { href: `#/studies/${encodeURIComponent(id)}` }, id);
}

function stateBadge(state, extra = '') {
  return h('span', { className: `state state-${state} ${extra}` }, state.toLowerCase());
}

// A table whose columns sort on click. `columns`: {key, label, value(row), cell(row)?, numeric?}.
function sortableTable(id, columns, sort, onSort) {
  const head = h('tr', {}, columns.map((c) => h('th', {
    className: `sortable ${sort.key === c.key ? `sorted-${sort.dir}` : ''}`,
    'data-key': c.key,
    onclick: () => onSort(c.key),
  }, c.label)));
  return { table: h('table', { id }, h('thead', {}, head), h('tbody')), columns };
}

function sortRows(rows, columns, sort) {
  const column = columns.find((c) => c.key === sort.key) ?? columns[0];
  const sign = sort.dir === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = column.value(a);
    const y = column.value(b);
    if (x === y) return 0;
    if (x === '' || x === undefined) return 1;
    if (y === '' || y === undefined) return -1;
    return (x < y ? -1 : 1) * sign;
  });
}

function studiesView() {
  const sort = { key: 'activity', dir: 'desc' };
  let studies = [];
  const search = h('input', { type: 'search', id: 'search', placeholder: 'Search id, kind, model, state…' });
  const count = h('span', { className: 'muted', id: 'study-count' });
  const holder = h('div');
  const columns = [
    { key: 'id', label: 'Study', value: (s) => s.studyId, cell: (s) => studyLink(s.studyId) },
    { key: 'kind', label: 'Algorithm', value: kindOf },
    { key: 'model', label: 'Bound model', value: (s) => s.boundModel ?? '' },
    { key: 'state', label: 'State', value: (s) => shortEnum(s.state, 'STUDY_STATE_').toLowerCase() },
    { key: 'trials', label: 'Trials', numeric: true, value: (s) => Number(s.trialCount ?? 0) },
    { key: 'best', label: 'Best value', numeric: true, value: (s) => s.bestTrial?.value ?? '', cell: (s) => number(s.bestTrial?.value) },
    { key: 'goal', label: 'Goal', value: goalOf },
    { key: 'activity', label: 'Last activity', value: lastActivity, cell: (s) => time(lastActivity(s)) },
  ];
  function render() {
    const needle = search.value.trim().toLowerCase();
    const shown = studies.filter((s) => !needle || [s.studyId, kindOf(s), s.boundModel ?? '',
      shortEnum(s.state, 'STUDY_STATE_'), s.owner ?? ''].join(' ').toLowerCase().includes(needle));
    const { table } = sortableTable('studies', columns, sort, (key) => {
      sort.dir = sort.key === key && sort.dir === 'asc' ? 'desc' : 'asc';
      sort.key = key;
      render();
    });
    const body = table.querySelector('tbody');
    for (const s of sortRows(shown, columns, sort)) {
      body.append(h('tr', { 'data-study': s.studyId }, columns.map((c) =>
        h('td', { className: c.numeric ? 'num' : '' }, c.cell ? c.cell(s) : c.value(s)))));
    }
    count.textContent = `${shown.length} of ${studies.length} studies`;
    holder.replaceChildren(studies.length === 0
      ? h('p', { className: 'muted' }, 'No studies yet: create one with a client (metaoptctl, Python, Go, Node).')
      : table);
  }
  search.addEventListener('input', render);
  app.replaceChildren(h('h1', {}, 'Studies'), h('div', { className: 'toolbar' }, search, count), holder);
  return {
    async refresh() {
      studies = await getAll('studies', 'studies');
      render();
    },
  };
}

function card(label, value, id) {
  return h('div', { className: 'card' }, h('div', { className: 'label' }, label),
    h('div', { className: 'value', id }, value === '' || value === undefined ? '—' : value));
}

function studyView(studyId) {
  let study = null;
  let trials = [];
  let page = 0;
  const filter = h('select', { id: 'state-filter', 'aria-label': 'trial state' },
    h('option', { value: '' }, 'all states'),
    TRIAL_STATES.map((s) => h('option', { value: s }, s.toLowerCase())));
  const cards = h('div', { className: 'cards' });
  const plot = h('div', { id: 'history' });
  const table = h('div');
  const pager = h('div', { className: 'pager' });
  const filterCount = h('span', { className: 'muted', id: 'trial-count' });
  filter.addEventListener('change', () => {
    page = 0;
    renderTrials();
  });

  function renderTrials() {
    const wanted = filter.value;
    const shown = trials.filter((t) => !wanted || trialState(t) === wanted)
      .sort((a, b) => Number(b.id) - Number(a.id));
    const pages = Math.max(1, Math.ceil(shown.length / TRIALS_PER_PAGE));
    page = Math.min(page, pages - 1);
    const rows = shown.slice(page * TRIALS_PER_PAGE, (page + 1) * TRIALS_PER_PAGE);
    filterCount.textContent = `${shown.length} trials`;
    table.replaceChildren(h('table', { id: 'trials' },
      h('thead', {}, h('tr', {}, ['Trial', 'State', 'Value', 'Configuration', 'Source', 'Client',
        'Created', 'Completed'].map((label) => h('th', {}, label)))),
      h('tbody', {}, rows.map((t) => h('tr', { 'data-trial': t.id, 'data-state': trialState(t) },
        h('td', { className: 'num' }, t.id),
        h('td', {}, stateBadge(trialState(t))),
        h('td', { className: 'num' }, t.value !== undefined ? number(t.value) : (t.failureReason ?? '')),
        h('td', { className: 'config' }, configuration(t.configuration)),
        h('td', {}, source(t)),
        h('td', {}, t.clientId ?? ''),
        h('td', {}, time(t.createTime)),
        h('td', {}, time(t.completeTime)))))));
    pager.replaceChildren(
      h('button', { type: 'button', disabled: page === 0, onclick: () => { page -= 1; renderTrials(); } }, '← newer'),
      h('span', { className: 'muted' }, `page ${page + 1} of ${pages}`),
      h('button', { type: 'button', disabled: page >= pages - 1, onclick: () => { page += 1; renderTrials(); } }, 'older →'));
  }

  function render() {
    const counts = Object.fromEntries(TRIAL_STATES.map((s) => [s, 0]));
    for (const t of trials) counts[trialState(t)] = (counts[trialState(t)] ?? 0) + 1;
    const metadata = Object.entries(study.metadata ?? {}).map(([k, v]) => `${k}: ${v}`).join('; ');
    cards.replaceChildren(...[
      card('Algorithm', kindOf(study), 'study-kind'),
      card('Bound model', study.boundModel ?? '', 'study-model'),
      card('State', shortEnum(study.state, 'STUDY_STATE_').toLowerCase(), 'study-state'),
      card('Objective', `${study.spec?.objective?.name ?? ''} (${goalOf(study)})`),
      card('Trials', Number(study.trialCount ?? 0), 'study-trials'),
      card('Best value', number(study.bestTrial?.value), 'study-best'),
      card('Completed / failed / infeasible',
        `${counts.COMPLETED} / ${counts.FAILED} / ${counts.INFEASIBLE}`, 'study-counts'),
      card('Active', counts.ACTIVE),
      card('Created', time(study.createTime)),
      study.owner ? card('Owner', study.owner) : null,
      metadata ? card('Server decisions', metadata) : null].filter(Boolean));
    const best = study.bestTrial;
    plot.replaceChildren(
      historyPlot(trials, goalOf(study) === 'maximize'),
      h('div', { className: 'legend' },
        h('span', {}, '● completed value'), h('span', {}, '— best so far'),
        h('span', { className: 'error' }, '✕ failed'), h('span', { style: 'color: var(--warn)' }, '✕ infeasible')),
      best ? h('p', {}, `Best: trial ${best.id}, ${number(best.value)} — `,
        h('span', { className: 'config' }, configuration(best.configuration))) : null);
    renderTrials();
  }

  app.replaceChildren(
    h('p', {}, h('a', { href: '#/' }, '← all studies')),
    h('h1', {}, 'Study ', h('span', { id: 'study-id' }, studyId)),
    cards,
    h('h2', {}, 'History'), plot,
    h('h2', {}, 'Trials'), h('div', { className: 'toolbar' }, filter, filterCount), table, pager);
  const path = `studies/${encodeURIComponent(studyId)}`;
  return {
    async refresh() {
      const fresh = (await get(path)).study;
      const unchanged = study !== null && fresh.trialCount === study.trialCount &&
        !trials.some((t) => trialState(t) === 'ACTIVE');
      study = fresh;
      if (!unchanged) trials = await getAll(`${path}/trials`, 'trials');
      render();
    },
  };
}

function modelsView() {
  const holder = h('div');
  app.replaceChildren(h('h1', {}, 'Models'), holder);
  return {
    async refresh() {
      const [{ models = [] }, studies] = await Promise.all([get('models'), getAll('studies', 'studies')]);
      if (models.length === 0) {
        holder.replaceChildren(h('p', { className: 'muted' },
          'No registry models: the server\'s --models directory holds none.'));
        return;
      }
      const bound = (m) => studies.filter((s) => s.boundModel === `${m.name}@${m.version}`);
      const sorted = [...models].sort((a, b) => a.name.localeCompare(b.name) || Number(b.version) - Number(a.version));
      holder.replaceChildren(h('table', { id: 'models' },
        h('thead', {}, h('tr', {}, ['Model', 'Version', 'Kind', 'Portfolio', 'Task-aware design',
          'Trained on', 'Search space', 'Validation', 'Created', 'Bound studies'].map((l) => h('th', {}, l)))),
        h('tbody', {}, sorted.map((m) => h('tr', { 'data-model': `${m.name}@${m.version}` },
          h('td', {}, m.name), h('td', { className: 'num' }, m.version),
          h('td', {}, shortEnum(m.kind, 'MODEL_KIND_').toLowerCase()),
          h('td', { className: 'num' }, m.portfolioSize ?? 0),
          h('td', {}, m.taskDesign ?? ''), h('td', {}, m.trainingData ?? ''),
          h('td', { className: 'config', title: m.searchSpaceSummary ?? '' }, clip(m.searchSpaceSummary, 120)),
          h('td', {}, clip(Object.entries(m.validationMetrics ?? {})
            .map(([k, v]) => `${k}=${number(v)}`).join(', '), 120)),
          h('td', {}, time(m.createTime)),
          h('td', {}, bound(m).map((s, i) => [i > 0 ? ', ' : '', studyLink(s.studyId)])))))));
    },
  };
}

// Asks for the bearer token; `refused` is the server's message when the last one was refused.
function tokenView(refused) {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', placeholder: 'bearer token' });
  const form = h('form', { className: 'token-form', id: 'token-form' },
    h('h1', {}, 'Token needed'),
    h('p', {}, 'This server runs with --tokens: enter your bearer token. It is kept in this tab\'s session storage only.'),
    refused ? h('p', { className: 'error', id: 'token-error' }, `The token was refused: ${refused}`) : null,
    input, h('button', { type: 'submit' }, 'Open dashboard'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    route();
  });
  app.replaceChildren(form);
  input.focus();
}

async function refresh() {
  if (view === null || refreshing) return;
  refreshing = true;
  const current = view;
  try {
    await current.refresh();
    if (current === view) statusLine.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    if (current !== view) return;
    if (error instanceof ApiError && error.status === 401) {
      const hadToken = token() !== '';
      setToken('');
      view = null;
      statusLine.textContent = '';
      tokenView(hadToken ? error.message : '');
    } else {
      statusLine.textContent = '';
      app.append(h('p', { className: 'error', id: 'error' }, `Error: ${error.message}`));
      view = null;
    }
  } finally {
    refreshing = false;
    signOut.hidden = token() === '';
  }
}

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const study = /^\/studies\/([^/]+)$/.exec(hash);
  for (const link of document.querySelectorAll('[data-nav]')) {
    link.classList.toggle('active', link.dataset.nav === (hash === '/models' ? 'models' : 'studies'));
  }
  if (study) view = studyView(decodeURIComponent(study[1]));
  else if (hash === '/models') view = modelsView();
  else view = studiesView();
  refresh();
}

signOut.addEventListener('click', () => {
  setToken('');
  route();
});
window.addEventListener('hashchange', route);
setInterval(() => {
  if (liveBox.checked && document.visibilityState === 'visible') refresh();
}, REFRESH_MS);
route();
