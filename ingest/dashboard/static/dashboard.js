// poolq dashboard: refreshes the page's <main> from the server (?part=main) every
// data-refresh seconds, and sends the actions (cancel, dead letters' retry and drop) with the
// token as an Authorization header after a confirmation. No inline scripts: the page's CSP
// allows this file only.
"use strict";

(function () {
  const body = document.body;
  const refreshS = Number(body.dataset.refresh || 0);
  const tokenBox = document.getElementById("token");
  const notice = document.getElementById("notice");
  const TOKEN_KEY = "poolq-dashboard-token";
  let busy = false;

  if (tokenBox) {
    tokenBox.value = sessionStorage.getItem(TOKEN_KEY) || "";
    tokenBox.addEventListener("change", function () {
      sessionStorage.setItem(TOKEN_KEY, tokenBox.value);
    });
  }

  function say(text, bad) {
    if (!notice) return;
    notice.textContent = text;
    notice.className = bad ? "bad" : "good";
  }

  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const url = new URL(window.location.href);
      url.searchParams.set("part", "main");
      const r = await fetch(url, { headers: { Accept: "text/html" }, cache: "no-store" });
      if (r.ok) {
        const main = document.getElementById("main");
        // the server's HTML, autoescaped there; assigned markup never runs scripts
        main.innerHTML = await r.text();
        body.dataset.refreshed = String(Date.now());
      }
    } catch (e) {
      say("refresh failed: " + e, true);
    } finally {
      busy = false;
    }
  }

  async function act(button) {
    const question = button.dataset.confirm || "Are you sure?";
    if (!window.confirm(question)) return;
    const token = tokenBox ? tokenBox.value.trim() : "";
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    try {
      const r = await fetch(button.dataset.url, {
        method: "POST",
        headers: headers,
        body: button.dataset.body || "{}",
      });
      const data = await r.json().catch(function () { return {}; });
      if (r.ok) {
        say("done: " + JSON.stringify(data), false);
      } else {
        say(r.status + ": " + (data.error || r.statusText), true);
      }
    } catch (e) {
      say("request failed: " + e, true);
    }
    await refresh();
  }

  document.addEventListener("click", function (ev) {
    const button = ev.target.closest("button.act");
    if (button) {
      ev.preventDefault();
      act(button);
    }
  });

  if (refreshS > 0) {
    window.setInterval(refresh, Math.max(1, refreshS) * 1000);
  }
})();
