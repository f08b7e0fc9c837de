/* ContextMesh dashboard: draws the payload `contextmesh export` wrote. It computes no figure of
   its own; every number on the page is read from the payload. Text goes in through textContent
   (or a whitelist for class names), never as markup. Rendering is chunked into short tasks. */
"use strict";
(function () {
  const TYPES = new Set(["entity", "claim", "source", "decision", "assumption", "evidence"]);
  const NODE_CHUNK = 300;

  /* Yield until the browser has drawn a frame, so each chunk's style and layout land in a frame of
     their own instead of piling into one long task (the timeout keeps a hidden tab moving). */
  const tick = () =>
    new Promise((resolve) => {
      requestAnimationFrame(() => setTimeout(resolve, 0));
      setTimeout(resolve, 100);
    });
  /* Thousands separators by hand: the first toLocaleString call loads the Intl data, one long task. */
  const group = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const fmt = (n) => {
    if (n === null || n === undefined) return "—";
    const [whole, part] = (Number.isInteger(Number(n)) ? String(n) : Number(n).toFixed(1)).split(".");
    return group(whole) + (part ? "." + part : "");
  };
  const pct = (r) => (r === null || r === undefined ? "—" : (r * 100).toFixed(2) + "%");
  const word = (s) => String(s).replace(/[^a-z0-9_-]/gi, "");

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k === "style") e.style.cssText = v;
        else e.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const k of kids) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }
  const body = (id) => document.querySelector("#" + id + " .body");
  const empty = (text) => el("p", { class: "empty", text: text });
  const swatch = (type) => el("span", { class: "sw t-" + word(type) });
  const chip = (text, kind) => el("span", { class: "chip" + (kind ? " " + word(kind) : ""), text: text });

  async function load() {
    const block = document.getElementById("mesh-data");
    const text = block.textContent.trim();
    if (text) return JSON.parse(text);
    if (location.protocol === "file:") {
      throw new Error(
        "this page was exported without --inline, and a page opened from disk cannot read data/mesh.json: " +
          "run `contextmesh export --inline`, or serve the folder (python -m http.server) and open it from there"
      );
    }
    const response = await fetch("data/mesh.json", { cache: "no-store" });
    if (!response.ok) throw new Error("data/mesh.json: HTTP " + response.status);
    return response.json();
  }

  function banner(text) {
    const b = document.getElementById("banner");
    b.textContent = text;
    b.style.display = "block";
  }

  /* -- header ------------------------------------------------------------------------------ */
  function header(d) {
    const h = d.header;
    const tile = (value, total, label) =>
      el("div", { class: "tile" }, el("div", { class: "v" }, typeof value === "string" ? value : fmt(value), total === null ? null : el("small", { text: " / " + fmt(total) })), el("div", { class: "k", text: label }));
    const assumptions = h.assumptions.map((a) => fmt(a.count) + " " + a.status).join(" · ") || "none";
    const tiles = el(
      "div",
      { class: "tiles" },
      tile(h.nodes_live, h.nodes_total, "nodes live / total"),
      tile(h.edges_live, h.edges_total, "edges live / total"),
      tile(h.invalidated, null, "nodes invalidated"),
      tile(h.pruned, null, "nodes pruned"),
      tile(h.walks, null, "walks in " + fmt(h.rounds) + " rounds"),
      tile(Math.round(h.resolved_rate * 100) + "%", null, "walks whose mentions resolved"),
      el("div", { class: "tile" }, el("div", { class: "v", style: "font-size:15px;padding-top:7px", text: assumptions }), el("div", { class: "k", text: "assumptions" }))
    );
    const table = (title, rows) => {
      const t = el("table", null, el("thead", null, el("tr", null, el("th", { text: title }), el("th", { class: "n", text: "live" }), el("th", { class: "n", text: "total" }))));
      const tb = el("tbody");
      for (const r of rows) {
        tb.append(
          el(
            "tr",
            { class: r.total ? null : "muted" },
            el("td", null, TYPES.has(r.type) ? swatch(r.type) : null, r.type),
            el("td", { class: "n", text: fmt(r.live) }),
            el("td", { class: "n", text: fmt(r.total) })
          )
        );
      }
      t.append(tb);
      return t;
    };
    const signals = el("div", { class: "signals" }, chip("health: " + h.health.status, h.health.status));
    for (const s of h.health.signals) if (s.count) signals.append(chip(s.kind.replace(/_/g, " ") + " " + fmt(s.count), s.severity === "info" ? null : s.severity));
    body("p-header").append(el("div", { class: "glance" }, tiles, table("node type", h.nodes), table("edge type", h.edges)), signals);
  }

  /* -- graph ------------------------------------------------------------------------------- */
  async function graph(d) {
    const g = d.graph;
    const target = body("p-graph");
    if (!g.nodes.length) {
      target.append(empty("the graph holds no drawable node"));
      return;
    }
    const counts = {};
    let invalid = 0;
    for (const n of g.nodes) {
      counts[n.type] = (counts[n.type] || 0) + 1;
      if (n.invalidated) invalid += 1;
    }
    const bar = el("div", { class: "graphbar" });
    for (const t of g.types) if (counts[t]) bar.append(el("span", null, swatch(t), t + " " + fmt(counts[t])));
    if (invalid) bar.append(el("span", null, el("span", { class: "sw inv" }), "invalidated " + fmt(invalid)));
    if (g.plan_band) bar.append(el("span", { class: "bandkey" }, "along the foot: plan " + g.plan_band.plan + ", its tasks by layer (grounds above decisions)"));
    const caption = g.sampled
      ? "sampled " + g.drawn + " of " + g.drawable + " nodes (cap " + g.cap + ")"
      : "all " + g.drawn + " nodes";
    const edgeText = g.edges_drawn < g.edges_among ? " · " + g.edges_drawn + " of " + g.edges_among + " edges" : " · " + fmt(g.edges_drawn) + " edges";
    bar.append(el("span", { class: "caption", id: "graph-caption", text: caption + edgeText }));
    const wrap = el("div", { class: "graphwrap" });
    wrap.innerHTML =
      '<svg class="graph" viewBox="0 0 ' +
      Number(g.width) +
      " " +
      Number(g.height) +
      '" role="img" aria-label="the typed graph"><g class="edges"><path class="live"></path><path class="x"></path><path class="hl"></path></g><g class="nodes"></g></svg>';
    const tip = el("div", { class: "tip" });
    const info = el("div", { class: "nodeinfo muted", text: "Click a node to list its edges." });
    wrap.append(tip);
    target.append(bar, wrap, info);
    const svg = wrap.querySelector("svg");
    const nodeLayer = svg.querySelector("g.nodes");
    const N = g.nodes;
    const E = g.edges;
    /* Edges are two paths (live, fallen), not one element each: thousands of elements cost the
       browser style and paint work on every frame; one path of many segments costs almost none. */
    const segment = (e) => "M" + N[e.s].x + " " + N[e.s].y + "L" + N[e.t].x + " " + N[e.t].y;
    const live = [];
    const fallen = [];
    for (const e of E) (e.live ? live : fallen).push(segment(e));
    svg.querySelector("path.live").setAttribute("d", live.join(""));
    svg.querySelector("path.x").setAttribute("d", fallen.join(""));
    svg.querySelector("g.edges").setAttribute("data-edges", String(E.length));
    const highlight = svg.querySelector("path.hl");
    if (g.plan_band) planBand(svg, g);
    await tick();
    const scale = N.length > 400 ? 0.55 : 1;
    for (let i = 0; i < N.length; i += NODE_CHUNK) {
      let s = "";
      for (let j = i; j < Math.min(N.length, i + NODE_CHUNK); j++) {
        const n = N[j];
        const r = (n.invalidated ? 4.5 : 3 + Math.min(6, Math.sqrt(n.degree))) * scale;
        const cls = "node t-" + word(n.type) + (n.invalidated ? " invalidated" : " live") + (n.task ? " plan" : "");
        s += '<circle cx="' + Number(n.x) + '" cy="' + Number(n.y) + '" r="' + r.toFixed(1) + '" class="' + cls + '" data-i="' + j + '"></circle>';
      }
      nodeLayer.insertAdjacentHTML("beforeend", s);
      await tick();
    }
    let adjacency = null;
    let selected = null;
    const indexOf = (target) => (target && target.tagName === "circle" ? Number(target.getAttribute("data-i")) : -1);
    svg.addEventListener("mousemove", (ev) => {
      const i = indexOf(ev.target);
      if (i < 0) {
        tip.style.display = "none";
        return;
      }
      const n = N[i];
      tip.replaceChildren(el("b", { text: n.type + (n.invalidated ? " · invalidated" : "") }), n.label);
      const box = wrap.getBoundingClientRect();
      tip.style.display = "block";
      const x = ev.clientX - box.left + 12;
      tip.style.left = Math.min(x, box.width - tip.offsetWidth - 4) + "px";
      tip.style.top = ev.clientY - box.top + 14 + "px";
    });
    svg.addEventListener("mouseleave", () => (tip.style.display = "none"));
    svg.addEventListener("click", (ev) => {
      const i = indexOf(ev.target);
      if (selected) selected.classList.remove("sel");
      selected = null;
      highlight.setAttribute("d", "");
      highlight.setAttribute("data-count", "0");
      if (i < 0) {
        svg.classList.remove("focus");
        info.className = "nodeinfo muted";
        info.replaceChildren("Click a node to list its edges.");
        return;
      }
      if (adjacency === null) {
        adjacency = N.map(() => []);
        E.forEach((e, j) => {
          adjacency[e.s].push(j);
          adjacency[e.t].push(j);
        });
      }
      selected = ev.target;
      selected.classList.add("sel");
      svg.classList.add("focus");
      const lit = adjacency[i];
      highlight.setAttribute("d", lit.map((j) => segment(E[j])).join(""));
      highlight.setAttribute("data-count", String(lit.length));
      const n = N[i];
      const list = el("ul");
      for (const j of lit.slice(0, 200)) {
        const e = E[j];
        const out = e.s === i;
        const other = N[out ? e.t : e.s];
        list.append(el("li", null, el("code", { text: out ? "-[" + e.type + "]->" : "<-[" + e.type + "]-" }), " ", swatch(other.type), other.label, e.live ? null : el("span", { class: "muted", text: " (invalidated)" })));
      }
      const shown = lit.length < n.degree || g.sampled ? fmt(lit.length) + " drawn of " + fmt(n.degree) + " live edges" : fmt(lit.length) + " edges";
      info.className = "nodeinfo";
      info.replaceChildren(
        el("h3", null, swatch(n.type), n.label),
        el("div", { class: "muted" }, el("code", { text: n.id }), " · " + n.type + (n.invalidated ? " · invalidated" : " · live") + " · " + shown),
        lit.length ? list : el("div", { class: "muted", text: "no drawn edge" })
      );
    });
  }

  /* The plan's band along the panel's foot: a shaded strip under its pinned nodes, one label per
     task (text set through textContent, like every other label). */
  function planBand(svg, g) {
    const ns = svg.namespaceURI;
    const band = document.createElementNS(ns, "g");
    band.setAttribute("class", "band");
    const rect = document.createElementNS(ns, "rect");
    for (const [k, v] of [["x", 0], ["y", g.plan_band.top], ["width", g.width], ["height", g.height - g.plan_band.top]]) rect.setAttribute(k, String(Number(v)));
    band.append(rect);
    for (const label of g.plan_band.labels) {
      const t = document.createElementNS(ns, "text");
      t.setAttribute("class", "tasklabel");
      t.setAttribute("x", String(Number(label.x)));
      t.setAttribute("y", String(Number(label.y)));
      t.setAttribute("font-size", String(Number(g.plan_band.label_size)));
      t.setAttribute("data-task", label.task);
      t.textContent = label.text;
      band.append(t);
    }
    svg.insertBefore(band, svg.firstChild);
  }

  /* -- hops, traffic, tokens, dead ends ---------------------------------------------------- */
  function hops(d) {
    const h = d.hops;
    const target = body("p-hops");
    if (!h.answered) {
      target.append(empty("no answered walk yet: ask the graph something"));
      return;
    }
    const top = Math.max(1, ...h.bins.map((b) => b.walks));
    const bars = el("div", { class: "bars" });
    const axis = el("div", { class: "axis" });
    for (const b of h.bins) {
      bars.append(el("div", { class: "col" }, el("div", { class: "num", text: fmt(b.walks) }), el("div", { class: "bar", style: "height:" + (100 * b.walks) / top + "%" })));
      axis.append(el("span", { text: b.hops + (b.hops === 1 ? " hop" : " hops") }));
    }
    target.append(bars, axis, el("div", { class: "note", text: fmt(h.answered) + " answered of " + fmt(h.walks) + " walks · hop budget " + h.hop_budget }));
  }

  function hrow(label, value, top, bad, title) {
    const fill = el("div", { class: "fill" + (bad ? " bad" : ""), style: "width:" + (top ? (100 * value) / top : 0) + "%" });
    return el("div", { class: "hrow" + (value ? "" : " muted"), title: title || null }, el("span", { class: "k", text: label }), el("div", { class: "track" }, fill), el("span", { class: "n", text: fmt(value) }));
  }

  function traffic(d) {
    const t = d.traffic;
    const target = body("p-traffic");
    const rows = t.types.slice().sort((a, b) => b.traversals - a.traversals || b.edges - a.edges);
    const top = Math.max(0, ...rows.map((r) => r.traversals));
    for (const r of rows) target.append(hrow(r.type, r.traversals, top, false, fmt(r.edges) + " edges of this type"));
    target.append(el("div", { class: "note", text: fmt(t.total) + " traversals in all" + (t.total ? "" : ": no walk has followed an edge yet") }));
  }

  function tokens(d) {
    const t = d.tokens;
    const target = body("p-tokens");
    if (!t.baseline) {
      target.append(empty("no flat baseline: the walk is compared with flat top-k over the bundled corpus, which this graph was not built from"));
      return;
    }
    if (!t.answered) {
      target.append(empty("no answered walk yet"));
      return;
    }
    target.append(
      el("div", { class: "big", text: pct(t.median_ratio) }),
      el("div", { class: "muted", style: "font-size:12px;margin-bottom:8px" }, "median path/flat over " + fmt(t.answered) + " answered walks: " + fmt(t.median_tokens) + " tokens against " + fmt(t.median_flat_tokens) + " for flat top-" + t.flat_k)
    );
    const top = Math.max(...t.walks.map((w) => w.flat_tokens));
    for (const w of t.walks) {
      const lg = el("div", { class: "lg" }, el("div", { class: "f", style: "width:" + (100 * w.flat_tokens) / top + "%" }), el("div", { class: "w", style: "width:max(2px," + (100 * w.tokens) / top + "%)" }));
      target.append(
        el(
          "div",
          { class: "tok", title: w.question + "\n→ " + w.answer },
          el("span", { class: "qq", text: w.question }),
          lg,
          el("span", { class: "fig", text: fmt(w.tokens) + " vs " + fmt(w.flat_tokens) + " tokens · " + pct(w.ratio) + " · " + w.hops + (w.hops === 1 ? " hop" : " hops") + " · asked ×" + w.count })
        )
      );
    }
  }

  function deadEnds(d) {
    const t = d.dead_ends;
    const target = body("p-deadends");
    const top = Math.max(0, ...t.reasons.map((r) => r.count));
    for (const r of t.reasons) {
      target.append(hrow(r.reason.replace(/_/g, " "), r.count, top, true, r.reason));
      if (r.example) target.append(el("div", { class: "example" }, "e.g. “" + r.example.question + "” — " + r.example.detail));
    }
    target.append(el("div", { class: "note", text: fmt(t.total) + " dead ends in " + fmt(t.walks) + " walks" }));
  }

  /* -- build ------------------------------------------------------------------------------- */
  function build(d) {
    const target = body("p-build");
    if (!d.build) {
      target.append(empty("a saved session keeps no build report: its graph was loaded from generation " + d.source.generation + ", not built here"));
      return;
    }
    const grid = el("div", { class: "stages" });
    for (const s of d.build.stages) {
      const detail = Object.entries(s.detail).map(([k, v]) => k.replace(/_/g, " ") + " " + fmt(v)).join(" · ");
      const reasons = el("ul");
      for (const [reason, n] of Object.entries(s.drop_reasons).sort((a, b) => b[1] - a[1]).slice(0, 3)) reasons.append(el("li", { text: fmt(n) + " × " + reason }));
      grid.append(
        el(
          "div",
          { class: "stage" },
          el("div", { class: "name", text: s.name }),
          el("div", { class: "adm", text: fmt(s.admitted) }),
          el("div", { class: "detail", text: "admitted" + (detail ? " · " + detail : "") }),
          el("div", { class: "drp" + (s.dropped ? "" : " zero"), text: fmt(s.dropped) + " dropped" }),
          s.dropped ? reasons : null
        )
      );
    }
    target.append(grid);
  }

  /* -- execution --------------------------------------------------------------------------- */
  /* A round's Prefect flow runs, linked when the export knows the UI; a round that recorded none
     ran in-process and says so (a link there would lead nowhere). */
  function roundRuns(r, prefect) {
    const where = el("div", { class: "runs" });
    if (!r.flow_runs.length) {
      where.append(el("span", { class: "inproc", text: "in-process · no Prefect flow run" }));
      return where;
    }
    for (const run of r.flow_runs) {
      const label = "Prefect " + (run.part === "run" ? "" : run.part + " ") + "flow run " + run.id.slice(0, 8);
      const url = typeof run.url === "string" && /^https?:\/\//i.test(run.url) ? run.url : null; // never javascript:
      if (url) where.append(el("a", { class: "flowrun", href: url, target: "_blank", rel: "noopener", title: run.id, text: label + " ↗" }));
      else where.append(el("span", { class: "flowrun nolink", title: run.id + ": " + prefect.ui_source, text: label + " (no UI: " + prefect.ui_source + ")" }));
    }
    return where;
  }

  /* One task in one round: its state, and the worker key that round ran it with (a cached task's
     key is the one whose result stood; a repair names the key it moved the task onto). */
  function roundCell(cell, round) {
    const others = cell.events.filter((e) => e !== cell.state);
    let key = null;
    if (cell.worker_key) {
      const from = cell.key_from_round === null ? "" : " · from round " + cell.key_from_round;
      key = el("code", { class: "key", text: cell.worker_key + from });
    } else if (cell.repaired_to) key = el("code", { class: "key", text: "→ " + cell.repaired_to });
    return el(
      "td",
      { title: cell.events.join(", ") || "no event", "data-round": round },
      el("span", { class: "st " + (cell.state ? word(cell.state) : "none"), text: cell.state || "—" }),
      others.length ? el("span", { class: "ev", text: "+ " + others.join(", ") }) : null,
      key
    );
  }

  function execution(d) {
    const x = d.execution;
    const target = body("p-execution");
    if (!x) {
      target.append(empty("this graph holds no execution plan: `contextmesh session save` records one"));
      return;
    }
    const left = el("div", { class: "sub" });
    const layers = el("div", { class: "layers" });
    x.layers.forEach((layer, i) => {
      if (i) layers.append(el("span", { class: "arrow", text: "→" }));
      layers.append(el("div", { class: "layer" }, el("div", { class: "ln", text: "layer " + (i + 1) }), ...layer.map((t) => el("span", { class: "tk", text: t }))));
    });
    left.append(el("h3", { text: "plan " + x.plan + " · " + x.layers.length + " layers · round " + x.round }), layers);
    const head = el("tr", null, el("th", { text: "task" }));
    for (const r of x.rounds) head.append(el("th", { class: "round", "data-round": r.round }, el("div", { text: "round " + r.round + " · " + r.kind }), roundRuns(r, x.prefect)));
    head.append(el("th", { text: "now" }));
    const tb = el("tbody");
    x.tasks.forEach((task, i) => {
      const row = el("tr", { "data-task": task.name }, el("td", null, el("code", { text: task.name })));
      for (const r of x.rounds) row.append(roundCell(r.cells[i], r.round));
      const now = task.blocked ? "blocked" : task.state;
      row.append(el("td", { class: "now", title: task.blocked || task.assumes }, el("span", { class: "st " + word(now), text: now }), el("code", { class: "key", text: task.worker_key || "callable" })));
      tb.append(row);
    });
    left.append(el("table", { class: "rounds" }, el("thead", null, head), tb));
    for (const r of x.rounds) {
      if (!r.notes.length) continue;
      const det = el("details", null, el("summary", { text: "round " + r.round + ": " + r.notes.length + " ledger entries with no task" }));
      const ul = el("ul");
      for (const n of r.notes) ul.append(el("li", { class: "mono", text: n }));
      det.append(ul);
      left.append(det);
    }
    const right = el("div", { class: "sub" });
    const rc = x.receipt;
    if (rc) {
      const list = el("ol");
      for (const f of rc.fallen) list.append(el("li", null, f.type ? swatch(f.type) : null, f.label || f.id, el("span", { class: "chain", text: f.chain })));
      right.append(
        el("h3", { text: "last disproof · ledger entry " + rc.seq + " · round " + rc.round }),
        el(
          "div",
          { class: "receipt" },
          el("div", { class: "rs" }, "“" + rc.ground.statement + "” rejected"),
          el("div", { class: "muted" }, "task ", el("code", { text: rc.task }), " · auditor ", el("code", { text: rc.auditor || "callable" })),
          el("div", { text: rc.reason }),
          el("div", { style: "margin-top:6px;font-weight:600", text: fmt(rc.fallen.length) + " fell (with their reason chains) · " + fmt(rc.preserved_count) + " preserved · " + fmt(rc.fallen_edges) + " edges fell" }),
          list
        )
      );
    } else {
      right.append(el("h3", { text: "last disproof" }), empty("no assumption of this plan has been disproved"));
    }
    const l = x.ledger;
    const events = el("div", { class: "signals" });
    for (const e of l.events) events.append(chip(e.event + " " + fmt(e.count)));
    right.append(
      el(
        "div",
        { class: "head" },
        el("h3", { text: "run ledger" }),
        el("div", null, fmt(l.entries) + " entries, SHA-256 hash-chained · ", chip(l.verified ? "chain verifies" : "chain does not verify", l.verified ? "ok" : "bad")),
        el("div", { style: "margin-top:4px" }, "head ", el("code", { text: l.head })),
        events
      )
    );
    const det = el("details", null, el("summary", { text: "the last " + l.recent.length + " of " + l.entries + " ledger entries" }));
    const lt = el("table", { class: "ledger" }, el("thead", null, el("tr", null, ...["#", "round", "event", "task", "detail"].map((h) => el("th", { text: h })))));
    const lb = el("tbody");
    for (const e of l.recent) lb.append(el("tr", { title: e.digest }, el("td", { text: e.seq }), el("td", { text: e.round }), el("td", null, el("span", { class: "st " + word(e.event), text: e.event })), el("td", null, el("code", { text: e.task || "—" })), el("td", { text: e.detail })));
    lt.append(lb);
    det.append(lt);
    right.append(det);
    target.append(el("div", { class: "exgrid" }, left, right));
  }

  function badges(d) {
    const s = d.source;
    const where = document.getElementById("badges");
    if (s.kind === "demo") where.append(chip("bundled demo · " + s.walk_rounds + " walk rounds"));
    else where.append(chip("session generation " + s.generation + (s.corpus ? " · " + s.corpus : "") + " · " + s.walk_rounds + " walk rounds asked in memory"));
    where.append(" ", chip("health " + d.header.health.status, d.header.health.status));
    document.getElementById("footer").append(" · payload " + d.schema + " v" + d.version);
  }

  async function main() {
    let data;
    try {
      data = await load();
    } catch (err) {
      banner(String(err.message || err));
      document.body.dataset.rendered = "no-data";
      return;
    }
    const steps = [badges, header, graph, hops, traffic, tokens, deadEnds, build, execution];
    for (const step of steps) {
      await step(data);
      await tick();
    }
    requestAnimationFrame(() => {
      window.__cm.rendered = performance.now();
      document.body.dataset.rendered = "true";
    });
  }

  main();
})();
