// The metaopt dashboard: a hash-routed single-page app over the server's /api/v1/.
//   #/                      studies
//   #/studies/<study_id>    one study: plots, FineTune runs, trials
//   #/models                registry models and the studies bound to each
import './style.css';
import { ApiError, get, getAll, setToken, token } from './api.js';
import { h } from './dom.js';
import {
  configuration, goalOf, kindOf, number, shortEnum, source, statesOf, time, trialState, unsettled,
} from './format.js';
import {
  constraintsText, hypervolumeHistory, hypervolumePlot, minimized, nonDominated, objectivesOf, paretoScatter,
  valuesOf,
} from './pareto.js';
import { historyPlot, parallelCoordinates, slicePlot, valueRange } from './plot.js';
import { axesOf, valueReader } from './space.js';
import { TrialStore } from './trials.js';

const REFRESH_MS = 3000;
const TRIALS_PER_PAGE = 100;
// A study with more trials than this redraws its plots at most every PLOT_REFRESH_MS while live.
const LARGE_STUDY = 2000;
const PLOT_REFRESH_MS = 15000;
const app = document.getElementById('app');
const statusLine = document.getElementById('status');
const liveBox = document.getElementById('live');
const signOut = document.getElementById('signout');

let view = null; // { refresh: async () => void }
let refreshing = false;

// The study's last activity: Study.update_time, the latest time the server recorded for it
// (creation, a trial created or completed, a FineTune run).
function lastActivity(study) {
  return study.updateTime ?? study.createTime ?? '';
}

// A proto3 JSON timestamp (0, 3, 6 or 9 fractional digits) as a key that sorts by time, exactly.
function timeKey(timestamp) {
  if (!timestamp) return '';
  return timestamp.replace(/(\.\d+)?Z$/, (_, fraction) => `${(fraction ?? '.').padEnd(10, '0')}Z`);
}

