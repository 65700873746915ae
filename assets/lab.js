// lab.js runs /lab: a live A/B over /ws/lab. The f16 reference writes its greedy continuation;
// every arm is fed the same tokens. Each position arrives as one message; texts, the table and
// the SVG charts are redrawn at most once per animation frame.
"use strict";
(() => {
  const form = document.getElementById("lab-form");
  if (!form) return; // no models: the page shows how to add one
  const ui = globalThis.kvlabUI;
  const $ = (id) => document.getElementById(id);
  const armsList = $("arms"), startBtn = $("lab-start"), stopBtn = $("lab-stop"), state = $("lab-state");
  const prefill = $("lab-prefill"), columns = $("columns"), statsBody = document.querySelector("#arm-stats tbody");
  const klSvg = $("live-kl"), topSvg = $("live-top1"), saved = $("lab-saved"), conn = $("lab-conn");
  const palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"];
  const SVGNS = "http://www.w3.org/2000/svg";

  let running = false;
  let run = null; // {arms, cols, pending, rows, kl[][], top[][], last}

  const setState = (s, text) => { state.dataset.state = s; state.textContent = text || s; };

  // Arms: rows of a text input (with the formats datalist) and a remove button.
  function renumber() {
    Array.from(armsList.children).forEach((li, i) => {
      li.querySelector(".swatch").style.background = palette[i % palette.length];
      li.querySelector("input").setAttribute("aria-label", "arm " + (i + 1) + " KV format");
    });
  }
  function addArm(value) {
    const li = ui.el("li", "arm-row");
    li.appendChild(ui.el("span", "swatch"));
    const input = ui.el("input", "arm");
    input.type = "text"; input.required = true; input.value = value || "";
    input.setAttribute("list", "formats");
    li.appendChild(input);
    const rm = ui.el("button", "remove-arm secondary", "✕");
    rm.type = "button"; rm.setAttribute("aria-label", "remove this arm");
    li.appendChild(rm);
    armsList.appendChild(li);
    renumber();
    input.focus();
  }
  $("add-arm").addEventListener("click", () => { if (armsList.children.length < 8) addArm(""); });
  armsList.addEventListener("click", (ev) => {
    if (ev.target.classList.contains("remove-arm") && armsList.children.length > 1) {
      ev.target.closest("li").remove();
      renumber();
    }
  });

  function column(title, color) {
    const div = ui.el("div", "column");
    const h = ui.el("h3");
    if (color) { const sw = ui.el("span", "swatch"); sw.style.background = color; h.appendChild(sw); }
    h.appendChild(document.createTextNode(title));
    div.appendChild(h);
    const pre = ui.el("pre", "text");
    div.appendChild(pre);
    div.dataset.tokens = "0";
    columns.appendChild(div);
    return { div, pre, pending: [] };
  }

  function begin(m) {
    const empty = $("lab-empty");
    if (empty) empty.hidden = true;
    $("arm-stats").hidden = false;
    $("lab-charts").hidden = false;
    columns.textContent = "";
    statsBody.textContent = "";
    saved.textContent = "";
    const cols = [column("f16 reference (own top-1)", null)];
    cols[0].div.dataset.arm = "reference";
    const rows = [];
    m.arms.forEach((a, i) => {
      const c = column(a.name + " (own top-1)", palette[i % palette.length]);
      c.div.dataset.arm = String(i);
      cols.push(c);
      const tr = ui.el("tr");
      tr.dataset.arm = a.name;
      const th = ui.el("th");
      const sw = ui.el("span", "swatch"); sw.style.background = palette[i % palette.length];
      th.appendChild(sw); th.appendChild(document.createTextNode(a.name));
      tr.appendChild(th);
      const cells = {};
      for (const k of ["mean", "top1", "last", "tps", "kv", "bpt"]) { cells[k] = ui.el("td"); cells[k].dataset.k = k; tr.appendChild(cells[k]); }
      cells.kv.textContent = ui.bytes(a.kv_bytes);
      cells.bpt.textContent = a.bytes_per_token.toFixed(1);
      statsBody.appendChild(tr);
      rows.push(cells);
    });
    run = { arms: m.arms, cols, rows, kl: m.arms.map(() => []), top: m.arms.map(() => []), last: null, n: m.n };
  }

  let frame = 0;
  const schedule = () => { if (!frame) frame = requestAnimationFrame(draw); };
  function draw() {
    frame = 0;
    if (!run) return;
    for (const c of run.cols) {
      if (!c.pending.length) continue;
      const frag = document.createDocumentFragment();
      for (const p of c.pending) frag.appendChild(p);
      c.div.dataset.tokens = String(Number(c.div.dataset.tokens) + c.pending.length);
      c.pending = [];
      c.pre.appendChild(frag);
    }
    if (run.last) {
      run.last.arms.forEach((a, i) => {
        const r = run.rows[i];
        r.mean.textContent = a.mean_kl.toPrecision(4);
        r.top1.textContent = (100 * a.top1_rate).toFixed(1) + " %";
        r.last.textContent = a.kl.toPrecision(3);
        r.tps.textContent = a.tps ? a.tps.toFixed(1) : "–";
      });
    }
    chart(klSvg, run.kl, null);
    chart(topSvg, run.top, 1);
  }

  // chart draws one polyline per arm: the running mean of each series.
  function chart(svg, series, fixedMax) {
    const W = 480, H = 200, L = 48, R = 8, T = 8, B = 22;
    svg.textContent = "";
    const means = series.map((s) => { let sum = 0; return s.map((v, i) => (sum += v) / (i + 1)); });
    const n = Math.max(2, run.n || 2);
    let hi = fixedMax || 0;
    if (!fixedMax) for (const m of means) for (const v of m) hi = Math.max(hi, v);
    if (!(hi > 0)) hi = 1e-6;
    const x = (i) => L + (W - L - R) * i / (n - 1);
    const y = (v) => T + (H - T - B) * (1 - v / hi);
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(SVGNS, tag);
      for (const k in attrs) e.setAttribute(k, attrs[k]);
      if (text !== undefined) e.textContent = text;
      svg.appendChild(e);
      return e;
    };
    add("rect", { class: "frame", x: L, y: T, width: W - L - R, height: H - T - B });
    for (const f of [0, 0.5, 1]) {
      const v = hi * f;
      add("line", { class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v) });
      add("text", { class: "tick", x: L - 4, y: y(v) + 4, "text-anchor": "end" }, fixedMax ? (100 * v).toFixed(0) + "%" : v.toPrecision(2));
    }
    add("text", { class: "tick", x: L, y: H - 6 }, "0");
    add("text", { class: "tick", x: W - R, y: H - 6, "text-anchor": "end" }, String(n - 1));
    means.forEach((m, i) => {
      if (!m.length) return;
      add("polyline", { fill: "none", stroke: palette[i % palette.length], "stroke-width": 2,
        points: m.map((v, j) => x(j).toFixed(1) + "," + y(v).toFixed(1)).join(" ") });
    });
  }

  function step(s) {
    if (!run) return;
    run.cols[0].pending.push(document.createTextNode(s.ref_text));
    s.arms.forEach((a, i) => {
      const span = ui.el("span", a.top1 ? "hit" : "miss", a.text);
      if (!a.top1) span.title = "reference: " + JSON.stringify(s.text) + " · KL " + a.kl.toPrecision(3);
      run.cols[i + 1].pending.push(span);
      run.kl[i].push(a.kl);
      run.top[i].push(a.top1 ? 1 : 0);
    });
    run.last = s;
    setState("running", "position " + (s.i + 1) + " of " + run.n);
    schedule();
  }

  function end(stateName, text) {
    running = false;
    startBtn.disabled = false;
    stopBtn.disabled = true;
    draw();
    setState(stateName, text);
  }

  const sock = ui.socket("/ws/lab", (m) => {
    switch (m.type) {
      case "queued": setState("queued", "queued: waiting for a free slot"); break;
      case "ab_start": begin(m); setState("prefill", "prefilling " + m.prompt_tokens + " prompt tokens × " + (m.arms.length + 1) + " caches" + (m.device ? " on " + m.device : "")); break;
      case "prefill": prefill.max = m.total; prefill.value = m.done; break;
      case "ab_step": step(m.step); break;
      case "ab_done": {
        const r = m.run;
        if (r.id) {
          saved.textContent = "";
          saved.appendChild(document.createTextNode("Saved as "));
          const a = ui.el("a", "", "run #" + r.id);
          a.href = "/runs/" + r.id;
          a.id = "run-link";
          saved.appendChild(a);
          saved.appendChild(document.createTextNode(" in the run history."));
        }
        end(r.stopped ? "stopped" : "done", (r.stopped ? "stopped after " : "done: ") + r.tokens + " positions");
        break;
      }
      case "error": end("error", "error: " + m.error); break;
    }
  }, (s) => {
    conn.textContent = s === "open" ? "connected" : "disconnected (" + s + "), reconnecting…";
    conn.dataset.state = s === "open" ? "open" : "closed";
    if (s !== "open" && running) end("error", "connection lost");
  });

  function start() {
    if (running) return;
    const arms = Array.from(armsList.querySelectorAll("input.arm"), (i) => i.value.trim()).filter(Boolean);
    if (!arms.length) { setState("error", "add at least one arm"); return; }
    if (!sock.ready()) { setState("error", "not connected to the server"); return; }
    running = true;
    startBtn.disabled = true;
    stopBtn.disabled = false;
    prefill.value = 0;
    setState("starting", "starting…");
    const text = $("lab-prompt").value, textMode = $("lab-textmode").checked;
    sock.send({
      type: "start", model: $("lab-model").value, prompt: textMode ? "" : text, text: textMode ? text : "", arms,
      n: Number($("lab-n").value) || 64, window: Number($("lab-window").value) || 0, sinks: Number($("lab-sinks").value) || 0,
    });
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); start(); });
  stopBtn.addEventListener("click", () => { if (running) { sock.send({ type: "stop" }); setState("stopping", "stopping…"); } });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); start(); }
    if (ev.key === "Escape" && running) stopBtn.click();
  });
})();
