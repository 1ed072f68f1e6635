// The npuzzle console: reads /api/v1/events (server-sent events, read with fetch so that the
// client token can go in a header), renders each snapshot, and solves boards through
// /api/v1/solve, playing the answer on a grid. Plain JS, no libraries; every text that comes
// from the server is set with textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let token = sessionStorage.getItem("npuzzle-token") || "";
let previous = null; // the snapshot before, for rates
let pending = null; // the board being solved through the form, as the server writes boards

function authHeaders() {
  return token ? { Authorization: "Bearer " + token } : {};
}

function setConnection(ok, text) {
  const el = $("connection");
  el.textContent = text;
  el.className = ok ? "ok" : "bad";
}

$("token-save").addEventListener("click", () => {
  token = $("token").value.trim();
  sessionStorage.setItem("npuzzle-token", token);
  $("token-box").hidden = true;
});

// ---- the event stream ----------------------------------------------------------------------

async function listen() {
  for (;;) {
    try {
      const response = await fetch("/api/v1/events", { headers: authHeaders() });
      if (response.status === 401) {
        $("token-box").hidden = false;
        setConnection(false, "the client token is needed");
        await sleep(2000);
        continue;
      }
      if (!response.ok) throw new Error("HTTP " + response.status);
      setConnection(true, "live");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).replace(/^ /, ""))
            .join("\n");
          if (data) render(JSON.parse(data));
        }
      }
    } catch (e) {
      console.warn("event stream:", e);
    }
    setConnection(false, "reconnecting…");
    await sleep(1000);
  }
}

// ---- rendering -----------------------------------------------------------------------------

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function fillTable(id, items, fill) {
  const body = $(id).querySelector("tbody");
  const rows = items.map((item) => {
    const tr = document.createElement("tr");
    fill(tr, item);
    return tr;
  });
  body.replaceChildren(...rows);
}

// A table whose rows live on between snapshots, one per key: a cell is written only when its
// text changed, and rows are only moved when the order did. With a thousand searches a full
// rebuild each second costs the page most of its main thread; this costs the changed cells.
const keyedRows = new Map();

function fillKeyed(id, items, key, texts) {
  const body = $(id).querySelector("tbody");
  let rows = keyedRows.get(id);
  if (!rows) {
    rows = new Map();
    keyedRows.set(id, rows);
  }
  const seen = new Set();
  const order = items.map((item) => {
    const k = key(item);
    seen.add(k);
    const values = texts(item);
    let tr = rows.get(k);
    if (!tr) {
      tr = document.createElement("tr");
      for (const [, cls] of values) {
        const td = document.createElement("td");
        if (cls) td.className = cls;
        tr.appendChild(td);
      }
      rows.set(k, tr);
    }
    values.forEach(([text, cls], i) => {
      const td = tr.children[i];
      const t = String(text);
      if (td.textContent !== t) td.textContent = t;
      if (cls && td.className !== cls) td.className = cls;
    });
    return tr;
  });
  for (const k of [...rows.keys()]) if (!seen.has(k)) rows.delete(k);
  const current = body.children;
  const same = current.length === order.length && order.every((tr, i) => current[i] === tr);
  if (!same) body.replaceChildren(...order);
}

const number = (n) => Math.round(n).toLocaleString("en");
// Searches listed in the table at most.
const SHOWN = 200;
const seconds = (ms) => (ms < 10000 ? (ms / 1000).toFixed(2) : (ms / 1000).toFixed(0)) + " s";

function chart(id, values) {
  const svg = $(id);
  const max = Math.max(1e-9, ...values);
  const n = Math.max(values.length - 1, 1);
  const points = values.map((v, i) => `${(i / n) * 300},${60 - (v / max) * 56 - 2}`).join(" ");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points);
  svg.replaceChildren(line);
}

