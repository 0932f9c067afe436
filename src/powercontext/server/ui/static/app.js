// PowerContext memory inspector. Every piece of memory text reaches the page through
// textContent / text nodes only (never innerHTML), so entry text cannot become markup.
"use strict";

const KEY_STORAGE = "powercontext.inspector.key";
const SCOPE_STORAGE = "powercontext.inspector.scope";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "className") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function status(message, isError) {
  const line = $("status");
  line.textContent = message;
  line.classList.toggle("error", Boolean(isError));
}

function scope() {
  return $("scope").value.trim();
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (key) headers["Authorization"] = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch("/ui/api/" + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let payload = null;
  try {
    payload = await response.json();
  } catch (_) {
    payload = null;
  }
  if (!response.ok) {
    const error = payload && payload.error ? payload.error : { code: "http_" + response.status, message: response.statusText };
    const hint = response.status === 401 ? " (enter an API key above)" : "";
    throw new Error(error.code + ": " + error.message + hint);
  }
  return payload;
}

function badges(channels) {
  const cell = el("td");
  for (const channel of channels) cell.append(el("span", { className: "badge " + channel }, channel));
  return cell;
}

const fmt = (score) => Number(score).toFixed(4);

// "2026-12-04T16:47:35.323945+00:00" -> "2026-12-04 16:47:35 UTC": seconds, with the zone.
function when(iso) {
  if (!iso) return "";
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})?$/.exec(iso);
  if (!match) return iso;
  const zone = !match[3] || match[3] === "Z" || match[3] === "+00:00" ? "UTC" : "UTC" + match[3];
  return match[1] + " " + match[2] + " " + zone;
}

// The entry text, and its metadata (if any) as key: value lines under it.
function textCell(text, metadata) {
  const cell = el("td", { className: "text" }, text);
  const pairs = Object.entries(metadata || {});
  if (pairs.length) {
    const list = el("dl", { className: "meta" });
    for (const [key, value] of pairs) {
      list.append(el("dt", null, key), el("dd", null, typeof value === "string" ? value : JSON.stringify(value)));
    }
    cell.append(list);
  }
  return cell;
}

function chip(text, warn) {
  return el("span", { className: warn ? "chip warn" : "chip" }, text);
}

function renderSearch(result) {
  const trace = result.rerank;
  const summary = $("search-summary");
  summary.replaceChildren(
    chip("mode " + result.mode),
    chip(result.memory_ref ? "revision " + result.memory_ref.revision : "empty scope"),
    chip(result.hits.length + " final hits (limit " + result.limit + ")"),
    chip("search " + result.elapsed_ms.toFixed(1) + " ms"),
  );
  if (result.index_profile_stale) {
    summary.append(chip("indexed under older settings: run powercontext reindex --rebuild", true));
  }
  if (trace) {
    const usage = trace.usage || {};
    const tokens = (usage.input_tokens ?? "?") + " in / " + (usage.output_tokens ?? "?") + " out";
    summary.append(
      chip("policy " + trace.policy_id),
      chip("rerank " + Number(trace.latency_ms).toFixed(1) + " ms"),
      chip("tokens " + tokens + ", " + (usage.requests ?? 0) + " request(s)"),
      chip("selected ranks [" + trace.selected_ranks.join(", ") + "]"),
      chip("discarded ranks [" + trace.discarded_ranks.join(", ") + "] (" + trace.discarded_rank_count + ")", trace.discarded_rank_count > 0),
      chip(trace.used_fallback ? "fallback: yes" : "fallback: no", trace.used_fallback),
    );
    if (trace.rerank_status) summary.append(chip("rerank status " + trace.rerank_status));
    if (trace.candidate_policy_id) summary.append(chip("candidates " + trace.candidate_policy_id));
    if (trace.query_class) summary.append(chip("query class " + trace.query_class));
    if (trace.candidate_limit) summary.append(chip("candidate limit " + trace.candidate_limit));
  } else {
    summary.append(chip(result.reranker ? "no rerank (empty pool)" : "no reranker configured: the pool is the final list"));
  }

  const pool = trace ? trace.candidates : result.hits.map((hit) => ({ ...hit, final_position: hit.position }));
  const poolBody = $("pool-table").tBodies[0];
  poolBody.replaceChildren(
    ...pool.map((hit) => {
      const chosen = hit.final_position !== null && hit.final_position !== undefined;
      const outcome = chosen ? "selected #" + hit.final_position : "not selected";
      const truncated = hit.truncated ? " (text cut in prompt)" : "";
      return el(
        "tr",
        { className: chosen ? "selected" : "dropped", dataset: { rank: hit.rank } },
        el("td", { className: "num" }, hit.rank),
        badges(hit.matched_by),
        el("td", { className: "num" }, fmt(hit.score)),
        textCell(hit.text, hit.metadata),
        el("td", null, outcome + truncated),
      );
    }),
  );
  $("pool-count").textContent = "(" + pool.length + (trace ? " candidates" : " hits") + ")";

  const finalBody = $("final-table").tBodies[0];
  finalBody.replaceChildren(
    ...result.hits.map((hit) =>
      el(
        "tr",
        { dataset: { rank: hit.rank } },
        el("td", { className: "num" }, hit.position),
        el("td", { className: "num" }, hit.rank),
        badges(hit.matched_by),
        el("td", { className: "num" }, fmt(hit.score)),
        textCell(hit.text, hit.metadata),
      ),
    ),
  );
  $("final-count").textContent = "(" + result.hits.length + ")";
}

