// slackask dev: the page's small script. The server renders every piece of
// HTML with html/template; this script only swaps the regions it sends,
// opens menus and dialogs, and posts actions to /act. It never builds HTML
// from strings: new nodes get their text through textContent or are clones
// of server-rendered ones.
"use strict";
(() => {
  const app = document.getElementById("app");
  const toasts = document.getElementById("toasts");
  const state = { as: "", c: "", thread: "", msg: "" };
  let scrolledTo = ""; // the highlighted message (a permalink's) scrolled into view
  const drafts = new Map(); // "view|block|action" → text typed in a modal
  const dismissed = new Set(); // keys of dismissed ephemeral messages
  const seen = new Map(); // message key → updates count drawn
  const regionHTML = new Map(); // region → the server HTML it shows
  let openMenu = ""; // key of the open menu
  let confirmAction = null; // what the open confirm dialog does on "confirm"
  let refreshing = false;
  let again = false;
  let timer = 0;

  function readQuery(q) {
    const p = new URLSearchParams(q);
    state.as = p.get("as") || "";
    state.c = p.get("c") || "";
    state.thread = p.get("thread") || "";
    state.msg = p.get("msg") || "";
  }
  function query() {
    const p = new URLSearchParams();
    p.set("as", state.as);
    p.set("c", state.c);
    if (state.thread) p.set("thread", state.thread);
    if (state.msg) p.set("msg", state.msg);
    return p.toString();
  }

  // A permalink (?msg=TS) opens the page at its message, once.
  function scrollToHighlight() {
    const h = app.querySelector("article.msg.highlight");
    if (h && scrolledTo !== state.msg) {
      scrolledTo = state.msg;
      h.scrollIntoView({ block: "center" });
    }
  }

  // ---- drawing -------------------------------------------------------

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 30);
  }

  async function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    try {
      do {
        again = false;
        const r = await fetch("/app?" + query(), { cache: "no-store" });
        if (!r.ok) throw new Error("HTTP " + r.status);
        apply(await r.text());
        scrollToHighlight();
      } while (again);
      document.body.classList.remove("offline");
    } catch (e) {
      document.body.classList.add("offline");
    } finally {
      refreshing = false;
      app.dataset.settled = String(Date.now());
    }
  }

  function surfaceKey(el) {
    const view = el.closest("[data-view]");
    if (view) return "view:" + view.dataset.view;
    const msg = el.closest("article.msg");
    return msg ? msg.dataset.key : "";
  }
  function elemKey(el) {
    return surfaceKey(el) + "|" + el.dataset.block + "|" + el.dataset.action;
  }
  function draftKey(input) {
    const form = input.closest("form.modal");
    return (form ? form.dataset.view : "") + "|" + input.dataset.block + "|" + input.dataset.action;
  }

  function apply(html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const list = document.getElementById("messages");
    const main = app.querySelector("[data-region=main]");
    const before = {
      channel: main ? main.dataset.channel : "",
      atBottom: list ? list.scrollHeight - list.scrollTop - list.clientHeight < 80 : true,
      top: list ? list.scrollTop : 0,
      view: (app.querySelector("form.modal") || { dataset: {} }).dataset.view || "",
    };
    const active = document.activeElement;
    let focus = null;
    if (active && active.classList.contains("text-input")) {
      focus = { key: draftKey(active), start: active.selectionStart, end: active.selectionEnd };
    }
    const firstDraw = regionHTML.size === 0;

    for (const fresh of doc.body.querySelectorAll("[data-region]")) {
      const name = fresh.dataset.region;
      const html = fresh.outerHTML;
      if (regionHTML.get(name) === html) continue;
      regionHTML.set(name, html);
      const old = app.querySelector('[data-region="' + name + '"]');
      if (old) old.replaceWith(document.adoptNode(fresh));
    }

    const side = app.querySelector("[data-region=sidebar]");
    if (side && side.dataset.query && side.dataset.query !== query()) {
      readQuery(side.dataset.query);
      history.replaceState(null, "", "/?" + query());
    }

    // Messages: flash what changed, hide what was dismissed.
    for (const m of app.querySelectorAll("article.msg")) {
      const key = m.dataset.key;
      const n = Number(m.dataset.updates);
      if (!firstDraw && (!seen.has(key) || seen.get(key) !== n)) m.classList.add("flash");
      seen.set(key, n);
      if (dismissed.has(key)) m.hidden = true;
    }

    const newMain = app.querySelector("[data-region=main]");
    if (newMain && newMain.dataset.title) document.title = newMain.dataset.title;
    const newList = document.getElementById("messages");
    if (newList) {
      if (firstDraw || before.atBottom || !newMain || newMain.dataset.channel !== before.channel) {
        newList.scrollTop = newList.scrollHeight;
      } else {
        newList.scrollTop = before.top;
      }
    }

    if (openMenu) {
      let found = false;
      for (const sel of app.querySelectorAll(".select")) {
        if (elemKey(sel) === openMenu) {
          sel.querySelector(".menu").hidden = false;
          found = true;
        }
      }
      if (!found) openMenu = "";
    }

    // The modal: keep what was typed and where the cursor was.
    const form = app.querySelector("form.modal");
    if (form) {
      for (const input of form.querySelectorAll(".text-input")) {
        const k = draftKey(input);
        if (drafts.has(k)) input.value = drafts.get(k);
        if (focus && focus.key === k) {
          input.focus();
          try { input.setSelectionRange(focus.start, focus.end); } catch (e) { /* not a text field */ }
        }
      }
      if (form.dataset.view !== before.view) {
        const first = form.querySelector(".has-error .text-input") || form.querySelector(".text-input");
        if (first) first.focus();
      }
    }
  }

  // ---- acting ---------------------------------------------------------

  function toast(text, kind) {
    const t = document.createElement("div");
    t.className = "toast" + (kind ? " " + kind : "");
    t.setAttribute("role", kind === "error" ? "alert" : "status");
    t.textContent = text;
    toasts.appendChild(t);
    setTimeout(() => t.remove(), 7000);
  }

  function where(el) {
    const view = el.closest("[data-view]");
    if (view) return { viewId: view.dataset.view };
    const msg = el.closest("article.msg");
    return { channel: msg.dataset.channel, ts: msg.dataset.ts };
  }

  // Actions run one after another, in the order the person made them, as
  // a Slack client sends them.
  let queue = Promise.resolve();
  function act(body, busy) {
    body.as = state.as;
    const run = queue.then(() => send(body, busy));
    queue = run.catch(() => {});
    return run;
  }

  async function send(body, busy) {
    if (busy) busy.classList.add("busy");
    app.dataset.acting = String(Number(app.dataset.acting || 0) + 1);
    try {
      const r = await fetch("/act", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      let j;
      try { j = await r.json(); } catch (e) { j = { ok: false, error: "HTTP " + r.status }; }
      if (!j.ok) toast(j.error || "The action failed.", "error");
      return j;
    } catch (e) {
      toast("Could not reach slackask dev: " + e.message, "error");
      return { ok: false };
    } finally {
      if (busy) busy.classList.remove("busy");
      app.dataset.acting = String(Number(app.dataset.acting) - 1);
      schedule();
    }
  }

  // confirmOf finds the dialog of an element: the one right after a button,
  // or inside a menu.
  function confirmOf(el) {
    if (el.classList.contains("select")) return el.querySelector(":scope > .confirm-src");
    const next = el.nextElementSibling;
    return next && next.classList.contains("confirm-src") ? next : null;
  }

  // showConfirm shows a clone of the server-rendered dialog src.
  function showConfirm(src, run) {
    closeConfirm();
    const overlay = document.createElement("div");
    overlay.className = "overlay confirm-overlay";
    const box = document.createElement("div");
    box.className = "confirm" + (src.classList.contains("danger") ? " danger" : "");
    box.setAttribute("role", "alertdialog");
    for (const child of src.children) box.appendChild(child.cloneNode(true));
    overlay.appendChild(box);
    document.body.appendChild(overlay);
    confirmAction = run;
    const ok = box.querySelector("[data-act=confirm]");
    if (ok) ok.focus();
  }
  function closeConfirm() {
    for (const o of document.querySelectorAll(".confirm-overlay")) o.remove();
    confirmAction = null;
  }
  function guarded(el, run) {
    const src = confirmOf(el);
    if (src) showConfirm(src, run);
    else run();
  }

  function closeMenus() {
    for (const m of app.querySelectorAll(".menu")) m.hidden = true;
    openMenu = "";
  }
  function toggleMenu(sel) {
    const menu = sel.querySelector(".menu");
    const show = menu.hidden;
    closeMenus();
    if (show) {
      menu.hidden = false;
      place(menu);
      openMenu = elemKey(sel);
      const first = menu.querySelector(".opt.selected") || menu.querySelector(".opt");
      if (first) first.focus({ preventScroll: true });
    }
  }

  // place keeps an open menu out from under the message box: it opens
  // upward when there is more room above than below its button, with at
  // most the room it has, and scrolls it into view.
  function place(menu) {
    menu.classList.remove("up");
    menu.style.maxHeight = "";
    const box = document.querySelector(".composer");
    const limit = box ? box.getBoundingClientRect().top : window.innerHeight;
    const btn = menu.parentElement.getBoundingClientRect();
    const below = limit - btn.bottom - 8;
    const above = btn.top - 8;
    const need = menu.scrollHeight + menu.offsetHeight - menu.clientHeight; // with its borders
    if (need > below && above > below) {
      menu.classList.add("up");
      menu.style.maxHeight = Math.max(Math.min(need, above), 120) + "px";
    } else if (need > below) {
      menu.style.maxHeight = Math.max(below, 120) + "px";
    }
    menu.scrollIntoView({ block: "nearest" });
  }

  function selected(sel) {
    return Array.from(sel.querySelectorAll(".opt.selected"), (o) => o.dataset.value);
  }
  function choose(sel, values) {
    const body = Object.assign(where(sel), {
      kind: "select", blockId: sel.dataset.block, actionId: sel.dataset.action, values: values,
    });
    guarded(sel, () => act(body, sel.querySelector(".select-btn") || sel));
  }
  function pick(opt) {
    const sel = opt.closest(".select");
    const v = opt.dataset.value;
    if (sel.dataset.kind !== "multiselect" && sel.dataset.kind !== "checkboxes") {
      closeMenus();
      choose(sel, [v]);
      return;
    }
    let values = selected(sel);
    if (values.includes(v)) {
      values = values.filter((x) => x !== v);
    } else {
      const max = Number(sel.dataset.max || 0);
      if (max && values.length >= max) {
        toast("You can choose at most " + max + ".", "error");
        return;
      }
      values.push(v);
    }
    opt.classList.toggle("selected");
    opt.setAttribute("aria-checked", String(opt.classList.contains("selected")));
    choose(sel, values);
  }

  function copyCurl() {
    const pre = document.getElementById("curl");
    if (!pre) return;
    const done = () => toast("Copied. Paste it in a terminal.");
    if (navigator.clipboard) navigator.clipboard.writeText(pre.textContent).then(done, () => toast("Select the command and copy it.", "error"));
  }

  function navigate() {
    closeMenus();
    history.pushState(null, "", "/?" + query());
    refresh();
  }

  document.addEventListener("click", (ev) => {
    const t = ev.target.closest("[data-act]");
    if (openMenu && !ev.target.closest(".select")) closeMenus();
    if (!t) {
      if (ev.target.classList.contains("confirm-overlay")) closeConfirm();
      return;
    }
    switch (t.dataset.act) {
      case "toggle-sidebar":
        document.body.classList.toggle("sidebar-open");
        break;
      case "nav":
        ev.preventDefault();
        document.body.classList.remove("sidebar-open");
        state.c = t.dataset.channel;
        state.thread = "";
        navigate();
        if (state.c === "home") act({ kind: "open-home" }); // as Slack: opening the tab tells the app
        break;
      case "as-link":
        ev.preventDefault();
        document.body.classList.remove("sidebar-open");
        state.as = t.dataset.as;
        state.thread = "";
        navigate();
        if (state.c === "home") act({ kind: "open-home" });
        break;
      case "thread":
        ev.preventDefault();
        state.thread = t.dataset.thread;
        navigate();
        break;
      case "close-thread":
        ev.preventDefault();
        state.thread = "";
        navigate();
        break;
      case "menu":
        toggleMenu(t.closest(".select"));
        break;
      case "pick":
        pick(t);
        break;
      case "unpick": {
        ev.stopPropagation();
        const sel = t.closest(".select");
        closeMenus();
        choose(sel, selected(sel).filter((x) => x !== t.dataset.value));
        break;
      }
      case "click":
        guarded(t, () => {
          if (t.dataset.url) window.open(t.dataset.url, "_blank", "noopener");
          act(Object.assign(where(t), { kind: "click", blockId: t.dataset.block, actionId: t.dataset.action }), t);
        });
        break;
      case "confirm": {
        const run = confirmAction;
        closeConfirm();
        if (run) run();
        break;
      }
      case "deny":
        closeConfirm();
        break;
      case "close-view": {
        const form = t.closest("form.modal");
        act({ kind: "close", viewId: form.dataset.view }, form);
        break;
      }
      case "dismiss": {
        const m = t.closest("article.msg");
        dismissed.add(m.dataset.key);
        m.hidden = true;
        break;
      }
      case "copy":
        copyCurl();
        break;
    }
  });

  document.addEventListener("change", (ev) => {
    if (ev.target.id === "as") {
      state.as = ev.target.value;
      state.thread = "";
      navigate();
    }
  });

  document.addEventListener("input", (ev) => {
    if (ev.target.classList.contains("text-input")) drafts.set(draftKey(ev.target), ev.target.value);
  });

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form.modal");
    if (!form) return;
    ev.preventDefault();
    const inputs = Array.from(form.querySelectorAll(".text-input"), (i) => ({
      blockId: i.dataset.block, actionId: i.dataset.action, value: i.value,
    }));
    const view = form.dataset.view;
    const r = await act({ kind: "submit", viewId: view, inputs: inputs }, form);
    if (r.ok && !r.viewErrors) {
      for (const k of Array.from(drafts.keys())) if (k.startsWith(view + "|")) drafts.delete(k);
    }
  });

  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape") return;
    if (confirmAction || document.querySelector(".confirm-overlay")) {
      closeConfirm();
    } else if (openMenu) {
      closeMenus();
    } else {
      const form = app.querySelector("form.modal");
      if (form) act({ kind: "close", viewId: form.dataset.view }, form);
    }
  });

  window.addEventListener("popstate", () => {
    readQuery(location.search);
    refresh();
  });

  function listen() {
    const es = new EventSource("/events");
    es.addEventListener("change", schedule);
    es.onopen = () => {
      document.body.classList.remove("offline");
      schedule();
    };
    es.onerror = () => document.body.classList.add("offline");
  }

  // Start: take the server's idea of who and where, remember what it drew.
  readQuery(app.dataset.query);
  history.replaceState(null, "", "/?" + query());
  scrollToHighlight();
  listen();
  refresh();
})();