function render(s) {
  const st = s.stats;
  $("summary").textContent =
    `${st.workers} workers · ${st.slots} threads (${st.busy_slots} busy) · ` +
    `${s.searches.length} searches · ${st.queue_depth} units queued`;
  $("cache").textContent =
    `cache: ${number(st.cache_entries)} entries · ${number(st.cache_hits)} hits, ` +
    `${number(st.cache_misses)} misses (${(st.cache_hit_rate * 100).toFixed(1)} % hits) · ` +
    `${number(s.requests)} requests answered`;
  const rates = s.history.map((h) => h.requests);
  const latencies = s.history.map((h) => h.mean_ms);
  chart("rate-chart", rates);
  chart("latency-chart", latencies);
  $("rate-now").textContent = rates.length ? `(now ${rates[rates.length - 1]})` : "";
  $("latency-now").textContent = latencies.length
    ? `(now ${latencies[latencies.length - 1].toFixed(2)})`
    : "";

  const before = new Map((previous ? previous.workers : []).map((w) => [w.id, w]));
  const dt = previous ? (s.at_ms - previous.at_ms) / 1000 : 0;
  fillTable("workers", s.workers, (tr, w) => {
    tr.dataset.name = w.name;
    const was = before.get(w.id);
    const rate = was && dt > 0 ? (w.nodes - was.nodes) / dt : 0;
    cell(tr, w.name);
    cell(tr, w.address || "");
    cell(tr, w.slots);
    cell(tr, w.busy_slots);
    cell(tr, number(rate));
    cell(tr, w.tables.join(", ") || "none");
    cell(tr, new Date(w.connected_since_ms).toLocaleString());
  });
  // At most SHOWN rows: past a few hundred, the page would spend its main thread on the table.
  const shown = s.searches.slice(0, SHOWN);
  const hidden = s.searches.length - shown.length;
  $("searches-more").textContent = hidden > 0
    ? `and ${number(hidden)} more (GET /api/v1/searches lists them all)`
    : "";
  fillKeyed("searches", shown, (x) => x.job, (x) => [
    [x.job],
    [x.board, "board"],
    [x.heuristic],
    [x.bound || ""],
    [x.bounds.join(" → ")],
    [x.units_total ? `${x.units_done} / ${x.units_total}` : "whole"],
    [boundProgress(x)],
    [number(x.nodes)],
    [seconds(x.elapsed_ms)],
    [x.waiters],
  ]);
  fillTable("finished", s.finished.slice().reverse(), (tr, x) => {
    cell(tr, x.job);
    cell(tr, x.board, "board");
    cell(tr, x.heuristic);
    cell(tr, x.outcome, x.outcome === "solved" ? "ok" : "bad");
    cell(tr, x.moves != null ? x.moves.length : "");
    cell(tr, number(x.nodes));
    cell(tr, seconds(x.elapsed_ms));
    const td = cell(tr, "");
    if (x.moves != null) {
      const button = document.createElement("button");
      button.textContent = "play";
      button.addEventListener("click", () => {
        const tiles = x.board.split(" ").map(Number);
        const side = Math.round(Math.sqrt(tiles.length));
        const [w, h] = side * side === tiles.length ? [side, side] : guessShape(tiles.length);
        showAnswer(`job ${x.job}: ${x.moves.length} moves`, tiles, w, h, x.moves);
      });
      td.appendChild(button);
    }
  });
  if (pending) {
    const running = s.searches.find((x) => x.board === pending);
    if (running && running.bounds.length) {
      const outlook = running.predicted_nodes != null ? `; this bound ${boundProgress(running)}` : "";
      status(
        `searching… bound ${running.bound} (bounds so far ${running.bounds.join(" → ")}), ` +
          `${number(running.nodes)} nodes, ${seconds(running.elapsed_ms)}${outlook}`,
      );
    }
  }
  previous = s;
}

// The current bound's nodes, and once two bounds have finished its forecast: the share done of
// what it should expand, and the time left at its rate so far.
function boundProgress(x) {
  if (x.predicted_nodes == null) return x.bound_nodes ? number(x.bound_nodes) : "";
  const eta = x.eta_secs != null ? `, ETA ${seconds(x.eta_secs * 1000)}` : "";
  // "~" marks a share extrapolated at the last bound's rate (nothing reported within the bound).
  const about = x.extrapolated ? "~" : "";
  return `${about}${Math.floor(x.fraction * 100)}% of ~${number(x.predicted_nodes)}${eta}`;
}

// ---- the solve form and the player -----------------------------------------------------------

$("goal").addEventListener("change", () => {
  $("goal-tiles").hidden = $("goal").value !== "custom";
});

function status(text, cls) {
  const el = $("solve-status");
  el.textContent = text;
  el.className = cls || "";
}

/// The board as the server writes boards: tiles separated by one space, 0 for the blank.
function normalize(text) {
  return text
    .trim()
    .split(/[\s,]+/)
    .map((t) => (/^[xX_]$/.test(t) ? "0" : String(Number(t))))
    .join(" ");
}

function guessShape(cells) {
  for (let w = 5; w >= 2; w--) {
    if (cells % w === 0 && cells / w >= 2 && cells / w <= 5) return [w, cells / w];
  }
  return [cells, 1];
}

