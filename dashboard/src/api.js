// The server's read-only JSON API (/api/v1/, proto3 JSON) with the bearer token kept in
// sessionStorage (never in a URL).

const TOKEN_KEY = 'metaopt.token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// GET `path` (below /api/v1/) with `params`; resolves to the parsed body or throws ApiError.
export async function get(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '' && v != null));
  const url = `api/v1/${path}${query.size > 0 ? `?${query}` : ''}`;
  const headers = {};
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const response = await fetch(url, { headers, cache: 'no-store' });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: reported below.
  }
  if (!response.ok) {
    throw new ApiError(response.status, body?.error?.message ?? `HTTP ${response.status}`);
  }
  return body ?? {};
}

// Pages of 1000, or of the server's default once it refused 1000 (--max-page-size below it).
let pageSize = 1000;

// One page of a paged list: resolves to {items: the page's `field`, nextPageToken}.
export async function getPage(path, field, pageToken = '', params = {}) {
  for (;;) {
    try {
      const page = await get(path, { ...params, page_size: pageSize, page_token: pageToken });
      return { items: page[field] ?? [], nextPageToken: page.nextPageToken ?? '' };
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 400 && pageSize !== 0 &&
            error.message.startsWith('page_size'))) throw error;
      pageSize = 0;
    }
  }
}

// Every item of a paged list (`field` of each page), following nextPageToken.
export async function getAll(path, field, params = {}) {
  const items = [];
  let pageToken = '';
  for (;;) {
    const page = await getPage(path, field, pageToken, params);
    items.push(...page.items);
    pageToken = page.nextPageToken;
    if (!pageToken) return items;
  }
}
