// The console's only script besides htmx: sign-in links, copy buttons,
// the setup guide's tabs and its RUN_AS field, and the byte counters of
// the template forms. Pages work without it, except the copy buttons.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // A one-time sign-in link carries its code in the fragment, which the
  // browser never sends: post it, then drop it from the address bar.
  const signIn = document.getElementById("sign-in");
  const signInWithLink = () => {
    const code = new URLSearchParams(location.hash.slice(1)).get("code");
    if (!code || !signIn) return;
    history.replaceState(null, "", location.pathname);
    document.getElementById("code").value = code;
    signIn.submit();
  };
  signInWithLink();
  // Opened from the sign-in page itself: only the fragment changed.
  window.addEventListener("hashchange", signInWithLink);

  document.body.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(
      () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1500); },
      () => { button.textContent = "Select and copy"; },
    );
  });

  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));
  const select = (tab) => {
    for (const other of tabs) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
      document.getElementById(other.getAttribute("aria-controls")).hidden = !selected;
    }
    tab.focus();
  };
  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) select(tabs[(index + step + tabs.length) % tabs.length]);
    });
  });

  const runAs = document.querySelector("[data-run-as]");
  if (runAs) {
    runAs.addEventListener("input", () => {
      const user = /^[a-z_][a-z0-9_-]{0,31}$/.test(runAs.value) ? runAs.value : "runner";
      for (const line of document.querySelectorAll('[data-command="linux-install"]')) {
        line.textContent = line.textContent.replace(/RUN_AS=\S+/, "RUN_AS=" + user);
      }
    });
  }

  // A template's .env text and setup script are limited in bytes (UTF-8,
  // line breaks sent as one byte, as the relay stores them).
  const encoder = new TextEncoder();
  for (const area of document.querySelectorAll("textarea[data-max-bytes]")) {
    const counter = document.querySelector('[data-bytes-for="' + area.id + '"]');
    if (!counter) continue;
    const max = Number(area.dataset.maxBytes);
    const count = () => {
      const bytes = encoder.encode(area.value.replace(/\r\n/g, "\n")).length;
      counter.textContent = bytes + " / " + max + " bytes";
      counter.classList.toggle("over", bytes > max);
    };
    area.addEventListener("input", count);
    count();
  }
});