$("solve-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { board: $("board").value, heuristic: $("heuristic").value };
  const size = $("size").value.trim();
  if (size) body.size = size;
  body.goal = $("goal").value === "custom" ? $("goal-tiles").value : $("goal").value;
  const within = $("within").value.trim();
  if (within) body.within = Number(within);
  $("solve-button").disabled = true;
  $("player").hidden = true;
  pending = normalize(body.board);
  status("searching…");
  try {
    const response = await fetch("/api/v1/solve", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...authHeaders() },
      body: JSON.stringify(body),
    });
    let answer;
    try {
      answer = await response.json();
    } catch (e) {
      answer = { status: "failed", error: `HTTP ${response.status}` };
    }
    if (response.status === 401) $("token-box").hidden = false;
    if (answer.status === "solved") {
      const tiles = pending.split(" ").map(Number);
      let [w, h] = [0, 0];
      const m = /^\s*(\d)\s*[xX*×]\s*(\d)\s*$/.exec(size);
      if (m) [w, h] = [Number(m[1]), Number(m[2])];
      else {
        const side = Math.round(Math.sqrt(tiles.length));
        [w, h] = side * side === tiles.length ? [side, side] : guessShape(tiles.length);
      }
      const how = answer.cached ? "from the cache" : `${number(answer.nodes)} nodes`;
      // Optimal unless a factor was asked for and the search did not prove it.
      const what = answer.optimal
        ? `optimal: ${answer.length} moves`
        : `within ${within} of optimal: ${answer.length} moves, no path shorter than ${answer.lower_bound}`;
      showAnswer(
        `${what} (${how}, ${answer.millis.toFixed(1)} ms)`,
        tiles,
        w,
        h,
        answer.moves,
      );
    } else if (answer.status === "unsolvable") {
      status("unsolvable: no sequence of moves reaches the goal", "bad");
    } else {
      status(`${answer.status}: ${answer.error || "HTTP " + response.status}`, "error");
    }
  } catch (e) {
    status(`failed: ${e}`, "error");
  } finally {
    pending = null;
    $("solve-button").disabled = false;
  }
});

const player = { start: [], width: 0, height: 0, moves: "", step: 0, timer: null };

function showAnswer(text, tiles, width, height, moves) {
  status(text, "ok");
  const el = $("solve-status");
  el.dataset.moves = moves;
  el.dataset.length = moves.length;
  stopPlaying();
  Object.assign(player, { start: tiles, width, height, moves, step: 0 });
  $("player").hidden = false;
  drawPlayer();
}

function boardAt(step) {
  const tiles = player.start.slice();
  let blank = tiles.indexOf(0);
  const delta = { U: -player.width, D: player.width, L: -1, R: 1 };
  for (const move of player.moves.slice(0, step)) {
    const to = blank + delta[move];
    tiles[blank] = tiles[to];
    tiles[to] = 0;
    blank = to;
  }
  return tiles;
}

function drawPlayer() {
  const grid = $("grid");
  grid.style.gridTemplateColumns = `repeat(${player.width}, 44px)`;
  grid.dataset.step = player.step;
  const tiles = boardAt(player.step);
  grid.dataset.tiles = tiles.join(" ");
  grid.replaceChildren(
    ...tiles.map((t) => {
      const d = document.createElement("div");
      d.textContent = t === 0 ? "" : t;
      if (t === 0) d.className = "blank";
      return d;
    }),
  );
  $("step-count").textContent = `move ${player.step} of ${player.moves.length}`;
  const moves = $("moves");
  const done = document.createElement("span");
  done.className = "done";
  done.textContent = player.moves.slice(0, player.step);
  const next = document.createElement("span");
  next.className = "next";
  next.textContent = player.moves.slice(player.step, player.step + 1);
  const rest = document.createTextNode(player.moves.slice(player.step + 1));
  moves.replaceChildren(done, next, rest);
}

function stopPlaying() {
  if (player.timer) clearInterval(player.timer);
  player.timer = null;
  $("play").textContent = "▶ play";
}

function go(step) {
  player.step = Math.max(0, Math.min(player.moves.length, step));
  drawPlayer();
}

$("step").addEventListener("click", () => go(player.step + 1));
$("step-back").addEventListener("click", () => go(player.step - 1));
$("reset").addEventListener("click", () => {
  stopPlaying();
  go(0);
});
$("play").addEventListener("click", () => {
  if (player.timer) return stopPlaying();
  if (player.step >= player.moves.length) go(0);
  $("play").textContent = "⏸ pause";
  player.timer = setInterval(() => {
    if (player.step >= player.moves.length) return stopPlaying();
    go(player.step + 1);
  }, 250);
});

listen();
