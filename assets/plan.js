// plan.js runs the /plan page: it loads the planner compiled to WebAssembly (calc.wasm) and
// recomputes the results in the browser on every input change, with no server round trip, and
// reads a dropped GGUF file's header (only the header, through File.slice) to plan for it.
"use strict";
(() => {
  const form = document.getElementById("plan-form");
  const results = document.getElementById("results");
  const status = document.getElementById("calc-status");
  const drop = document.getElementById("drop-zone");
  const dropInput = document.getElementById("gguf-file");
  const dropMsg = document.getElementById("drop-message");
  const preset = document.getElementById("preset");
  const custom = document.getElementById("custom-shape");
  let ready = false;

  // entries are the form's non-empty fields as [name, value] pairs: what kvlab.plan reads.
  const entries = () =>
    Array.from(new FormData(form), ([k, v]) => [k, String(v)]).filter(([, v]) => v.trim() !== "");

  const syncCustom = () => { custom.hidden = preset.value !== "custom"; };

  // launchOpen keeps the launch commands shown across recomputes once the user opened them.
  let launchOpen = false;
  const syncLaunch = () => {
    const box = document.getElementById("launch");
    const btn = document.getElementById("launch-toggle");
    if (!box || !btn) return;
    box.hidden = !launchOpen;
    btn.setAttribute("aria-expanded", String(launchOpen));
  };
  results.addEventListener("click", (ev) => {
    const t = ev.target;
    if (!(t instanceof Element)) return;
    if (t.id === "launch-toggle") {
      launchOpen = !launchOpen;
      syncLaunch();
    } else if (t.classList.contains("copy") && t.dataset.copy) {
      const done = () => { t.textContent = "copied"; setTimeout(() => { t.textContent = "copy"; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(t.dataset.copy).then(done, () => { t.textContent = "select and copy"; });
    }
  });

  function recompute() {
    syncCustom();
    if (!ready) return;
    const e = entries();
    const r = globalThis.kvlab.plan(e);
    results.innerHTML = r.html || "";
    syncLaunch();
    results.dataset.source = "wasm";
    results.dataset.state = r.error ? "error" : "ok";
    results.dataset.seq = String(Number(results.dataset.seq || 0) + 1);
    const qs = new URLSearchParams(e).toString();
    history.replaceState(null, "", qs ? "?" + qs : location.pathname);
    updateLabLink();
  }

  // updateLabLink points "measure in the lab" at the current choice: the policy's pick first,
  // then the other checked formats, as the lab's arm set.
  function updateLabLink() {
    const link = document.getElementById("to-lab");
    if (!link) return;
    const arms = [];
    const pick = document.getElementById("policy-choice");
    if (pick && pick.textContent.trim()) arms.push(pick.textContent.trim());
    for (const cb of form.querySelectorAll("input[name=formats]:checked")) {
      if (!arms.some((a) => same(a, cb.value))) arms.push(cb.value);
    }
    link.href = "/lab?" + new URLSearchParams({ arms: arms.slice(0, 8).join(",") }).toString();
  }
  // same compares two pairs, "q8_0" and "q8_0/q8_0" being one.
  const same = (a, b) => norm(a) === norm(b);
  const norm = (p) => (p.includes("/") ? p : p + "/" + p);

  form.addEventListener("input", recompute);
  form.addEventListener("change", recompute);
  form.addEventListener("submit", (ev) => { if (ready) { ev.preventDefault(); recompute(); } });
  syncCustom();

  const kib = (n) => (n / 1024).toFixed(0) + " KiB";
  const size = (n) => n >= 1 << 30 ? (n / (1 << 30)).toFixed(2) + " GiB" : n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + " MiB" : kib(n);

  async function loadFile(file) {
    if (!ready) {
      dropMsg.textContent = "The offline calculator is not loaded, so the file cannot be read here.";
      drop.dataset.state = "error";
      return;
    }
    dropMsg.textContent = "Reading the header of " + file.name + "…";
    drop.dataset.state = "reading";
    const r = await globalThis.kvlab.readGGUF(file);
    if (r.error) {
      dropMsg.textContent = r.error;
      drop.dataset.state = "error";
      return;
    }
    let opt = Array.from(preset.options).find((o) => o.value === r.key);
    if (!opt) {
      opt = new Option(r.name + " (" + file.name + ")", r.key);
      preset.add(opt, 0);
    }
    preset.value = r.key;
    const notes = (r.notes || []).join(" ");
    dropMsg.textContent = r.name + ": read " + size(r.read) + " of " + size(file.size) +
      " (the header only; the file never left this browser). " + notes;
    drop.dataset.state = "ok";
    recompute();
  }

  drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (ev) => {
    ev.preventDefault();
    drop.classList.remove("over");
    const f = ev.dataTransfer && ev.dataTransfer.files[0];
    if (f) loadFile(f);
  });
  dropInput.addEventListener("change", () => { if (dropInput.files[0]) loadFile(dropInput.files[0]); });

  globalThis.kvlabReady = () => {
    ready = true;
    status.dataset.state = "ready";
    status.textContent = "Offline calculator loaded (" + globalThis.kvlab.version +
      "): every change is computed in this browser; the page keeps working without the server.";
    recompute();
  };

  const go = new Go();
  const url = status.dataset.wasm;
  const start = (resp) => WebAssembly.instantiateStreaming(resp, go.importObject)
    .catch(() => fetch(url).then((r) => r.arrayBuffer()).then((b) => WebAssembly.instantiate(b, go.importObject)));
  start(fetch(url))
    .then((m) => go.run(m.instance))
    .catch((err) => {
      status.dataset.state = "failed";
      status.textContent = "Could not load the offline calculator (" + err + "). The results come from the server: press Plan to recompute.";
    });
})();
