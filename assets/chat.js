// chat.js runs /chat: a conversation streamed over /ws/chat. Tokens are buffered and drawn once
// per animation frame (not one DOM update per token); the conversation is kept in localStorage
// so that it survives a reload, and the server keeps it for a while under the same session id.
"use strict";
(() => {
  const root = document.getElementById("chat");
  const form = document.getElementById("composer");
  if (!root || !form) return; // no models: the page shows how to add one
  const ui = globalThis.kvlabUI;
  const $ = (id) => document.getElementById(id);
  const messagesEl = $("messages"), prompt = $("prompt"), sendBtn = $("send"), stopBtn = $("stop");
  const model = $("model"), state = $("gen-state"), connState = $("conn-state");
  const prefill = $("prefill"), prefillText = $("prefill-text"), ntok = $("ntok"), tps = $("tps");
  const ctxMeter = $("ctx-meter"), ctxText = $("ctx-text"), kvFormat = $("kv-format"), kvBytes = $("kv-bytes");

  const SESSION_KEY = "kvlab.chat.session";
  // SENT_KEY names the session that has sent a message, so that the server may keep it: only
  // such a session is asked back from the server (a fresh one would be a 404).
  const SENT_KEY = "kvlab.chat.session.sent";
  let session = ui.store.get(SESSION_KEY, null);
  if (!session) { session = ui.randomID(); ui.store.set(SESSION_KEY, session); }
  const convKey = () => "kvlab.chat." + session;
  let conv = ui.store.get(convKey(), { model: "", messages: [] });
  if (conv.model && Array.from(model.options).some((o) => o.value === conv.model)) model.value = conv.model;

  // The reply being generated: its element, the text drawn so far and the text waiting.
  let live = null;
  let generating = false;

  const setState = (s, text) => { state.dataset.state = s; state.textContent = text || s; };

  // markdown draws a reply's markdown (marked, vendored) as HTML sanitized by DOMPurify
  // (vendored), so that model output cannot inject script or markup; without the libraries
  // the text is shown as it is.
  function markdown(el, text) {
    el.dataset.raw = text;
    if (globalThis.marked && globalThis.DOMPurify && text) {
      // No images, forms or styles either: a reply cannot make the page fetch or ask anything.
      el.innerHTML = globalThis.DOMPurify.sanitize(globalThis.marked.parse(text, { gfm: true, breaks: true }), {
        FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math", "video", "audio"],
        FORBID_ATTR: ["style"],
      });
      el.classList.add("md");
    } else {
      el.textContent = text;
    }
  }

  function bubble(role, text) {
    const div = ui.el("div", "msg " + role);
    div.dataset.role = role;
    div.appendChild(ui.el("div", "who", role === "user" ? "you" : role));
    const t = ui.el("div", "text", role === "assistant" ? "" : text);
    div.appendChild(t);
    if (role === "assistant") {
      markdown(t, text);
      const copy = ui.el("button", "copy secondary", "copy");
      copy.type = "button";
      copy.addEventListener("click", () => {
        const raw = t.dataset.raw || t.textContent;
        if (navigator.clipboard) navigator.clipboard.writeText(raw).then(() => { copy.textContent = "copied"; setTimeout(() => { copy.textContent = "copy"; }, 1500); }, () => {});
      });
      div.appendChild(copy);
    }
    messagesEl.appendChild(div);
    return div;
  }
  function renderAll() {
    messagesEl.textContent = "";
    for (const m of conv.messages) {
      const b = bubble(m.role, m.content);
      if (m.note) b.appendChild(ui.el("div", "note", m.note));
    }
    messagesEl.scrollTop = messagesEl.scrollHeight;
  }
  const save = () => { conv.model = model.value; ui.store.set(convKey(), conv); listConversations(); };

  // The conversation list: every conversation kept in this browser, newest session first by
  // storage order, titled by its first message; a click switches to it.
  const listEl = $("conv-list");
  function listConversations() {
    if (!listEl) return;
    const skip = new Set(["session", "session.sent", "system"]);
    const items = [];
    try {
      for (let i = 0; i < localStorage.length; i++) {
        const k = localStorage.key(i);
        if (!k || !k.startsWith("kvlab.chat.") || skip.has(k.slice(11))) continue;
        const c = ui.store.get(k, null);
        const first = c && c.messages && c.messages.find((m) => m.role === "user");
        if (!first && k.slice(11) !== session) continue;
        items.push({ id: k.slice(11), title: first ? first.content.slice(0, 48) : "(new)", n: c && c.messages ? c.messages.length : 0 });
      }
    } catch { /* storage disabled */ }
    listEl.textContent = "";
    for (const it of items) {
      const li = ui.el("li", it.id === session ? "current" : "");
      const a = ui.el("button", "conv secondary", it.title + (it.n ? " (" + it.n + ")" : ""));
      a.type = "button";
      a.dataset.session = it.id;
      a.addEventListener("click", () => switchTo(it.id));
      li.appendChild(a);
      listEl.appendChild(li);
    }
  }
  function switchTo(id) {
    if (generating || id === session) return;
    session = id;
    ui.store.set(SESSION_KEY, session);
    conv = ui.store.get(convKey(), { model: model.value, messages: [] });
    renderAll();
    syncRegenerate();
    listConversations();
  }
  let saveTimer = 0;
  const saveSoon = () => { if (!saveTimer) saveTimer = setTimeout(() => { saveTimer = 0; save(); }, 400); };

  // Drawing: tokens append to live.pending; one animation frame moves it into the DOM.
  let frame = 0;
  const stats = {};
  function draw() {
    frame = 0;
    if (live && live.pending) {
      live.text += live.pending;
      live.pending = "";
      live.textEl.textContent = live.text;
      live.msg.content = live.text;
      const nearBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 80;
      if (nearBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
      saveSoon();
    }
    if (stats.n !== undefined) ntok.textContent = String(stats.n);
    if (stats.tps) tps.textContent = stats.tps.toFixed(1);
    if (stats.ctx) {
      // The meter reads a fraction of the context, so that its low/high marks (0.7, 0.9) are
      // fractions too: green below 70 %, amber to 90 %, red past it.
      ctxMeter.max = 1; ctxMeter.value = Math.min(1, (stats.used || 0) / stats.ctx);
      ctxMeter.dataset.used = String(stats.used || 0);
      ctxText.textContent = (stats.used || 0) + " / " + stats.ctx;
      if (stats.bpc) kvBytes.textContent = ui.bytes((stats.used || 0) * stats.bpc) + " used of " + ui.bytes(stats.kv);
    }
  }
  const schedule = () => { if (!frame) frame = requestAnimationFrame(draw); };

  function finish(note, stateName) {
    generating = false;
    sendBtn.disabled = false;
    stopBtn.disabled = true;
    if (live) {
      draw();
      markdown(live.textEl, live.text);
      if (note) { live.msg.note = note; live.el.appendChild(ui.el("div", "note", note)); }
      live.el.classList.remove("streaming");
      if (!live.text && stateName === "error") conv.messages.pop();
      live = null;
    }
    save();
    setState(stateName, stateName === "done" ? "done" : undefined);
    syncRegenerate();
    prompt.focus();
  }

  // Regenerate replaces the last reply with a new one to the same conversation.
  const regenBtn = $("regenerate");
  const syncRegenerate = () => {
    const last = conv.messages[conv.messages.length - 1];
    regenBtn.disabled = generating || !last || last.role !== "assistant";
  };
  regenBtn.addEventListener("click", () => {
    if (generating) return;
    const last = conv.messages[conv.messages.length - 1];
    if (!last || last.role !== "assistant") return;
    conv.messages.pop();
    renderAll();
    start();
  });

  // The system prompt is kept in this browser and sent before the conversation.
  const systemEl = $("system-prompt");
  const SYSTEM_KEY = "kvlab.chat.system";
  systemEl.value = ui.store.get(SYSTEM_KEY, "");
  systemEl.addEventListener("input", () => ui.store.set(SYSTEM_KEY, systemEl.value));

  function onMessage(m) {
    switch (m.type) {
      case "queued":
        setState("queued", "queued: waiting for a free slot");
        break;
      case "start":
        setState("prefill", "processing the prompt");
        kvFormat.textContent = m.kv_format;
        Object.assign(stats, { ctx: m.ctx, used: 0, bpc: m.bytes_per_cell, kv: m.kv_bytes, n: 0, tps: 0 });
        prefill.max = 1; prefill.value = 0; prefillText.textContent = m.prompt_tokens + " tokens";
        tps.textContent = "–";
        schedule();
        break;
      case "prefill":
        prefill.max = m.total; prefill.value = m.done;
        prefillText.textContent = m.done + " / " + m.total + " tokens";
        stats.used = m.ctx_used;
        schedule();
        break;
      case "token":
        if (state.dataset.state !== "generating") setState("generating");
        if (live) live.pending += m.text || "";
        stats.n = m.n; stats.used = m.ctx_used;
        if (m.tps) stats.tps = m.tps;
        schedule();
        break;
      case "done": {
        const r = m.result || {};
        if (r.ctx) { stats.ctx = r.ctx; stats.used = r.ctx_used; }
        if (r.decode_tps) stats.tps = r.decode_tps;
        if (r.tokens !== undefined) stats.n = r.tokens;
        if (r.prompt_tokens !== undefined) {
          prefill.max = 1; prefill.value = 1;
          prefillText.textContent = r.prompt_tokens + " tokens (" + (r.cached_tokens || 0) + " cached)";
        }
        const stopped = r.stop === "cancelled";
        const note = stopped ? "stopped after " + (r.tokens || 0) + " tokens" :
          (r.tokens || 0) + " tokens · " + (r.decode_tps ? r.decode_tps.toFixed(1) + " tok/s · " : "") + (r.device ? r.device + " · " : "") + "stop: " + r.stop;
        finish(note, stopped ? "stopped" : "done");
        break;
      }
      case "error":
        if (generating) {
          finish("error: " + m.error, "error");
        }
        setState("error", "error: " + m.error);
        break;
    }
  }

  const sock = ui.socket("/ws/chat", onMessage, (s, code) => {
    connState.textContent = s === "open" ? "connected" : "disconnected (" + s + "), reconnecting…";
    connState.dataset.state = s === "open" ? "open" : "closed";
    if (s !== "open" && generating) finish("connection lost", "error");
  });

  function send() {
    const text = prompt.value.trim();
    if (!text || generating) return;
    if (!sock.ready()) { setState("error", "not connected to the server"); return; }
    conv.messages.push({ role: "user", content: text });
    bubble("user", text);
    start();
  }

  // start asks for a reply to the conversation as it stands.
  function start() {
    if (!sock.ready()) { setState("error", "not connected to the server"); return; }
    const msg = { role: "assistant", content: "" };
    const sys = systemEl.value.trim();
    const history = conv.messages.map(({ role, content }) => ({ role, content }));
    const payload = {
      type: "chat", session, model: model.value,
      messages: sys ? [{ role: "system", content: sys }, ...history] : history,
      max_tokens: Number($("max-tokens").value) || undefined,
      temperature: Number($("temperature").value),
      top_p: Number($("top-p").value),
    };
    conv.messages.push(msg);
    const el = bubble("assistant", "");
    el.classList.add("streaming");
    live = { el, textEl: el.querySelector(".text"), text: "", pending: "", msg };
    prompt.value = "";
    messagesEl.scrollTop = messagesEl.scrollHeight;
    generating = true;
    sendBtn.disabled = true;
    stopBtn.disabled = false;
    regenBtn.disabled = true;
    setState("waiting", "sent");
    save();
    ui.store.set(SENT_KEY, session);
    sock.send(payload);
  }

  function stop() {
    if (generating) { sock.send({ type: "stop" }); setState("stopping", "stopping…"); }
  }

  form.addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  stopBtn.addEventListener("click", stop);
  prompt.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
  });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") stop(); });
  model.addEventListener("change", save);
  $("new-chat").addEventListener("click", () => {
    if (generating) stop();
    // The conversation left stays in the list; an empty one is dropped.
    if (conv.messages.length === 0) ui.store.del(convKey());
    session = ui.randomID();
    ui.store.set(SESSION_KEY, session);
    conv = { model: model.value, messages: [] };
    renderAll();
    listConversations();
    setState("idle");
    prompt.focus();
  });

  // A conversation the browser lost (another browser profile, cleared storage) but the server
  // still keeps is fetched back.
  if (conv.messages.length === 0 && ui.store.get(SENT_KEY, null) === session) {
    fetch("/api/sessions/" + session).then((r) => r.ok ? r.json() : null).then((s) => {
      if (s && s.messages && conv.messages.length === 0) { conv.messages = s.messages; renderAll(); }
    }).catch(() => {});
  }
  // A reply cut short by a reload is kept as it was, marked.
  const last = conv.messages[conv.messages.length - 1];
  if (last && last.role === "assistant" && !last.note) last.note = "interrupted";
  renderAll();
  syncRegenerate();
  listConversations();
})();