async function runSearch(event) {
  event.preventDefault();
  if (!scope()) return status("Pick a scope first.", true);
  status("Searching…");
  try {
    const result = await api("POST", "search", {
      scope_id: scope(),
      query: $("query").value,
      limit: Number($("limit").value) || 10,
      mode: $("mode").value,
    });
    renderSearch(result);
    status("Searched " + scope() + ".");
  } catch (error) {
    status(error.message, true);
  }
}

let nextCursor = null;

function entryRow(entry) {
  const button = el("button", { type: "button", className: "secondary history-button" }, "History");
  button.addEventListener("click", () => showHistory(entry.entry_id));
  return el(
    "tr",
    { dataset: { entryId: entry.entry_id } },
    el("td", { className: "num" }, entry.version),
    el("td", { className: "wrap" }, entry.kind),
    textCell(entry.text, entry.metadata),
    el("td", { className: "num" }, when(entry.created_at)),
    el("td", null, button),
  );
}

async function loadEntries(more) {
  if (!scope()) return status("Pick a scope first.", true);
  status("Loading entries…");
  try {
    const body = { scope_id: scope(), limit: 100 };
    if (more && nextCursor) body.cursor = nextCursor;
    const page = await api("POST", "entries", body);
    const tbody = $("entries-table").tBodies[0];
    const rows = page.entries.map(entryRow);
    if (more) tbody.append(...rows);
    else tbody.replaceChildren(...rows);
    nextCursor = page.next_cursor;
    $("more-entries").hidden = !nextCursor;
    $("entries-ref").textContent = page.memory_ref ? "at revision " + page.memory_ref.revision : "empty scope";
    status(tbody.rows.length + " active entries in " + scope() + ".");
  } catch (error) {
    status(error.message, true);
  }
}

async function showHistory(entryId) {
  status("Loading history…");
  try {
    const history = await api("POST", "history", { scope_id: scope(), entry_id: entryId });
    const textOf = new Map(history.versions.map((v) => [v.entry_version_id, v]));
    const tbody = $("history-table").tBodies[0];
    tbody.replaceChildren(
      ...history.changes.map((change) => {
        const version = textOf.get(change.entry_version_id);
        const state = change.op === "retire" ? "retired" : version && version.active ? "current" : "replaced";
        return el(
          "tr",
          { className: state === "current" ? "current" : "" },
          el("td", { className: "num" }, change.revision),
          el("td", null, change.op),
          el("td", { className: "num" }, version ? version.version : ""),
          version && change.op !== "retire" ? textCell(version.text, version.metadata) : el("td"),
          el("td", { className: "text" }, change.reason || ""),
          el("td", { className: "num" }, when(change.created_at)),
          el("td", null, state),
        );
      }),
    );
    $("history-entry").textContent = "(entry " + entryId + ", " + history.versions.length + (history.versions.length === 1 ? " version)" : " versions)");
    // Below 900 px the panel stacks under a long entries table: bring it into view.
    $("history").scrollIntoView({ block: "start" });
    status("History of " + entryId + ".");
  } catch (error) {
    status(error.message, true);
  }
}

async function loadScopes() {
  try {
    const result = await api("GET", "scopes");
    $("scope-list").replaceChildren(...result.scopes.map((id) => el("option", { value: id })));
    status(result.scopes.length + " scopes visible to this key.");
  } catch (error) {
    status(error.message, true);
  }
}

function showTab(id) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.tab === id);
  for (const panel of document.querySelectorAll(".tab-panel")) panel.hidden = panel.id !== id;
}

function init() {
  $("api-key").value = sessionStorage.getItem(KEY_STORAGE) || "";
  $("scope").value = sessionStorage.getItem(SCOPE_STORAGE) || "";
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("api-key").value.trim();
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    else sessionStorage.removeItem(KEY_STORAGE);
    status(key ? "Key saved for this tab." : "Key cleared.");
  });
  $("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORAGE);
    $("api-key").value = "";
    status("Key cleared.");
  });
  $("scope").addEventListener("change", () => sessionStorage.setItem(SCOPE_STORAGE, scope()));
  $("scope-form").addEventListener("submit", (event) => event.preventDefault());
  $("load-scopes").addEventListener("click", loadScopes);
  $("search-form").addEventListener("submit", runSearch);
  $("load-entries").addEventListener("click", () => loadEntries(false));
  $("more-entries").addEventListener("click", () => loadEntries(true));
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  document.body.dataset.ready = "true";
}

init();