// `text` cut to `length` characters (the table cell's title keeps the whole of it).
function clip(text, length) {
  if (!text) return '';
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function studyLink(id) {
  return h('a', { href: `#/studies/${encodeURIComponent(id)}` }, id);
}

// A state's badge; states without a style of their own (one a newer server added) look neutral.
function stateBadge(state, extra = '') {
  const css = state.replace(/[^A-Za-z0-9_-]/g, '');
  return h('span', { className: `state state-${css} ${extra}` }, state.toLowerCase());
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
    { key: 'activity', label: 'Last activity', value: (s) => timeKey(lastActivity(s)),
      cell: (s) => h('span', { title: lastActivity(s) }, time(lastActivity(s))) },
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

// "0.25s" (a proto3 JSON Duration) -> "250 ms"; "3.5s" -> "3.5 s".
function duration(value) {
  if (!value) return '';
  const seconds = Number(String(value).replace(/s$/, ''));
  if (!Number.isFinite(seconds)) return String(value);
  return seconds < 1 ? `${Number((seconds * 1000).toPrecision(3))} ms` : `${Number(seconds.toPrecision(3))} s`;
}

// The study's FineTune runs (Study.fine_tune_runs), newest first.
function fineTuneTable(runs) {
  if (runs.length === 0) {
    return h('p', { className: 'muted', id: 'fine-tune-none' },
      'No FineTune runs: FineTune fits the study\'s surrogate further on its observations (metaoptctl fine-tune, Study.fine_tune in the clients).');
  }
  return h('table', { id: 'fine-tune' },
    h('thead', {}, h('tr', {}, ['Run', 'When', 'Scope', 'Steps run / asked', 'Loss before', 'Loss after',
      'Change', 'Fitted on', 'Took'].map((label) => h('th', {}, label)))),
    h('tbody', {}, [...runs].reverse().map((run) => {
      const before = Number(run.lossBefore ?? 0);
      const after = Number(run.lossAfter ?? 0);
      const change = before !== 0 ? `${(((after - before) / Math.abs(before)) * 100).toFixed(1)} %` : number(after - before);
      return h('tr', { 'data-run': run.number },
        h('td', { className: 'num' }, run.number),
        h('td', {}, time(run.time)),
        h('td', {}, shortEnum(run.scope, 'FINE_TUNE_SCOPE_').toLowerCase()),
        h('td', { className: 'num' }, `${run.stepsRun ?? 0} / ${run.stepsRequested ? run.stepsRequested : 'default'}`),
        h('td', { className: 'num' }, number(before)),
        h('td', { className: 'num' }, number(after)),
        h('td', { className: `num ${after < before ? 'good' : ''}` }, change),
        h('td', { className: 'num' }, `${run.completedTrials ?? 0} trials`),
        h('td', { className: 'num' }, duration(run.elapsed)));
    })));
}

// How many trials came from each source (format.js: source), most first.
function sourceCounts(trials) {
  const counts = new Map();
  for (const t of trials) {
    const name = source(t) || 'unknown';
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]);
}

function studyView(studyId) {
  const path = `studies/${encodeURIComponent(studyId)}`;
  const store = new TrialStore(`${path}/trials`);
  let study = null;
  let page = 0;
  let drawnVersion = -1; // the store's data version the plots show
  let dataVersion = 0;
  let plotsDrawn = 0; // when the plots were drawn (performance.now())
  let shown = ''; // the study as last drawn (JSON)
  let ticks = 0;
  const started = performance.now();
  const filter = h('select', { id: 'state-filter', 'aria-label': 'trial state' });
  const sourceFilter = h('select', { id: 'source-filter', 'aria-label': 'trial source' });
  const cards = h('div', { className: 'cards' });
  const plot = h('div', { id: 'history' });
  const pareto = h('div', { id: 'pareto' });
  const paretoHeading = h('h2', { id: 'pareto-heading' }, 'Pareto front');
  const parallel = h('div', { id: 'parallel', className: 'scroll' });
  const slices = h('div', { id: 'slices', className: 'slices' });
  const fineTune = h('div', { id: 'fine-tune-runs' });
  const table = h('div');
  const pager = h('div', { className: 'pager' });
  const filterCount = h('span', { className: 'muted', id: 'trial-count' });
  const progress = h('span', { className: 'muted', id: 'load-progress' });
  for (const select of [filter, sourceFilter]) {
    select.addEventListener('change', () => {
      page = 0;
      renderTrials();
    });
  }

  // Keeps a select's options `values` (after the 'all' one) and its choice.
  function setOptions(select, all, values, label = (v) => v.toLowerCase()) {
    const chosen = select.value;
    const have = [...select.options].map((o) => o.value).join('\n');
    const want = ['', ...values].join('\n');
    if (have === want) return;
    select.replaceChildren(h('option', { value: '' }, all),
      ...values.map((v) => h('option', { value: v }, label(v))));
    select.value = values.includes(chosen) ? chosen : '';
  }

  function renderTrials() {
    const trials = store.trials;
    setOptions(filter, 'all states', statesOf(trials));
    setOptions(sourceFilter, 'all sources', sourceCounts(trials).map(([name]) => name), (v) => v);
    const wanted = filter.value;
    const from = sourceFilter.value;
    const shown = trials.filter((t) => (!wanted || trialState(t) === wanted) &&
      (!from || (source(t) || 'unknown') === from)).reverse();
    const pages = Math.max(1, Math.ceil(shown.length / TRIALS_PER_PAGE));
    page = Math.min(page, pages - 1);
    const rows = shown.slice(page * TRIALS_PER_PAGE, (page + 1) * TRIALS_PER_PAGE);
    filterCount.textContent = `${shown.length} trials`;
    const objectives = objectivesOf(study.spec);
    // Several objectives: every objective's value, in objective order.
    const valueText = (t) => {
      if (t.value === undefined) return t.failureReason ?? '';
      const values = objectives.length > 1 ? valuesOf(t, objectives) : undefined;
      return values ? values.map(number).join(' / ') : number(t.value);
    };
    table.replaceChildren(h('table', { id: 'trials' },
      h('thead', {}, h('tr', {}, ['Trial', 'State', objectives.length > 1 ? objectives.map((o) => o.name).join(' / ') : 'Value',
        'Configuration', 'Source', 'Client', 'Created', 'Completed'].map((label) => h('th', {}, label)))),
      h('tbody', {}, rows.map((t) => h('tr', {
        'data-trial': t.id, 'data-state': trialState(t),
        'data-feasible': t.feasible === undefined ? undefined : String(t.feasible),
      },
        h('td', { className: 'num' }, t.id),
        h('td', {}, stateBadge(trialState(t) || 'UNSPECIFIED'),
          t.feasible === false ? [' ', h('span', { className: 'state state-INFEASIBLE constraint', title: 'violates a constraint' }, 'violates')] : null),
        h('td', { className: 'num' }, valueText(t)),
        h('td', { className: 'config' }, configuration(t.configuration)),
        h('td', { title: t.metadata?.reason ?? '' }, source(t)),
        h('td', {}, t.clientId ?? ''),
        h('td', {}, time(t.createTime)),
        h('td', {}, time(t.completeTime)))))));
    pager.replaceChildren(
      h('button', { type: 'button', disabled: page === 0, onclick: () => { page -= 1; renderTrials(); } }, '← newer'),
      h('span', { className: 'muted' }, `page ${page + 1} of ${pages}`),
      h('button', { type: 'button', disabled: page >= pages - 1, onclick: () => { page += 1; renderTrials(); } }, 'older →'));
  }

  function renderCards() {
    const trials = store.trials;
    const counts = new Map();
    for (const t of trials) counts.set(trialState(t), (counts.get(trialState(t)) ?? 0) + 1);
    const count = (state) => counts.get(state) ?? 0;
    const metadata = Object.entries(study.metadata ?? {}).map(([k, v]) => `${k}: ${v}`).join('; ');
    const others = [...counts.entries()]
      .filter(([state]) => !['COMPLETED', 'FAILED', 'INFEASIBLE', 'ACTIVE'].includes(state))
      .map(([state, n]) => `${(state || 'unspecified').toLowerCase()} ${n}`).join(', ');
    const runs = study.fineTuneRuns ?? [];
    const objectives = objectivesOf(study.spec);
    const constraints = constraintsText(study.spec);
    const violating = trials.filter((t) => t.feasible === false).length;
    const front = study.paretoFront ?? {};
    cards.replaceChildren(...[
      card('Algorithm', kindOf(study), 'study-kind'),
      card('Bound model', study.boundModel ?? '', 'study-model'),
      card('State', shortEnum(study.state, 'STUDY_STATE_').toLowerCase(), 'study-state'),
      objectives.length > 1
        ? card('Objectives', objectives.map((o) => `${o.name} (${o.maximize ? 'max' : 'min'})`).join(', '), 'study-objectives')
        : card('Objective', `${study.spec?.objective?.name ?? ''} (${goalOf(study)})`),
      constraints.length > 0 ? card('Constraints', constraints.join(', '), 'study-constraints') : null,
      constraints.length > 0 ? card('Violating a constraint', violating, 'study-violating') : null,
      objectives.length > 1
        ? card('Pareto front', `${Number(front.size ?? 0)} trials, hypervolume ${number(front.hypervolume ?? 0)}`, 'study-front')
        : null,
      card('Trials', Number(study.trialCount ?? 0), 'study-trials'),
      card('Best value', number(study.bestTrial?.value), 'study-best'),
      card('Completed / failed / infeasible',
        `${count('COMPLETED')} / ${count('FAILED')} / ${count('INFEASIBLE')}`, 'study-counts'),
      card('Active', count('ACTIVE'), 'study-active'),
      others ? card('Other states', others, 'study-other-states') : null,
      card('Sources', sourceCounts(trials).map(([name, n]) => `${name} ${n}`).join(', '), 'study-sources'),
      card('FineTune runs', runs.length > 0 ? Number(runs[runs.length - 1].number) : 0, 'study-fine-tunes'),
      card('Created', time(study.createTime)),
      card('Last activity', time(lastActivity(study)), 'study-activity'),
      study.owner ? card('Owner', study.owner) : null,
      metadata ? card('Server decisions', metadata) : null].filter(Boolean));
  }

  function renderPlots() {
    const trials = store.trials;
    const maximize = goalOf(study) === 'maximize';
    const best = study.bestTrial;
    plot.replaceChildren(
      historyPlot(trials, maximize),
      h('div', { className: 'legend' },
        h('span', {}, '● completed value'), h('span', {}, '— best so far'),
        h('span', { className: 'error' }, '✕ failed'), h('span', { style: 'color: var(--warn)' }, '✕ infeasible')),
      best ? h('p', {}, `Best: trial ${best.id}, ${number(best.value)} — `,
        h('span', { className: 'config' }, configuration(best.configuration))) : null);
    renderPareto(trials);
    const completed = trials.filter((t) => trialState(t) === 'COMPLETED' && Number.isFinite(t.value));
    const axes = axesOf(study.spec);
    const read = valueReader(study.spec);
    if (completed.length === 0 || axes.length === 0) {
      const none = h('p', { className: 'muted' }, 'No completed trials yet.');
      parallel.replaceChildren(none);
      slices.replaceChildren(none.cloneNode(true));
      return;
    }
    parallel.replaceChildren(parallelCoordinates(axes, completed, read, maximize));
    const yRange = valueRange(completed);
    slices.replaceChildren(...axes.map((axis) => slicePlot(axis, completed, read, maximize, yRange)));
  }

  // Several objectives: the scatter of the objectives (pairwise for three) with the front (the
  // non-dominated feasible trials, computed here) highlighted and infeasible trials marked, and
  // the hypervolume after each trial against the study's reported reference point.
  function renderPareto(trials) {
    const objectives = objectivesOf(study.spec);
    const several = objectives.length > 1;
    paretoHeading.hidden = !several;
    pareto.hidden = !several;
    if (!several) {
      pareto.replaceChildren();
      return;
    }
    const completed = trials.filter((t) => valuesOf(t, objectives) !== undefined);
    const feasible = completed.filter((t) => t.feasible !== false);
    const points = feasible.map((t) => minimized(valuesOf(t, objectives), objectives));
    const frontIds = new Set(nonDominated(points).map((k) => String(feasible[k].id)));
    const reference = study.paretoFront?.referencePoint ?? [];
    const pairs = objectives.length === 2 ? [[0, 1]] : [[0, 1], [0, 2], [1, 2]];
    const history = reference.length === objectives.length ? hypervolumeHistory(trials, objectives, reference) : [];
    pareto.replaceChildren(
      h('div', { className: objectives.length === 2 ? 'pareto-one' : 'slices', id: 'pareto-scatters' },
        pairs.map(([i, j]) => paretoScatter(objectives, completed, frontIds, i, j, reference))),
      h('div', { className: 'legend' },
        h('span', { className: 'front-key' }, '● on the Pareto front'), h('span', {}, '● dominated'),
        h('span', { style: 'color: var(--warn)' }, '✕ violates a constraint'), h('span', {}, '+ reference point'),
        h('span', { id: 'front-size', 'data-size': frontIds.size }, `${frontIds.size} trials on the front`)),
      h('h3', {}, 'Hypervolume over trials'),
      h('p', { className: 'muted legend' },
        'The volume the feasible trials so far dominate, up to the reference point ',
        h('span', { id: 'reference-point', style: 'margin-right: 0' }, `(${reference.map(number).join(', ')})`),
        ', computed in the browser; the last step is the study\'s hypervolume.'),
      hypervolumePlot(history));
  }

  // Draws the view; the plots only when the trials changed, and for a large study at most every
  // PLOT_REFRESH_MS while it runs (they are what costs).
  function render(force = false) {
    renderCards();
    fineTune.replaceChildren(fineTuneTable(study.fineTuneRuns ?? []));
    const due = force || store.size <= LARGE_STUDY || performance.now() - plotsDrawn >= PLOT_REFRESH_MS;
    if (drawnVersion !== dataVersion && due) {
      renderPlots();
      drawnVersion = dataVersion;
      plotsDrawn = performance.now();
    }
    renderTrials();
  }

  const root = h('div', { id: 'study-view', 'data-complete': 'false' },
    h('p', {}, h('a', { href: '#/' }, '← all studies'), ' ', progress),
    h('h1', {}, 'Study ', h('span', { id: 'study-id' }, studyId)),
    cards,
    paretoHeading, pareto,
    h('h2', {}, 'History'), plot,
    h('h2', {}, 'Parameters'),
    h('p', { className: 'muted legend' },
      'Each completed trial is a line across its algorithm choices, parameters and objective value; the best are strong blue. ',
      'A trial that chose another algorithm has no value on that algorithm\'s parameters and crosses their axes at ∅ (absent).'),
    parallel,
    h('h3', {}, 'Slices'),
    h('p', { className: 'muted legend' }, 'The objective value against each parameter, for the trials that have it; categories and algorithms as strips.'),
    slices,
    h('h2', {}, 'FineTune runs'), fineTune,
    h('h2', {}, 'Trials'), h('div', { className: 'toolbar' }, filter, sourceFilter, filterCount), table, pager);
  app.replaceChildren(root);

  // The first load: draws everything after the first page, then only the progress until all
  // pages are in (drawing again for each page would cost more than the pages), then everything. Records how long the trials took to arrive and the last
  // draw to be laid out and painted (window.metaoptTiming; the browser test reports them).
  async function firstLoad() {
    let pages = 0;
    let drawMs = 0;
    await store.load(async () => {
      pages += 1;
      progress.textContent = `loading trials… ${store.size} of ${Number(study.trialCount ?? 0)}`;
      if (pages === 1) {
        const t0 = performance.now();
        dataVersion += 1;
        render(true);
        drawMs += performance.now() - t0;
      }
    });
    const loaded = performance.now();
    dataVersion += 1;
    shown = JSON.stringify(study);
    render(true);
    const built = performance.now();
    // Two frames: the browser has laid out and painted what render() built.
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const painted = performance.now();
    progress.textContent = '';
    window.metaoptTiming = {
      trials: store.size,
      pages,
      // From opening the view until every page was in (fetching, parsing, the drawing between).
      loadMs: Math.round(loaded - started),
      // Of which drawing the first page.
      drawWhileLoadingMs: Math.round(drawMs),
      // The final draw: building the DOM, then layout and paint.
      buildMs: Math.round(built - loaded),
      renderMs: Math.round(painted - loaded),
      totalMs: Math.round(painted - started),
    };
    root.dataset.complete = 'true';
  }

  return {
    async refresh() {
      const fresh = (await get(path)).study;
      const first = study === null;
      const changed = !first && (fresh.trialCount !== study.trialCount || fresh.updateTime !== study.updateTime);
      study = fresh;
      if (first) {
        await firstLoad();
        return;
      }
      ticks += 1;
      const now = Date.now();
      const leaseEnded = store.trials.some((t) => trialState(t) === 'ACTIVE' && t.leaseExpireTime &&
        new Date(t.leaseExpireTime).getTime() <= now);
      // Anything else an unsettled trial may show (a newer server's intermediate values) is
      // picked up every fifth refresh.
      const unsettledLeft = ticks % 5 === 0 && store.trials.some(unsettled);
      if ((changed || leaseEnded || unsettledLeft) && await store.update(Number(fresh.trialCount ?? 0))) {
        dataVersion += 1;
      }
      // Nothing new, nothing held back: nothing to draw.
      const json = JSON.stringify(fresh);
      if (json === shown && drawnVersion === dataVersion) return;
      shown = json;
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
      holder.replaceChildren(h('div', { className: 'scroll' }, h('table', { id: 'models' },
        h('thead', {}, h('tr', {}, ['Model', 'Version', 'Kind', 'Bound studies', 'Portfolio', 'Task-aware design',
          'Trained on', 'Search space', 'Validation', 'Created'].map((l) => h('th', {}, l)))),
        h('tbody', {}, sorted.map((m) => h('tr', { 'data-model': `${m.name}@${m.version}` },
          h('td', {}, m.name), h('td', { className: 'num' }, m.version),
          h('td', {}, shortEnum(m.kind, 'MODEL_KIND_').toLowerCase()),
          h('td', { className: 'bound' }, bound(m).map((s, i) => [i > 0 ? ', ' : '', studyLink(s.studyId)])),
          h('td', { className: 'num' }, m.portfolioSize ?? 0),
          h('td', {}, m.taskDesign ?? ''), h('td', {}, m.trainingData ?? ''),
          h('td', { className: 'config', title: m.searchSpaceSummary ?? '' }, clip(m.searchSpaceSummary, 120)),
          h('td', {}, clip(Object.entries(m.validationMetrics ?? {})
            .map(([k, v]) => `${k}=${number(v)}`).join(', '), 120)),
          h('td', {}, time(m.createTime))))))));
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

// The plots' tooltips: one element, shown over any mark with a data-tip (plot.js).
const tip = h('div', { className: 'tip', id: 'tip', role: 'tooltip' });
tip.hidden = true;
document.body.append(tip);
document.addEventListener('mouseover', (event) => {
  const text = event.target?.getAttribute?.('data-tip');
  if (!text) {
    tip.hidden = true;
    return;
  }
  tip.textContent = text;
  tip.style.left = `${event.pageX + 12}px`;
  tip.style.top = `${event.pageY + 12}px`;
  tip.hidden = false;
});

signOut.addEventListener('click', () => {
  setToken('');
  route();
});
window.addEventListener('hashchange', route);
setInterval(() => {
  if (liveBox.checked && document.visibilityState === 'visible') refresh();
}, REFRESH_MS);
route();
