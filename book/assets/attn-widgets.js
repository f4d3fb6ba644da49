// Loaded between require.js and the ipywidgets HTML manager on pages with saved widgets (see _config.yml).
(function () {
  // The manager's webpack chunks (Font Awesome's fonts) are fetched relative to its AMD module name:
  // map that name to the vendored copy in _static/vendor/html-manager.
  var base = document.currentScript.src.replace(/attn-widgets\.js.*$/, "");
  window.require.config({paths: {"@jupyter-widgets/html-manager/dist": base + "vendor/html-manager"}});

  // Accessibility of the saved panels (the "Saved state" note above them, book/_ext/offline_book.py): no kernel
  // runs behind them, so their controls are disabled for keyboards and assistive technology too (CSS alone only
  // stops the mouse), and a slider's handle is named after the slider's label (ipywidgets leaves it nameless).
  // The manager draws the panels after the load event: each note's cell is watched and its panel fixed as it grows.
  function makeInert(panel) {
    panel.querySelectorAll("input, select, textarea, button").forEach(function (control) {
      control.disabled = true;
    });
    panel.querySelectorAll("[contenteditable]").forEach(function (readout) {  // a slider's editable readout
      readout.contentEditable = "false";
    });
    panel.querySelectorAll(".noUi-target").forEach(function (slider) {
      slider.setAttribute("disabled", "");  // noUiSlider then ignores keys
    });
    panel.querySelectorAll('[role="slider"]').forEach(function (handle) {
      handle.setAttribute("aria-disabled", "true");
      handle.setAttribute("tabindex", "-1");
      var box = handle.closest(".widget-slider");
      var label = box && box.querySelector(".widget-label");
      var name = label && (label.textContent || "").trim();
      if (name && !handle.hasAttribute("aria-label")) { handle.setAttribute("aria-label", name); }
    });
  }
  // On a phone a panel's plot keeps 80 % of its size and scrolls sideways in its box (attn-book.css): the box
  // takes the keyboard's focus, so that arrow keys scroll it too.
  function scrollableByKeys(panel) {
    panel.querySelectorAll(".widget-html-content").forEach(function (box) {
      if (box.querySelector("img") && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", "plot (scrolls sideways on a narrow screen)");
      }
    });
  }
  function watchSavedPanels() {
    document.querySelectorAll(".attn-kernel-note").forEach(function (note) {
      var cell = note.parentNode;
      var fix = function () {
        var panel = note.nextElementSibling;
        if (panel && panel.classList.contains("widget-subarea")) { makeInert(panel); scrollableByKeys(panel); }
      };
      fix();
      new MutationObserver(fix).observe(cell, {childList: true, subtree: true});
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", watchSavedPanels);
  } else {
    watchSavedPanels();
  }

  // ipywidgets 8 typesets labels with MathJax 2's API (MathJax.Hub.Queue); the book loads MathJax 3.
  // Until MathJax 3 is ready, keep the elements; then typeset them with its own API.
  var mj = window.MathJax;
  if (!mj || mj.version) { return; }
  var pending = [];
  mj.Hub = {Queue: function (job) { pending.push(job && job[2]); }};
  mj.startup = mj.startup || {};
  mj.startup.ready = function () {
    MathJax.startup.defaultReady();
    MathJax.Hub = {Queue: function (job) { MathJax.typesetPromise(job && job[2] ? [job[2]] : undefined); }};
    MathJax.startup.promise.then(function () {
      var nodes = pending.filter(function (n) { return n; });
      if (nodes.length) { return MathJax.typesetPromise(nodes); }
    });
  };
})();
