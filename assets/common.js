// common.js: helpers shared by the dashboard pages (no build step, no dependencies).
"use strict";
globalThis.kvlabUI = (() => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  // bytes writes a byte count in binary units.
  const bytes = (n) => {
    if (!(n >= 0)) return "–";
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(n >= 100 ? 0 : n >= 10 ? 1 : 2)) + " " + units[i];
  };
  // wsURL is the websocket URL of a path on this server.
  const wsURL = (path) => (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  // el makes an element with a class and text.
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  // randomID is a session id: 16 random hex digits.
  const randomID = () => Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
  // store reads and writes JSON in localStorage, ignoring quota and privacy-mode errors.
  const store = {
    get(key, def) { try { const v = localStorage.getItem(key); return v === null ? def : JSON.parse(v); } catch { return def; } },
    set(key, v) { try { localStorage.setItem(key, JSON.stringify(v)); } catch { /* full or disabled */ } },
    del(key) { try { localStorage.removeItem(key); } catch { /* disabled */ } },
  };
  // socket keeps a websocket open, reconnecting with backoff, and hands each JSON message to
  // onMessage; onState receives "open", "closed" or a close reason.
  function socket(path, onMessage, onState) {
    let ws = null, delay = 250, stopped = false;
    const connect = () => {
      ws = new WebSocket(wsURL(path));
      ws.onopen = () => { delay = 250; onState("open"); };
      ws.onmessage = (ev) => { try { onMessage(JSON.parse(ev.data)); } catch (e) { console.error(e); } };
      ws.onclose = (ev) => {
        onState(ev.reason ? "closed: " + ev.reason : "closed", ev.code);
        if (!stopped) setTimeout(connect, delay);
        delay = Math.min(delay * 2, 5000);
      };
    };
    connect();
    return {
      send(obj) {
        if (!ws || ws.readyState !== WebSocket.OPEN) return false;
        ws.send(JSON.stringify(obj));
        return true;
      },
      ready() { return ws && ws.readyState === WebSocket.OPEN; },
      close() { stopped = true; if (ws) ws.close(); },
    };
  }
  // csrfHeaders are the headers a state-changing fetch sends: the login cookie's CSRF token
  // (servers with an API key require it) and a JSON content type.
  const csrfHeaders = () => {
    const m = document.cookie.match(/(?:^|;\s*)kvlab_csrf=([0-9a-f]+)/);
    const h = { "Content-Type": "application/json" };
    if (m) h["X-CSRF-Token"] = m[1];
    return h;
  };
  return { bytes, wsURL, el, randomID, store, socket, csrfHeaders };
})();
