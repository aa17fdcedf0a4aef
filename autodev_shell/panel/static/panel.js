// autodev panel (issue 23): one hand-written file, no library, no build step.
// Every text from the run is put in with textContent, never as HTML.
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const meta = (name) => {
    const el = document.querySelector(`meta[name="${name}"]`);
    return el ? el.getAttribute("content") : "";
  };
  const CSRF = meta("autodev-csrf");
  const READ_ONLY = meta("autodev-read-only") === "true";
  const PROMPT_OFF = meta("autodev-prompt-editing");

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function setText(sel, text) {
    const node = typeof sel === "string" ? $(sel) : sel;
    if (node && node.textContent !== text) node.textContent = text;
  }

  // --- time left, as `autodev status` writes it (format_left: minutes rounded up) ---------
  function formatLeft(seconds) {
    if (seconds < 60) return `${Math.max(0, Math.ceil(seconds))}s`;
    const minutes = Math.ceil(seconds / 60);
    const hours = Math.floor(minutes / 60);
    const rest = minutes % 60;
    if (hours === 0) return `${rest}m`;
    return `${hours}h ${String(rest).padStart(2, "0")}m`;
  }

  function timer(untilIso, backAt) {
    // <time datetime> with the UTC instant around a role=timer the page ticks every second:
    // "back at 14:30 WEST (in 1h 12m)", "checking…" at zero.
    const clock = el("span", { role: "timer", "aria-live": "off", "data-until": untilIso,
                               "data-back-at": backAt });
    const wrap = el("time", { class: "countdown", datetime: untilIso }, clock);
    tickOne(clock);
    return wrap;
  }

  // Control characters of a post (a CLI's escape codes) shown as their Unicode pictures:
  // text, never interpreted.
  function visible(text) {
    // C0 controls (but tab and newline) as their pictures, DEL as ␡; C1 controls and the bidi
    // controls that reorder what follows ("evil\u202Eexe.txt") as their code, ⟨U+202E⟩.
    return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
      (c) => {
        const code = c.charCodeAt(0);
        if (code < 0x20) return String.fromCharCode(0x2400 + code);
        if (code === 0x7f) return "\u2421";
        return `\u27e8U+${code.toString(16).toUpperCase().padStart(4, "0")}\u27e9`;
      });
  }

  // --- the run's clock (docs/panel.md, "Whose clock") -----------------------------------------
  // A run on a fast or virtual clock (--fast, the demo) stamps its own time: the server says the
  // run's now and its rate against this machine's clock with each status; between two, the
  // page moves it on at that rate (0: no daemon, the run's clock stands still).
  let runClock = { fast: false, run: 0, at: 0, rate: 1 };

  function runNow() {
    if (!runClock.fast) return Date.now();
    return runClock.run + (Date.now() - runClock.at) * runClock.rate;
  }

  function ago(iso) {
    const seconds = Math.max(0, (runNow() - Date.parse(iso)) / 1000);
    if (seconds < 1) return "just now";
    return `${formatLeft(seconds < 60 ? Math.floor(seconds) : Math.floor(seconds / 60) * 60)} ago`;
  }


  function tickOne(node) {
    const until = Date.parse(node.getAttribute("data-until"));
    const backAt = node.getAttribute("data-back-at");
    const left = (until - runNow()) / 1000;
    let text;
    if (left <= 0) {
      text = "checking…";
      if (!node.hasAttribute("data-lifted")) {
        node.setAttribute("data-lifted", "");
        // One polite announcement when a wait ends (the timer itself is not announced).
        setText("#announce", `${backAt.replace(/^(back at|next try at|until) /, "")}: time is up, checking…`);
        const box = node.closest(".countdown");
        if (box) box.classList.add("due");
      }
    } else {
      text = `${backAt} (in ${formatLeft(left)})`;
    }
    if (node.textContent !== text) node.textContent = text;
  }

  function heartbeatText(at) {
    return `last heartbeat ${ago(at)}${runClock.fast ? " on the run's clock" : ""}`;
  }

  function tick() {
    document.querySelectorAll("[role=timer][data-until]").forEach(tickOne);
    const beat = $("#heartbeat");
    const at = beat && beat.getAttribute("data-at");
    if (at) setText(beat, heartbeatText(at));
  }
  setInterval(tick, 1000);

  // --- one zone on the page: the run's (timezone: in autodev.yaml, else UTC) ---------------------
  let runZone = "UTC";
  const zoneFormats = new Map();

  function atText(iso) {
    // A post's instant in the run's zone, as the limits and waits are written by the server.
    let format = zoneFormats.get(runZone);
    if (!format) {
      try {
        format = new Intl.DateTimeFormat("sv-SE", { timeZone: runZone, year: "numeric",
          month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
          second: "2-digit", hour12: false });
      } catch (err) {
        return iso.replace("T", " ").slice(0, 19) + " UTC";
      }
      zoneFormats.set(runZone, format);
    }
    return format.format(new Date(iso));
  }

  // --- run status ---------------------------------------------------------------------------
  let daemonRunning = false;
  let lastView = null;

  function renderStatus(data) {
    const view = data.view || {};
    lastView = view;
    if (view.zone && view.zone !== runZone) {
      runZone = view.zone;
      thread.querySelectorAll(".post time[datetime]").forEach((node) => {
        node.textContent = atText(node.getAttribute("datetime"));
      });
    }
    setText("#zone-note", `Times are in ${runZone}, the run's zone.`);
    const clock = view.clock || {};
    runClock = { fast: !!clock.fast, run: Date.parse(clock.run_now || "") || Date.now(),
                 at: Date.now(), rate: typeof clock.rate === "number" ? clock.rate : 1 };
    const clockNote = $("#clock-note");
    clockNote.hidden = !runClock.fast;
    let said = "";
    if (runClock.fast && runClock.rate === 0) {
      said = "This run keeps a fast clock, which stands still while no daemon runs it: the time left is counted from its last heartbeat.";
    } else if (runClock.fast && !clock.measured) {
      said = "This run keeps a fast clock (its rate is being measured from its heartbeats): its times are the run's clock's; the time left is counted from its last heartbeat.";
    } else if (runClock.fast) {
      said = `This run keeps a fast clock (about ${formatRate(runClock.rate)} real time): its times and the time left are the run's clock's.`;
    }
    setText(clockNote, said);
    const word = $("#run-status");
    setText(word, String(view.status));
    word.setAttribute("data-status", String(view.status));
    const note = $("#status-note");
    note.hidden = !view.status_note;
    setText(note, view.status_note ? `(${view.status_note})` : "");
    const waitBox = $("#wait-until");
    const waitKey = view.wait_until ? view.wait_until.until : "";
    if (waitBox.getAttribute("data-key") !== waitKey) {
      waitBox.setAttribute("data-key", waitKey);
      waitBox.replaceChildren(view.wait_until ? timer(view.wait_until.until, view.wait_until.back_at) : "");
    }
    daemonRunning = !!view.daemon_running;
    const daemon = $("#daemon");
    setText(daemon, view.daemon || "");
    daemon.setAttribute("data-running", daemonRunning ? "true" : "false");
    const beat = $("#heartbeat");
    beat.setAttribute("data-at", view.heartbeat || "");
    setText(beat, view.heartbeat ? heartbeatText(view.heartbeat) : "no heartbeat yet");
    setText("#revision", view.revision === null || view.revision === undefined ? "—" : String(view.revision));
    setText("#persistence", view.persistence || "");
    setText("#gate", view.gate || "");
    setText("#calls", view.calls === null || view.calls === undefined ? "—" : String(view.calls));
    setText("#failure-streak", view.failure_streak === null || view.failure_streak === undefined ? "—" : String(view.failure_streak));
    const error = $("#status-error");
    error.hidden = !view.error;
    setText(error, view.error || "");
    const usage = $("#usage");
    const usageKey = JSON.stringify(view.usage || []);
    if (usage.getAttribute("data-key") !== usageKey) {
      usage.setAttribute("data-key", usageKey);
      usage.replaceChildren(...(view.usage || []).map((line) => el("li", { text: `usage: ${line}` })));
    }
    const outages = $("#outages");
    const outKey = JSON.stringify(view.outages || []);
    if (outages.getAttribute("data-key") !== outKey) {
      outages.setAttribute("data-key", outKey);
      outages.replaceChildren(...(view.outages || []).map((o) =>
        el("p", { class: "outage", "data-provider": o.provider },
           el("span", { class: "tag tag-outage", text: "outage" }), " ",
           `${o.provider} unreachable (${o.attempts} ${o.attempts === 1 ? "try" : "tries"}); `,
           timer(o.retry_at, o.back_at))));
    }
    renderNow(view);
    renderNeeds(view.needs_you || "");
    renderEngines(view);
    renderParticipants(view);
    updateControls();
    tick(); // every countdown on the clock just said, not on the one before
  }

  // --- when the run needs you: a badge in the tab's title, an optional notification -----------
  const TITLE = document.title;
  let lastNeed = null;

  function renderNeeds(need) {
    document.title = need ? `(!) ${need} — ${TITLE}` : TITLE;
    setText("#needs-you", need ? `The run needs you: ${need}.` : "");
    $("#needs-you").hidden = !need;
    if (need && need !== lastNeed && lastNeed !== null && notifying()) {
      try { new Notification("autodev: the run needs you", { body: need, tag: "autodev-needs" }); }
      catch (err) { /* a browser that refuses it: the badge still says it */ }
    }
    lastNeed = need;
  }

  function notifying() {
    return "Notification" in window && Notification.permission === "granted"
      && localStorage.getItem("autodev-notify") === "on";
  }

  function showNotify() {
    const button = $("#notify-toggle");
    if (!("Notification" in window)) { button.disabled = true; button.title = "This browser has no notifications"; return; }
    const on = notifying();
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.textContent = on ? "Notifications on" : "Notify me";
  }

  $("#notify-toggle").addEventListener("click", async () => {
    if (notifying()) { localStorage.setItem("autodev-notify", "off"); showNotify(); return; }
    const answer = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
    localStorage.setItem("autodev-notify", answer === "granted" ? "on" : "off");
    showNotify();
  });
  showNotify();

  function renderNow(view) {
    // The page's first line: what the run does now and what it waits for.
    const now = view.first_line || { text: String(view.status), until: null };
    setText("#now-text", now.text);
    const box = $("#now-wait");
    const key = now.until || "";
    if (box.getAttribute("data-key") !== key) {
      box.setAttribute("data-key", key);
      box.replaceChildren(now.until ? timer(now.until, now.back_at) : "");
    }
  }

  function laneOf(row) {
    // The lane that holds the notice: the participant named in its line, else who runs on it.
    const line = (row.limit && row.limit.notice) || "";
    const named = row.in_chains_of.find((id) => line.includes(id));
    return named || row.runs_on_it[0] || row.in_chains_of[0] || null;
  }

  // Per engine, a clear asked from this page: what the panel answered, and whether it queued.
  const clearing = new Map();

  function renderEngines(view) {
    const windows = $("#usage-windows");
    const windowsKey = JSON.stringify(view.usage_windows || []);
    if (windows.getAttribute("data-key") !== windowsKey) {
      windows.setAttribute("data-key", windowsKey);
      windows.replaceChildren(...(view.usage_windows || []).map((line) => el("li", { text: line })));
    }
    const box = $("#engines");
    const key = JSON.stringify([view.engines || [], daemonRunning]);
    if (box.getAttribute("data-key") === key) return;
    box.setAttribute("data-key", key);
    for (const row of view.engines || []) if (!row.limit) clearing.delete(row.engine);
    box.replaceChildren(...(view.engines || []).map((row) => {
      const item = el("article", { class: `engine-row state-${row.state}`, id: `engine-${row.engine}`,
                                   "data-engine": row.engine, "data-state": row.state,
                                   "aria-labelledby": `engine-title-${row.engine}` });
      const head = el("h3", { id: `engine-title-${row.engine}` }, el("span", { class: "engine", text: row.engine }), " ",
                      el("span", { class: `tag tag-${row.state === "free" ? "next" : row.state === "limited" ? "limited" : "outage"}`,
                                   text: row.state }));
      item.append(head);
      if (row.limit) {
        const l = row.limit;
        const limit = el("div", { class: l.shared ? "limit shared" : "limit", "data-engine": l.engine });
        limit.append(el("span", { class: "tag tag-limited", text: "limited" }), " ",
                     el("strong", { text: l.engine }), " ", timer(l.until, l.back_at));
        limit.append(el("p", { class: "origin", text: `reset ${l.origin}${l.shared ? "" : " (this run's own)"}` }));
        const lane = laneOf(row);
        if (l.notice) {
          limit.append(el("p", { class: "notice" }, "log: ", el("code", { text: l.notice }), " ",
                          lane ? el("a", { href: `#lane-${lane}`, text: `${lane}'s lane` }) : ""));
        }
        if (!READ_ONLY) {
          const clear = el("button", { type: "button", class: "clear-limit", "data-engine": row.engine,
                                       disabled: !daemonRunning, text: "Clear limit" });
          clear.setAttribute("aria-label", `Clear limit of ${row.engine}`);
          const said = el("span", { class: "clear-result", role: "status" });
          // A queued clear outlives the row's redrawing (a live update replaces the rows): its
          // answer stays said and the button stays off until the limit is gone.
          const pending = clearing.get(row.engine);
          if (pending !== undefined) {
            said.textContent = pending.said;
            clear.disabled = clear.disabled || pending.queued;
          }
          clear.addEventListener("click", async () => {
            clear.disabled = true;
            clearing.set(row.engine, { said: "", queued: true });
            const answer = await send(`/api/clear/${encodeURIComponent(row.engine)}`, { method: "POST" });
            const text = answer.ok ? answer.body.message : `not queued: ${answer.body.error}`;
            clearing.set(row.engine, { said: text, queued: answer.ok });
            const shown = document.querySelector(`#engines .engine-row[data-engine="${CSS.escape(row.engine)}"] .clear-result`);
            for (const node of new Set([said, shown])) if (node) node.textContent = text;
            setText("#control-result", text);  // where every control's answer stays said
            if (!answer.ok && shown) shown.parentElement.querySelector("button.clear-limit").disabled = !daemonRunning;
          });
          limit.append(el("p", {}, clear, " ", said));
        }
        item.append(limit);
      }
      if (row.outage) {
        item.append(el("p", { class: "outage" }, `${row.outage.attempts} failed ${row.outage.attempts === 1 ? "try" : "tries"}; `,
                       timer(row.outage.until, row.outage.back_at)));
      }
      item.append(el("p", { class: "who" },
        `runs on it now: ${row.runs_on_it.length ? row.runs_on_it.join(", ") : "nobody"}`,
        ` · in the chains of: ${row.in_chains_of.join(", ")}`));
      return item;
    }));
  }

  function formatRate(rate) {
    return rate >= 10 ? `${Math.round(rate)}×` : `${rate.toFixed(1)}×`;
  }

  function renderParticipants(view) {
    const box = $("#participants");
    const seen = new Set();
    for (const p of view.participants || []) {
      seen.add(p.id);
      noteAuthor(p.id); // the whole thread's search filters by anyone of the team
      let card = box.querySelector(`[data-participant="${CSS.escape(p.id)}"]`);
      if (!card) {
        card = el("article", { class: "participant", "data-participant": p.id,
                               "aria-labelledby": `p-${p.id}` });
        const head = el("h3", { id: `p-${p.id}` }, p.id);
        const edit = el("button", { type: "button", class: "edit-prompt",
                                    "data-participant": p.id,
                                    disabled: READ_ONLY || !!PROMPT_OFF,
                                    title: PROMPT_OFF || null,
                                    text: "Edit prompt" });
        // The accessible name starts with the visible words (WCAG 2.5.3, axe's
        // label-content-name-mismatch), then says whose.
        edit.setAttribute("aria-label", `Edit prompt of ${p.id}`);
        edit.addEventListener("click", () => openPrompt(p.id));
        card.append(head, el("p", { class: "where" }), el("ol", { class: "chain" }),
                    el("div", { class: "limits" }), edit);
        box.append(card);
      }
      const key = JSON.stringify(p);
      if (card.getAttribute("data-key") === key) continue;
      card.setAttribute("data-key", key);
      const where = card.querySelector(".where");
      where.replaceChildren(
        "on ", el("a", { class: "engine", href: `#engine-${p.engine}`, text: p.engine }),
        ` — lane entry ${p.seat + 1} of ${p.lane_entries}`,
        p.due ? el("span", { class: "tag tag-due", text: "turn due" }) : "",
        p.in_call ? el("span", { class: "tag tag-call", text: "in a call" }) : "",
        ` · empty turns: ${p.empty_turns}`,
      );
      const chain = card.querySelector(".chain");
      chain.setAttribute("aria-label", `${p.id}'s failover chain`);
      chain.replaceChildren(...p.chain.map((entry) => {
        const marks = [];
        if (entry.next) marks.push(el("span", { class: "tag tag-next", text: "next" }));
        if (entry.limited) marks.push(el("span", { class: "tag tag-limited", text: "limited" }));
        if (entry.unreachable) marks.push(el("span", { class: "tag tag-outage", text: "unreachable" }));
        // A limit belongs to its engine: the card points to the engine's row, never repeats it.
        const name = entry.limited || entry.unreachable
          ? el("a", { href: `#engine-${entry.engine}`, text: entry.engine }) : entry.engine;
        return el("li", { class: ["entry", entry.next ? "next" : "", entry.limited ? "limited" : ""].join(" ").trim(),
                          "data-engine": entry.engine }, name, " ", ...marks);
      }));
      const limits = card.querySelector(".limits");
      const limited = p.chain.filter((entry) => entry.limited).map((entry) => entry.engine);
      limits.replaceChildren(limited.length
        ? el("p", { class: "see-engines" }, `${limited.length === 1 ? "Limited engine" : "Limited engines"} of its chain: `,
             ...limited.flatMap((name, i) => [i ? ", " : "", el("a", { href: `#engine-${name}`, text: name })]),
             " (see Engines)")
        : "");
    }
    box.querySelectorAll("[data-participant]").forEach((card) => {
      if (card.matches("article") && !seen.has(card.getAttribute("data-participant"))) card.remove();
    });
  }

  // --- the thread -----------------------------------------------------------------------------
  const thread = $("#thread");
  const newButton = $("#new-posts");
  let unseen = 0;
  let following = true;
  const seqs = new Set();
  let lastRevision = null;
  let oldestRevision = null;
  let waitingFor = null; // the key of a say queued from this page

  function atBottom() {
    return thread.scrollHeight - thread.scrollTop - thread.clientHeight < 24;
  }
  thread.addEventListener("scroll", () => {
    following = atBottom();
    if (following) { unseen = 0; newButton.hidden = true; }
  });
  newButton.addEventListener("click", () => {
    thread.scrollTop = thread.scrollHeight;
    following = true; unseen = 0; newButton.hidden = true;
    thread.focus();
  });

  function makePost(post) {
    const node = el("article", { class: `post kind-${post.kind}`, "data-revision": post.revision,
                                 "data-seq": post.seq, "data-key": post.key,
                                 "data-author": post.author, id: `post-${post.seq}` });
    node.append(...postParts(post));
    noteAuthor(post.author);
    if (!matches(node)) node.classList.add("filtered-out");
    return node;
  }

  function postParts(post) {
    const link = el("a", { class: "permalink", href: `#post-${post.seq}`, text: "link" });
    link.setAttribute("aria-label", `link to this post (${post.author}, revision ${post.revision})`);
    return [
      el("p", { class: "post-head" },
         el("span", { class: "author", text: post.author }),
         post.engine ? el("span", { class: "via", text: ` via ${post.engine}` }) : "",
         " · ", el("time", { datetime: post.at, text: atText(post.at) }),
         el("span", { class: "rev", text: ` · revision ${post.revision}` }), " · ", link),
      el("div", { class: "text", text: visible(post.text) })];
  }

  // --- search and filters over the posts the page holds ------------------------------------------
  const authors = new Set();

  function noteAuthor(author) {
    if (authors.has(author)) return;
    authors.add(author);
    const pick = $("#thread-author");
    const options = Array.from(authors).sort().map((a) => el("option", { value: a, text: a }));
    const chosen = pick.value;
    pick.replaceChildren(el("option", { value: "", text: "everyone" }), ...options);
    pick.value = chosen;
  }

  function matches(node) {
    const words = $("#thread-search").value.trim().toLowerCase();
    const author = $("#thread-author").value;
    const kind = $("#thread-kind").value;
    if (author && node.getAttribute("data-author") !== author) return false;
    if (kind && !node.classList.contains(`kind-${kind}`)) return false;
    if (words && !node.textContent.toLowerCase().includes(words)) return false;
    return true;
  }

  function applyFilters() {
    let shown = 0;
    const posts = thread.querySelectorAll(".post");
    posts.forEach((node) => {
      const keep = matches(node);
      node.classList.toggle("filtered-out", !keep);
      if (keep) shown += 1;
    });
    const on = $("#thread-search").value.trim() || $("#thread-author").value || $("#thread-kind").value;
    setText("#filter-result", on ? `${shown} of the ${posts.length} posts loaded match` : "");
  }
  for (const id of ["#thread-search", "#thread-author", "#thread-kind"]) {
    $(id).addEventListener("input", () => { applyFilters(); searchSoon(); });
  }
  $("#thread-filters").addEventListener("submit", (e) => { e.preventDefault(); searchWhole(false); });

  // --- search over the whole thread: GET /api/search reads the run's store, a bounded page
  // at a time, newest first; its permalinks open the matches even long before the posts loaded.
  const SEARCH_PAGE = 50;
  const SEARCH_WINDOWS = 20; // store windows read per action (the server reads 100,000 posts each)
  let searchAsked = 0; // the newest search: an answer to an older one is dropped
  let searchTimer = null;
  let searchNext = null;

  function searchSoon() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => searchWhole(false), 250);
  }

  function searchItem(post) {
    const link = el("a", { class: "permalink", href: `#post-${post.seq}`,
                           text: `${post.author}${post.engine ? ` via ${post.engine}` : ""} · ${atText(post.at)} · revision ${post.revision}` });
    const text = `${post.cut_before ? "…" : ""}${visible(post.excerpt)}${post.cut_after ? "…" : ""}`;
    return el("li", { "data-seq": post.seq }, link, el("p", { class: "excerpt", text }));
  }

  async function searchWhole(more) {
    const words = $("#thread-search").value.trim();
    const author = $("#thread-author").value;
    const kind = $("#thread-kind").value;
    const box = $("#search-results");
    const list = $("#search-list");
    const asked = ++searchAsked;
    clearTimeout(searchTimer);
    if (!words && !author && !kind) { box.hidden = true; list.replaceChildren(); searchNext = null; return; }
    if (!more) { list.replaceChildren(); searchNext = null; }
    box.hidden = false;
    $("#search-more").hidden = true;
    setText("#search-summary", "searching the whole thread…");
    let before = more ? searchNext : null;
    let added = 0;
    for (let part = 0; part < SEARCH_WINDOWS; part += 1) {
      const params = new URLSearchParams();
      if (words) params.set("q", words);
      if (author) params.set("author", author);
      if (kind) params.set("kind", kind);
      if (before !== null) params.set("before", before);
      params.set("limit", SEARCH_PAGE - added);
      let page;
      try {
        const answer = await fetch(`/api/search?${params}`, { credentials: "same-origin" });
        page = await answer.json();
        if (!answer.ok) throw new Error(page.error || answer.status);
      } catch (err) {
        if (asked === searchAsked) setText("#search-summary", `the search failed: ${err.message}`);
        return;
      }
      if (asked !== searchAsked) return;
      for (const post of page.posts) list.append(searchItem(post));
      added += page.posts.length;
      before = page.next;
      if (before === null || added >= SEARCH_PAGE) break;
    }
    searchNext = before;
    const count = list.childElementCount;
    const what = count === 1 ? "1 match" : `${count} matches`;
    setText("#search-summary", searchNext === null
      ? `${what} in the whole thread, newest first`
      : `${what} so far, newest first; "Search further back" goes on`);
    $("#search-more").hidden = searchNext === null;
  }
  $("#search-more").addEventListener("click", () => searchWhole(true));
  $("#search-list").addEventListener("click", (e) => {
    const link = e.target.closest("a.permalink");
    if (link && link.getAttribute("href") === location.hash) showLinked(); // no hashchange
  });

  // A permalink (#post-SEQ) opened: a post a few pages before those loaded is loaded into the
  // thread (older pages, at most 4); one further back (a search's match in a long thread) opens
  // whole in "The linked post" above the thread (GET /api/post/SEQ), the thread left as it is.
  async function showLinked() {
    const found = /^#post-(\d+)$/.exec(location.hash);
    if (!found) return;
    const seq = Number(found[1]);
    const loaded = Array.from(seqs);
    const first = loaded.length ? Math.min(...loaded) : null;
    for (let page = 0; page < 4 && first !== null && seq < first && seq >= first - 200
         && !document.getElementById(`post-${seq}`); page += 1) {
      if (oldestRevision === null) return;
      if (!(await loadOlder())) break;
    }
    const node = document.getElementById(`post-${seq}`);
    if (node) {
      $("#linked-post").hidden = true;
      following = false;
      node.classList.add("linked");
      node.scrollIntoView({ block: "center" });
      return;
    }
    const answer = await fetch(`/api/post/${seq}`, { credentials: "same-origin" });
    if (!answer.ok) { setText("#older-result", `post ${seq} is not in this thread`); return; }
    const post = await answer.json();
    const shown = el("article", { class: `post kind-${post.kind} linked`, "data-seq": post.seq,
                                  "data-revision": post.revision, "data-author": post.author },
                     ...postParts(post));
    setText("#linked-title", `Post ${post.seq} (revision ${post.revision}), not among the posts loaded in the thread`);
    $("#linked-body").replaceChildren(shown);
    $("#linked-post").hidden = false;
    $("#linked-post").scrollIntoView({ block: "nearest" });
  }
  window.addEventListener("hashchange", showLinked);
  $("#linked-close").addEventListener("click", () => {
    $("#linked-post").hidden = true;
    $("#linked-body").replaceChildren();
  });

  // Posts are shown in slices of at most SLICE_MS of work, each one DOM insertion and one
  // scroll, the page answering clicks between slices: a burst of 20,000 posts never freezes it.
  // The thread keeps at most MAX_THREAD_POSTS posts (the oldest whole revisions go first;
  // "Load older posts" brings them back).
  const SLICE_MS = 12;
  const MAX_THREAD_POSTS = 1000;
  let pending = [];
  let pendingAt = 0;
  let flushing = false;

  function addPost(post) {
    if (lastRevision === null || post.revision > lastRevision) lastRevision = post.revision;
    pending.push(post);
    if (!flushing) { flushing = true; setTimeout(flushPosts, 0); }
  }

  function flushPosts() {
    flushing = false;
    const started = performance.now();
    // Where the thread is now, not only what the last scroll event said: a post can arrive
    // after the reader's scroll moved the thread and before its scroll event is dispatched
    // (a frame or more on a loaded machine), and must not pull the reader back down.
    const stick = following && atBottom();
    if (!stick) following = false;
    const batch = document.createDocumentFragment();
    let added = 0;
    while (pendingAt < pending.length && performance.now() - started < SLICE_MS) {
      const post = pending[pendingAt++];
      if (seqs.has(post.seq)) continue;
      seqs.add(post.seq);
      batch.append(makePost(post));
      added += 1;
      if (oldestRevision === null || post.revision < oldestRevision) oldestRevision = post.revision;
      if (waitingFor && post.key === waitingFor) {
        setText("#say-result", `queued → in the thread at revision ${post.revision}`);
        waitingFor = null;
      }
    }
    if (pendingAt >= pending.length) { pending = []; pendingAt = 0; }
    thread.append(batch);
    trimThread(stick);
    if (stick) {
      thread.scrollTop = thread.scrollHeight;
    } else if (added) {
      unseen += added;
      newButton.textContent = `${unseen} new`;
      newButton.hidden = false;
    }
    if (pending.length) { flushing = true; setTimeout(flushPosts, 0); }
    if (added && !linkedTried) { linkedTried = true; showLinked(); }
  }
  let linkedTried = false;

  function trimThread(stick) {
    let count = thread.childElementCount;
    if (count <= MAX_THREAD_POSTS) return;
    const height = stick ? 0 : thread.scrollHeight;
    let cut = null;
    while (thread.firstElementChild && (count > MAX_THREAD_POSTS
           || thread.firstElementChild.getAttribute("data-revision") === cut)) {
      const first = thread.firstElementChild;
      cut = first.getAttribute("data-revision");
      seqs.delete(Number(first.getAttribute("data-seq")));
      first.remove();
      count -= 1;
    }
    const first = thread.firstElementChild;
    oldestRevision = first ? Number(first.getAttribute("data-revision")) : null;
    if (!stick) thread.scrollTop -= height - thread.scrollHeight; // the reader's place kept
  }

  $("#older-posts").addEventListener("click", () => loadOlder());

  async function loadOlder() {
    const before = oldestRevision === null ? "" : `before=${oldestRevision}&`;
    const answer = await fetch(`/api/thread?${before}limit=50`, { credentials: "same-origin" });
    if (!answer.ok) { setText("#older-result", `could not load older posts (${answer.status})`); return false; }
    const posts = await answer.json();
    const height = thread.scrollHeight;
    const first = thread.firstChild;
    let added = 0;
    for (const post of posts) {
      if (seqs.has(post.seq)) continue;
      seqs.add(post.seq);
      thread.insertBefore(makePost(post), first);
      added += 1;
      if (oldestRevision === null || post.revision < oldestRevision) oldestRevision = post.revision;
    }
    thread.scrollTop += thread.scrollHeight - height;
    setText("#older-result", added ? `${added} older posts loaded` : "no older posts");
    applyFilters();
    return added > 0;
  }

  // --- lanes ------------------------------------------------------------------------------------
  // A lane is a <pre> of calls: each header frame (Lanes.begin_call) starts a span.call holding
  // its lines up to the next header. "Show headers only" folds every call of the lane to its
  // header and footer; a click on a header folds that call alone.
  const MAX_LANE_LINES = 4000;

  function laneBox(name) {
    let pre = document.querySelector(`[data-lane="${CSS.escape(name)}"]`);
    if (!pre) {
      const section = el("section", { class: "lane", id: `lane-${name}`, "aria-labelledby": `lane-title-${name}` });
      const fold = el("button", { type: "button", class: "lane-fold", "aria-pressed": "false",
                                  "data-participant": name, text: "Show headers only" });
      fold.setAttribute("aria-label", `Show headers only in ${name}'s lane`);
      section.append(el("h3", { id: `lane-title-${name}`, text: `${name}'s lane` }), fold);
      pre = el("pre", { "data-lane": name, tabindex: "0", "aria-live": "off",
                        "aria-label": `${name}'s lane` });
      fold.addEventListener("click", () => {
        const on = fold.getAttribute("aria-pressed") !== "true";
        fold.setAttribute("aria-pressed", on ? "true" : "false");
        fold.textContent = on ? "Show whole calls" : "Show headers only";
        fold.setAttribute("aria-label", `${fold.textContent} in ${name}'s lane`);
        pre.classList.toggle("headers-only", on);
      });
      pre.addEventListener("click", (e) => {
        const header = e.target.closest && e.target.closest(".line-header");
        if (header && header.parentElement.classList.contains("call")) foldCall(header);
      });
      // The keyboard: in a focused lane, Down and Up move between its call headers and
      // Enter or Space folds the call of the header in focus (the headers are not in the Tab
      // order: a lane of a thousand calls is one Tab stop).
      pre.addEventListener("keydown", (e) => {
        const headers = Array.from(pre.querySelectorAll(".call > .line-header"));
        const current = e.target.closest && e.target.closest(".line-header");
        if ((e.key === "ArrowDown" || e.key === "ArrowUp") && headers.length) {
          const at = current ? headers.indexOf(current) : -1;
          const next = e.key === "ArrowDown" ? Math.min(at + 1, headers.length - 1)
            : (at < 0 ? headers.length - 1 : Math.max(at - 1, 0));
          headers[next].focus();
          e.preventDefault();
        } else if ((e.key === "Enter" || e.key === " ") && current) {
          foldCall(current);
          e.preventDefault();
        }
      });
      section.append(pre);
      $("#lanes").append(section);
    }
    return pre;
  }

  function foldCall(header) {
    const folded = header.parentElement.classList.toggle("folded");
    header.setAttribute("aria-expanded", folded ? "false" : "true");
  }

  function addPieces(pre, pieces) {
    const stick = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
    let lines = Number(pre.getAttribute("data-lines") || "0");
    for (const piece of pieces) {
      let holder = pre.lastElementChild && pre.lastElementChild.classList.contains("call")
        ? pre.lastElementChild : pre;
      let line = holder.lastElementChild;
      if (piece.kind === "header") {
        holder = el("span", { class: "call" });
        if (piece.engine) holder.setAttribute("data-engine", piece.engine);
        pre.append(holder);
        line = null;
      }
      if (!line || !line.classList.contains("line") || line.getAttribute("data-open") !== "true") {
        line = el("span", { class: `line line-${piece.kind}`, "data-open": "true" });
        if (piece.kind === "header") {
          line.setAttribute("tabindex", "-1");
          line.setAttribute("role", "button");
          line.setAttribute("aria-expanded", "true");
        }
        holder.append(line);
        lines += 1;
      }
      for (const [cls, text] of piece.spans) {
        line.append(cls ? el("span", { class: cls, text }) : document.createTextNode(text));
      }
      if (piece.nl) {
        line.setAttribute("data-open", "false");
        line.append("\n");
      }
    }
    while (lines > MAX_LANE_LINES && pre.firstElementChild) {
      const first = pre.firstElementChild;
      lines -= first.classList.contains("call") ? first.querySelectorAll(".line").length : 1;
      first.remove();
    }
    pre.setAttribute("data-lines", String(lines));
    if (stick) pre.scrollTop = pre.scrollHeight;
  }

  function onLane(data) {
    const pre = laneBox(data.participant);
    if (data.reset) { pre.replaceChildren(); pre.setAttribute("data-lines", "0"); }
    addPieces(pre, data.pieces);
  }

  // --- the event stream -------------------------------------------------------------------------
  let source = null;
  let live = true;
  const connection = $("#connection");

  let downSince = null;
  let probing = false;
  // How long the stream may be down before the page asks the address whether a panel is there.
  const GONE_AFTER_MS = 8000;

  function clockTime(ms) {
    return new Date(ms).toTimeString().slice(0, 8);
  }

  function setConnection(state, text) {
    connection.setAttribute("data-state", state);
    setText(connection, text);
    // Data shown while the page hears nothing is greyed and said to be old (never live-looking).
    const stale = state === "down";
    if (stale && downSince === null) downSince = Date.now();
    if (!stale) downSince = null;
    document.body.classList.toggle("stale", stale);
    const banner = $("#stale-note");
    banner.hidden = !stale;
    if (stale && !banner.getAttribute("data-said")) {
      banner.setAttribute("data-said", "true");
      setText(banner, `Disconnected from the panel since ${clockTime(downSince)}: what this page shows may be out of date. Reconnecting…`);
    }
    if (!stale) { banner.removeAttribute("data-said"); setText(banner, ""); }
  }

  async function probeGone() {
    // The stream has been down a while: is a panel at this address at all, and does it know
    // this page's session? Said plainly, since reconnecting cannot fix either.
    if (probing || downSince === null || Date.now() - downSince < GONE_AFTER_MS) return;
    probing = true;
    let said;
    try {
      const answer = await fetch("/api/status", { credentials: "same-origin", cache: "no-store",
                                                  signal: AbortSignal.timeout(5000) });
      if (answer.status === 401) {
        said = "The panel at this address does not know this page's session (it was started again with a new token): open the URL `autodev panel` printed.";
      }
    } catch (err) {
      said = `No panel answers at ${location.host} since ${clockTime(downSince)}. If \`autodev panel\` was started again on another port, open the URL it printed; this page keeps trying here.`;
    } finally {
      probing = false;
    }
    if (said && downSince !== null) {
      setText($("#stale-note"), said);
      $("#stale-note").setAttribute("data-gone", "true");
      setText(connection, "panel gone");
    }
  }
  setInterval(probeGone, 2000);

  function connect() {
    const url = lastRevision === null ? "/events" : `/events?after=${lastRevision}`;
    source = new EventSource(url, { withCredentials: true });
    // "live" once the stream's first event (always the status) is shown, not when it opens.
    source.addEventListener("error", () => {
      if (source && source.readyState === EventSource.CLOSED) {
        setConnection("down", "reconnecting…");
        setTimeout(() => { if (live) connect(); }, 3000);
      } else {
        setConnection("down", "reconnecting…");
      }
    });
    source.addEventListener("status", (e) => {
      $("#stale-note").removeAttribute("data-gone");
      renderStatus(JSON.parse(e.data));
      if (connection.getAttribute("data-state") !== "live") setConnection("live", "live");
    });
    source.addEventListener("post", (e) => addPost(JSON.parse(e.data)));
    source.addEventListener("lane", (e) => onLane(JSON.parse(e.data)));
    source.addEventListener("resync", () => {
      source.close();
      thread.replaceChildren(); seqs.clear(); lastRevision = null; oldestRevision = null;
      pending = []; pendingAt = 0;
      connect();
    });
  }

  $("#live-toggle").addEventListener("click", (e) => {
    live = !live;
    const button = e.currentTarget;
    button.setAttribute("aria-pressed", live ? "false" : "true");
    button.textContent = live ? "Pause live updates" : "Resume live updates";
    if (live) { connect(); } else { source.close(); setConnection("paused", "live updates paused"); }
  });

  // --- controls -----------------------------------------------------------------------------
  async function send(path, init) {
    const headers = Object.assign({ "X-Autodev-CSRF": CSRF }, init.headers || {});
    const answer = await fetch(path, Object.assign({}, init, { headers, credentials: "same-origin" }));
    let body = {};
    try { body = await answer.json(); } catch (err) { body = { error: `HTTP ${answer.status}` }; }
    return { ok: answer.ok, status: answer.status, body };
  }

  function updateControls() {
    if (READ_ONLY) return;
    for (const id of ["#pause", "#resume", "#stop"]) {
      const button = $(id);
      if (button) button.disabled = !daemonRunning;
    }
    const offline = $("#controls-offline");
    if (offline) offline.hidden = daemonRunning;
  }

  async function control(command) {
    setText("#control-result", `${command}: sending…`);
    const answer = await send(`/api/${command}`, { method: "POST" });
    setText("#control-result", answer.ok ? answer.body.message : `${command} refused: ${answer.body.error}`);
  }

  if (!READ_ONLY) {
    let saying = false;
    $("#say-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      // One message per Send: a second click (a double-click) while the first is on its way
      // is ignored, and Send is off until the answer comes.
      if (saying) return;
      const box = $("#say-message");
      const message = box.value;
      if (!message.trim()) { setText("#say-result", "say needs a message."); return; }
      saying = true;
      $("#say-send").disabled = true;
      setText("#say-result", "sending…");
      let answer;
      try {
        answer = await send("/api/say", {
          method: "POST",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ message }).toString(),
        });
      } catch (err) {
        answer = { ok: false, body: { error: "the panel did not answer; your text is kept" } };
      } finally {
        saying = false;
        $("#say-send").disabled = false;
      }
      if (!answer.ok) { setText("#say-result", `not queued: ${answer.body.error}`); return; }
      if (box.value === message) box.value = "";
      waitingFor = answer.body.key;
      const already = thread.querySelector(`.post[data-key="${CSS.escape(waitingFor)}"]`);
      if (already) {
        setText("#say-result", `queued → in the thread at revision ${already.getAttribute("data-revision")}`);
        waitingFor = null;
      } else {
        setText("#say-result", answer.body.daemon_running ? "queued → waiting for the daemon to post it"
          : "queued → the daemon is not running: posted when the run starts again");
      }
    });
    $("#pause").addEventListener("click", () => control("pause"));
    $("#resume").addEventListener("click", () => control("resume"));
    const dialog = $("#stop-dialog");
    $("#stop").addEventListener("click", () => dialog.showModal());
    $("#stop-cancel").addEventListener("click", () => { dialog.close(); $("#stop").focus(); });
    $("#stop-confirm").addEventListener("click", async () => {
      dialog.close(); $("#stop").focus();
      await control("stop");
    });
  }

  // --- prompt editing -------------------------------------------------------------------------
  const promptDialog = $("#prompt-dialog");
  let promptFor = null;
  let promptEtag = null;
  let promptOpener = null;
  let promptSaved = ""; // the text last read from or written to the file: unsaved if it differs

  function promptDirty() {
    return $("#prompt-text").value !== promptSaved;
  }

  function showTheirs(text) {
    const theirs = $("#prompt-theirs-box");
    theirs.hidden = text === null;
    $("#prompt-theirs").value = text === null ? "" : text;
  }

  function askDiscard(ask) {
    $("#prompt-discard").hidden = !ask;
    if (ask) $("#prompt-keep").focus();
  }

  async function openPrompt(id) {
    promptOpener = document.activeElement;
    promptFor = id;
    setText("#prompt-title", `Edit ${id}'s prompt`);
    setText("#prompt-error", ""); setText("#prompt-result", ""); setText("#prompt-path", "");
    showTheirs(null); askDiscard(false);
    const answer = await fetch(`/api/prompt/${encodeURIComponent(id)}`, { credentials: "same-origin" });
    const body = await answer.json().catch(() => ({ error: `HTTP ${answer.status}` }));
    $("#prompt-text").value = answer.ok ? body.text : "";
    promptSaved = $("#prompt-text").value;
    promptEtag = answer.ok ? body.etag : null;
    setText("#prompt-path", answer.ok ? body.path : "");
    if (!answer.ok) setText("#prompt-error", body.error);
    $("#prompt-save").disabled = !answer.ok || READ_ONLY;
    promptDialog.showModal();
    $("#prompt-text").focus();
  }

  function closePrompt() {
    promptDialog.close();
    if (promptOpener && promptOpener.focus) promptOpener.focus();
  }
  function closeOrAsk() {
    // Unsaved text is never dropped without asking (Escape, Close).
    if (promptDirty()) { askDiscard(true); return; }
    closePrompt();
  }
  $("#prompt-cancel").addEventListener("click", closeOrAsk);
  promptDialog.addEventListener("cancel", (e) => { e.preventDefault(); closeOrAsk(); });
  $("#prompt-keep").addEventListener("click", () => { askDiscard(false); $("#prompt-text").focus(); });
  $("#prompt-drop").addEventListener("click", () => { askDiscard(false); promptSaved = $("#prompt-text").value; closePrompt(); });
  promptDialog.addEventListener("close", () => { if (promptOpener && promptOpener.focus) promptOpener.focus(); });

  $("#prompt-save").addEventListener("click", async () => {
    setText("#prompt-error", ""); setText("#prompt-result", "saving…");
    const sent = $("#prompt-text").value;
    const answer = await send(`/api/prompt/${encodeURIComponent(promptFor)}`, {
      method: "PUT",
      headers: { "Content-Type": "application/json", "If-Match": promptEtag || "" },
      body: JSON.stringify({ text: sent }),
    });
    if (answer.ok) {
      promptEtag = answer.body.etag;
      promptSaved = sent;
      showTheirs(null);
      setText("#prompt-result", answer.body.applies_from);
      return;
    }
    setText("#prompt-result", "");
    if (answer.status === 409) {
      // The operator's text stays where they wrote it; the file's is shown beside it. Saving
      // again writes the editor's text over the file's newer one: the operator merges first.
      setText("#prompt-error", `${answer.body.error} Not saved: your text is kept in the editor and the file's newer text is shown beside it; merge what you need into yours, then Save again to replace the file's.`);
      showTheirs(answer.body.text);
      promptEtag = answer.body.etag;
    } else {
      setText("#prompt-error", answer.body.error || `HTTP ${answer.status}`);
    }
  });

  // --- keyboard: `/` focuses Say, outside text fields -------------------------------------------
  document.addEventListener("keydown", (e) => {
    const inField = e.target.closest && e.target.closest("input, textarea, select, [contenteditable]");
    if (e.key === "/" && !inField && !e.ctrlKey && !e.metaKey && !e.altKey) {
      const box = $("#say-message");
      if (box) { e.preventDefault(); box.focus(); }
    }
  });

  updateControls();
  connect();
})();
