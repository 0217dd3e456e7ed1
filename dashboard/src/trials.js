// A study's trials, loaded page by page and kept current by fetching again only the pages that
// can have changed.
//
// Trial ids are dense (1, 2, ...) and ListTrials returns them by increasing id, so each page
// fetched covers a range of ids and its page token fetches that range again. A trial changes
// only while it has no completion time (ACTIVE, STALE; see unsettled) and new trials come
// after the last one: an update fetches the pages holding unsettled trials, and the last page
// onwards.
import { getPage } from './api.js';
import { unsettled } from './format.js';

export class TrialStore {
  // `path`: the study's trials below /api/v1/ ("studies/<id>/trials").
  constructor(path) {
    this.path = path;
    this.byId = new Map();
    this.pages = []; // {token, first, last}: the token that fetches ids first..last
    this.sorted = null;
    this.loaded = false;
  }

  // Every trial, by increasing id.
  get trials() {
    if (this.sorted === null) {
      this.sorted = [...this.byId.values()].sort((a, b) => Number(a.id) - Number(b.id));
    }
    return this.sorted;
  }

  get size() {
    return this.byId.size;
  }

  // Stores a fetched page's trials; true if any of them is new or changed.
  #take(items) {
    let changed = false;
    for (const trial of items) {
      const before = this.byId.get(trial.id);
      if (before === undefined || JSON.stringify(before) !== JSON.stringify(trial)) {
        this.byId.set(trial.id, trial);
        changed = true;
      }
    }
    if (changed) this.sorted = null;
    return changed;
  }

  // Fetches from page `index` (its token; the start when there is none) to the end, replacing
  // the page records from there. Calls onPage() after each page. True if anything changed.
  async #fetchFrom(index, onPage) {
    let token = index < this.pages.length ? this.pages[index].token : '';
    this.pages.length = Math.min(index, this.pages.length);
    let changed = false;
    for (;;) {
      const page = await getPage(this.path, 'trials', token);
      if (page.items.length > 0) {
        this.pages.push({
          token,
          first: Number(page.items[0].id),
          last: Number(page.items[page.items.length - 1].id),
        });
      }
      if (this.#take(page.items)) changed = true;
      if (onPage) await onPage();
      if (!page.nextPageToken) return changed;
      token = page.nextPageToken;
    }
  }

  // The first load: every page, calling onPage() after each (to draw progressively).
  async load(onPage) {
    await this.#fetchFrom(0, onPage);
    this.loaded = true;
  }

  // Brings the trials up to date; true if any changed. `trialCount` is the study's count now:
  // fewer than held means the study is not the one loaded (deleted and created again), and
  // everything is fetched afresh.
  async update(trialCount) {
    if (!this.loaded || trialCount < this.byId.size) {
      this.byId.clear();
      this.pages = [];
      this.sorted = null;
      await this.load();
      return true;
    }
    const last = Math.max(0, this.pages.length - 1);
    const indexes = new Set();
    for (const trial of this.trials) {
      if (!unsettled(trial)) continue;
      const id = Number(trial.id);
      const index = this.pages.findIndex((p) => p.first <= id && id <= p.last);
      if (index >= 0 && index < last) indexes.add(index);
    }
    let changed = false;
    for (const index of indexes) {
      const page = await getPage(this.path, 'trials', this.pages[index].token);
      if (this.#take(page.items)) changed = true;
    }
    if (await this.#fetchFrom(last)) changed = true;
    return changed;
  }
}
