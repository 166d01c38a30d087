// Skilldesk's own JavaScript: small behaviours htmx does not cover. Pages work without it.
(function () {
  "use strict";
  document.documentElement.classList.add("js");  // shows the controls that need JavaScript (.js-only)

  // Enter sends, Shift+Enter adds a line.
  document.addEventListener("keydown", function (event) {
    var area = event.target;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && area.matches("[data-enter-submits]")) {
      event.preventDefault();
      if (area.value.trim()) area.form.requestSubmit();
    }
  });

  // Confirm destructive forms.
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("[data-confirm]");
    if (form && !window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
  }, true);

  document.addEventListener("click", function (event) {
    var dismiss = event.target.closest("[data-dismiss]");
    if (dismiss) dismiss.parentElement.closest(".alert, .dialog").remove();
    var copy = event.target.closest("[data-copy]");
    if (copy) {
      var source = document.querySelector(copy.getAttribute("data-copy"));
      navigator.clipboard.writeText(source.value || source.textContent).then(function () { copy.textContent = "Copied"; });
    }
    var code = event.target.closest(".copy-code");
    if (code) {
      navigator.clipboard.writeText(code.parentElement.querySelector("code").textContent).then(function () { code.textContent = "Copied"; });
    }
    var theme = event.target.closest("[data-theme-toggle]");
    if (theme) {
      var root = document.documentElement;
      var dark = root.dataset.theme === "dark" || (root.dataset.theme !== "light" && matchMedia("(prefers-color-scheme: dark)").matches);
      root.dataset.theme = dark ? "light" : "dark";
      savePreference("ui", "theme", root.dataset.theme);
    }
    var sidebar = event.target.closest("[data-sidebar-toggle]");
    if (sidebar) {
      var collapsed = document.documentElement.dataset.sidebar !== "collapsed";
      document.documentElement.dataset.sidebar = collapsed ? "collapsed" : "open";
      sidebar.setAttribute("aria-expanded", collapsed ? "false" : "true");
      savePreference("ui", "sidebarCollapsed", collapsed);
    }
  });

  // Proposal cards: the client applies what the user accepts; the server never applies a proposal.
  // A preference goes through the preferences API; a view state changes this page only.
  function decide(card, text) {
    card.querySelectorAll("button").forEach(function (button) { button.disabled = true; });
    card.querySelector(".proposal-decision").textContent = text;
    card.classList.add("decided");
  }
  function refreshRecords(layout) {
    var records = document.getElementById("records");
    if (!records || !window.htmx) return;
    var url = new URL(window.location.href);
    if (layout) url.searchParams.set("layout", layout);
    // The answer is the records, with the Table/Cards toggle and the panels' page context out of band.
    htmx.ajax("GET", url.pathname + url.search, {target: "#records", swap: "outerHTML"});
  }
  document.addEventListener("click", function (event) {
    var accept = event.target.closest("[data-proposal-accept]");
    var refuse = event.target.closest("[data-proposal-refuse]");
    var card = (accept || refuse) && (accept || refuse).closest("[data-proposal]");
    if (!card) return;
    event.preventDefault();  // Accept is also a plain form, for pages without JavaScript
    if (refuse) { decide(card, "Refused."); return; }
    var proposal = JSON.parse(card.getAttribute("data-proposal"));
    if (proposal.kind === "preference") {
      savePreference(proposal.target.namespace, proposal.target.key, proposal.proposed).then(function (response) {
        if (!response.ok) { decide(card, "Could not apply it."); return; }
        decide(card, "Accepted.");
        if (proposal.target.namespace === "ui" && proposal.target.key === "defaultListLayout") refreshRecords();
        if (proposal.target.namespace === "ui" && proposal.target.key === "theme") document.documentElement.dataset.theme = proposal.proposed;
      });
    } else if (proposal.target.view === "layout" && window.location.pathname === "/" + proposal.target.resource) {
      decide(card, "Accepted for this page.");
      refreshRecords(proposal.proposed);
    } else {
      decide(card, "Open " + proposal.target.resource + " to apply it.");
    }
  });

  // Skilldesk's own settings are preferences of the `ui` namespace (PATCH /api/me/preferences).
  function savePreference(namespace, key, value) {
    var headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    var change = {}; change[namespace] = {}; change[namespace][key] = value;
    headers["Content-Type"] = "application/json";
    return fetch("/api/me/preferences", {method: "PATCH", headers: headers, body: JSON.stringify(change),
                                         credentials: "same-origin"});
  }

  // A theme chosen before it was a preference lived in localStorage: move it once.
  try {
    var saved = localStorage.getItem("skilldesk-theme");
    if (saved && document.querySelector("[data-theme-toggle]")) {
      if (document.documentElement.dataset.theme === "auto") {
        document.documentElement.dataset.theme = saved;
        savePreference("ui", "theme", saved);
      }
      localStorage.removeItem("skilldesk-theme");
    }
  } catch (e) { /* private mode */ }

  // Copy buttons on code blocks of rendered answers.
  function decorate(root) {
    root.querySelectorAll(".markdown pre").forEach(function (pre) {
      if (pre.querySelector(".copy-code")) return;
      var button = document.createElement("button");
      button.type = "button"; button.className = "copy-code"; button.textContent = "Copy";
      pre.appendChild(button);
    });
  }

  function scrollTranscript() {
    var transcript = document.getElementById("transcript");
    if (transcript) transcript.scrollTop = transcript.scrollHeight;
  }

  // Confirmations fade after a while; errors stay until dismissed.
  function expireNotices(root) {
    root.querySelectorAll(".alerts .alert.info").forEach(function (alert) {
      setTimeout(function () { alert.remove(); }, 6000);
    });
  }

  // "Show earlier messages" keeps the reader's place: the message that was first stays where it was.
  function scrollerOf(element) {
    for (var node = element.parentElement; node; node = node.parentElement) {
      var overflow = getComputedStyle(node).overflowY;
      if ((overflow === "auto" || overflow === "scroll") && node.scrollHeight > node.clientHeight) return node;
    }
    return document.scrollingElement;
  }
  var anchor = null, anchorTop = 0;
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.target.classList.contains("earlier")) {
      anchor = event.detail.target.nextElementSibling;
      anchorTop = anchor ? anchor.getBoundingClientRect().top : 0;
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (anchor && anchor.isConnected) scrollerOf(anchor).scrollTop += anchor.getBoundingClientRect().top - anchorTop;
    anchor = null;
  });

  // A text box swapped out of band (the composer after a hand-over, for its placeholder) keeps what the user
  // had typed in it; htmx keeps its focus and caret.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var box = event.detail.target, fresh = event.detail.fragment.firstElementChild;
    if (box.matches("textarea") && fresh && fresh.matches("textarea") && fresh.id === box.id) fresh.value = box.value;
  });

  document.addEventListener("DOMContentLoaded", function () { decorate(document); scrollTranscript(); expireNotices(document); });
  document.addEventListener("htmx:afterSettle", function (event) { decorate(event.target); });
  document.addEventListener("htmx:sseMessage", scrollTranscript);
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target.id === "transcript") scrollTranscript();
    var composer = document.getElementById("composer-text");
    if (event.detail.requestConfig && event.detail.requestConfig.elt && event.detail.requestConfig.elt.id === "composer" && composer) composer.focus();
  });
})();
