// Chapter 11's model in the reader's browser (attn/viz/live.py): a sentence typed in the page is tokenized
// (wordpiece.js), run through all-MiniLM-L6-v2 by ONNX Runtime Web, and every head's attention is drawn: all
// 6 x 12 as thumbnails, the chosen one large in the book's own viewer (viewer.js, run for a fresh container the
// way a notebook host runs it). No server, no kernel: the files come from the built book's _static folder.
// Nothing the reader types is parsed as HTML: every token reaches the page as text.
// live.py fills in its two markers: the container's id (in the query below) and CONFIG (a JSON object).
(function () {
"use strict";
var CONFIG = __LIVE_CONFIG__;
var root = Array.prototype.filter.call(document.querySelectorAll('[id="__LIVE_ID__"]'), function (r) {
  return !r.dataset.ready; })[0];
if (!root) { return; }
root.dataset.ready = "1";
root.dataset.state = "idle";
window.attnLiveViews = (window.attnLiveViews || 0) + 1;
var uid = root.id + "-" + window.attnLiveViews;  // unique on the page, even for two identical views
var fallback = root.querySelector(".al-fallback");
if (fallback) { root.removeChild(fallback); }

function el(tag, cls, text) {
  var e = document.createElement(tag); if (cls) { e.className = cls; }
  if (text !== undefined) { e.textContent = text; } return e;
}
function code(text) { return el("code", "", text); }
function say(node, parts) {  // node's content: strings become text, elements stay elements
  node.textContent = "";
  parts.forEach(function (p) { node.appendChild(typeof p === "string" ? document.createTextNode(p) : p); });
}
function mb(bytes) { return (bytes / 1e6).toFixed(1) + " MB"; }
function thousands(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
function seconds(ms) { return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s"; }

var form = el("form", "al-form"), label = el("label", "al-label"), box = el("textarea", "al-text");
var button = el("button", "al-go", "Show its attention");
label.appendChild(el("span", "", "Your sentence")); label.appendChild(box);
box.rows = 2; box.maxLength = CONFIG.max_chars; box.value = CONFIG.sentence; box.spellcheck = false;
button.type = "submit";
form.appendChild(label); form.appendChild(button);
var status = el("div", "al-status"), message = el("div", "al-message");
status.id = uid + "-status"; status.setAttribute("role", "status"); status.setAttribute("aria-live", "polite");
message.id = uid + "-message"; message.setAttribute("role", "alert");  // refusals and cuts are announced at once
box.setAttribute("aria-describedby", status.id + " " + message.id);
var meter = el("div", "al-meter"), progress = el("progress", "al-progress"), loaded = el("span", "al-loaded");
progress.id = uid + "-progress"; progress.setAttribute("aria-label", "model and runtime downloaded");
meter.appendChild(progress); meter.appendChild(loaded); meter.hidden = true;
var result = el("div", "al-result");
root.appendChild(form); root.appendChild(status); root.appendChild(meter); root.appendChild(message);
root.appendChild(result);

function python() {  // the same in a live kernel, in Python
  return el("pre", "al-python", CONFIG.python);
}

// --- where the page runs --------------------------------------------------------------------------------------
var contentRoot = document.documentElement.dataset.content_root;
if (contentRoot === undefined) {  // not the built book (a live notebook, a saved page): no _static folder
  form.hidden = true; root.dataset.state = "unavailable";
  say(status, ["The live model runs in the online book, in your browser. Here, in a notebook, do the same in Python:"]);
  root.appendChild(python());
  return;
}
if (location.protocol === "file:") {  // the browser will not let a page read files next to it
  form.hidden = true; root.dataset.state = "unavailable";
  var book = new URL(contentRoot, location.href), folder = decodeURIComponent(book.pathname);
  if (/^\/[A-Za-z]:\//.test(folder)) { folder = folder.slice(1); }  // Windows: /C:/... -> C:/...
  var page = location.href.slice(book.href.length).split("#")[0];
  say(status, ["This page was opened from a file, and the browser blocks a page opened from a file from loading ",
    "the model next to it. Serve the book's folder instead: run ",
    code("python -m http.server --directory " + (/^[\w\/.:~-]+$/.test(folder) ? folder : JSON.stringify(folder))),
    " (in the book's repository: ", code("python -m http.server --directory _build/html"), "), then open ",
    code("http://localhost:8000/" + page), "."]);
  return;
}
var LIVE = new URL(contentRoot + CONFIG.live, location.href).href;
var ORT = new URL(contentRoot + CONFIG.ort, location.href).href;
var WASM = "ort-wasm-simd-threaded.wasm";  // the runtime's WebAssembly next to ort.wasm.min.js (book/vendor.py)

// --- loading, once per page: the manifest now (a few bytes), the rest on the reader's first request ----------
var shared = window.attnLiveShared = window.attnLiveShared || {};
function getJSON(url) {
  return fetch(url).then(function (r) {
    if (!r.ok) { throw new Error("HTTP " + r.status + " for " + url); } return r.json(); });
}
function getText(url) {
  return fetch(url).then(function (r) {
    if (!r.ok) { throw new Error("HTTP " + r.status + " for " + url); } return r.text(); });
}
if (!shared.manifest) { shared.manifest = getJSON(LIVE + "manifest.json"); }
function idle(m) {
  say(status, ["The model (" + mb(m.bytes) + ") loads only when you ask: type a sentence and press \u201c" +
    button.textContent + "\u201d."]);
}
say(status, ["The model loads only when you ask: type a sentence and press \u201c" + button.textContent + "\u201d."]);
shared.manifest.then(idle, function (e) {
  form.hidden = true; root.dataset.state = "unavailable";
  say(status, ["This copy of the book has no live model (" + e.message + "). Do the same in Python:"]);
  root.appendChild(python());
});

function loadOrt() {
  if (window.ort && window.ort.InferenceSession) { return Promise.resolve(window.ort); }
  if (!shared.ort) {
    shared.ort = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = ORT + "ort.wasm.min.js";
      s.onload = function () { resolve(window.ort); };
      s.onerror = function () { shared.ort = null; reject(new Error("could not load " + s.src)); };
      document.head.appendChild(s);
    });
  }
  return shared.ort;
}

function download(url, size, onProgress) {  // the bytes of url, reporting (received, total) as they arrive
  return fetch(url).then(function (r) {
    if (!r.ok) { throw new Error("HTTP " + r.status + " for " + url); }
    var length = +r.headers.get("Content-Length");
    var total = length && !r.headers.get("Content-Encoding") ? length : size;  // compressed: the manifest's size
    if (!r.body || !r.body.getReader) {
      return r.arrayBuffer().then(function (b) { onProgress(b.byteLength, total); return new Uint8Array(b); });
    }
    var reader = r.body.getReader(), chunks = [], received = 0;
    function next() {
      return reader.read().then(function (step) {
        if (step.done) {
          var bytes = new Uint8Array(received), at = 0;
          chunks.forEach(function (c) { bytes.set(c, at); at += c.length; });
          return bytes;
        }
        chunks.push(step.value); received += step.value.length; onProgress(received, total);
        return next();
      });
    }
    return next();
  });
}

function hex(buffer) {
  return Array.from(new Uint8Array(buffer)).map(function (b) { return (b < 16 ? "0" : "") + b.toString(16); })
    .join("");
}

function loadModel() {  // -> {session, vocab, manifest, timing}; one promise per page, retried after a failure
  if (shared.model) { return shared.model; }
  var t0 = performance.now(), timing = {};
  shared.model = shared.manifest.then(function (m) {
    say(status, ["Loading the model (" + mb(m.bytes) + ") and its runtime\u2026"]);
    meter.hidden = false; progress.max = m.bytes; progress.value = 0; loaded.textContent = "0 MB";
    // One counter for both downloads: the model, and the runtime's WebAssembly (fetched here rather than by ONNX
    // Runtime, which would fetch it silently while the model is prepared). Its size comes with its first bytes;
    // a compressed answer does not tell it, and then the total grows with what arrived.
    var got = {model: 0, wasm: 0}, want = {model: m.bytes, wasm: 0};
    function counted(part) {
      return function (received, total) {
        got[part] = received; want[part] = Math.max(total || 0, received);
        var have = got.model + got.wasm, all = want.model + want.wasm;
        progress.max = all; progress.value = Math.min(have, all);
        loaded.textContent = mb(have) + " of " + mb(all);
      };
    }
    var vocab = getText(LIVE + m.vocab).then(window.attnWordPiece.vocabulary);
    var bytes = download(LIVE + m.model, m.bytes, counted("model"));
    var wasm = download(ORT + WASM, 0, counted("wasm"));
    return Promise.all([loadOrt(), vocab, bytes, wasm]).then(function (all) {
      var ort = all[0], data = all[2];
      timing.download_ms = performance.now() - t0;
      meter.hidden = true;
      say(status, ["Preparing the model\u2026"]);
      if (data.length !== m.bytes) {
        throw new Error("the model file has " + data.length + " bytes, the manifest says " + m.bytes);
      }
      var checked = window.crypto && crypto.subtle ? crypto.subtle.digest("SHA-256", data).then(function (d) {
        if (hex(d) !== m.sha256) { throw new Error("the model file is damaged: its SHA-256 is not the manifest's"); }
      }) : Promise.resolve();  // no crypto.subtle outside secure contexts: the size check above must do
      return checked.then(function () {
        ort.env.wasm.wasmPaths = ORT;  // its loader (.mjs) still comes from there
        ort.env.wasm.wasmBinary = all[3];  // the WebAssembly downloaded above: ONNX Runtime does not fetch it again
        if (!window.crossOriginIsolated) { ort.env.wasm.numThreads = 1; }  // threads need cross-origin isolation
        var t1 = performance.now();
        return ort.InferenceSession.create(data, {executionProviders: ["wasm"]}).then(function (session) {
          timing.session_ms = performance.now() - t1;
          timing.load_ms = performance.now() - t0;
          return {session: session, vocab: all[1], manifest: m, ort: ort, timing: timing};
        });
      });
    });
  });
  shared.model.catch(function () { shared.model = null; meter.hidden = true; });
  return shared.model;
}

// --- one sentence -----------------------------------------------------------------------------------------------
var chosen = {layer: 0, head: 0}, runs = 0, busy = false;
function setBusy(on) {  // aria-disabled, not disabled: a disabled button loses the focus; clicks are ignored
  busy = on; button.setAttribute("aria-disabled", String(on));
}
setBusy(false);
var CUT = "The box takes at most " + thousands(CONFIG.max_chars) + " characters: the rest was cut.";
function refuse(text) {
  say(message, [text]); message.className = "al-message al-refused"; box.focus();
}
form.addEventListener("submit", function (e) {
  e.preventDefault();
  if (busy) { return; }
  var text = box.value;
  if (!text.trim()) { refuse("Type a sentence first: the box is empty."); return; }
  setBusy(true); root.dataset.state = "loading";
  say(message, []); message.className = "al-message";
  var first = !shared.session;
  loadModel().then(function (model) {
    var encoded = window.attnWordPiece.encode(model.vocab, text, model.manifest.max_tokens);
    if (encoded.tokens.length <= 2) {
      throw {refused: "Nothing to read: the text has no character the tokenizer keeps (letters, digits, " +
        "punctuation, symbols)."};
    }
    if (encoded.tokens.indexOf("[PAD]") >= 0) {  // attn masks [PAD] keys; the one-sentence graph has no mask
      throw {refused: "[PAD] is the padding token, which the model never reads: take it out of the text."};
    }
    if (encoded.truncated) {
      say(message, ["Only the first " + model.manifest.max_tokens + " tokens are shown: your text has " +
        encoded.total + " word pieces with [CLS] and [SEP], and the model reads at most " +
        model.manifest.max_tokens + "."]);
      message.className = "al-message al-truncated";
    }
    say(status, ["Running the model on " + encoded.tokens.length + " tokens\u2026"]);
    // let the status paint before the (blocking) run
    return new Promise(function (r) { setTimeout(r, 0); }).then(function () { return run(model, encoded, first); });
  }).then(function (out) {
    shared.session = true;
    draw(out);
    runs += 1; root.dataset.runs = String(runs); root.dataset.state = "ready";
    var t = out.timing, took = "the model ran in " + seconds(t.run_ms);
    if (first && t.load_ms) { took += " (loading it took " + seconds(t.load_ms) + ")"; }
    say(status, ["Done: " + out.tokens.length + " tokens, " + took + ". Layer " + (chosen.layer + 1) + ", head " +
      (chosen.head + 1) + " is shown large; choose another below."]);
  }).catch(function (err) {
    if (err && err.refused) { root.dataset.state = "ready"; say(status, []); refuse(err.refused); return; }
    root.dataset.state = "error";
    say(status, ["Could not run the model: " + (err && err.message ? err.message : String(err)) +
      ". Press the button to try again."]);
  }).then(function () { setBusy(false); });
});
box.addEventListener("input", function () {  // the box keeps max_chars characters: text that reaches it says so
  var full = box.value.length >= CONFIG.max_chars;
  if (box.value.length > CONFIG.max_chars) {  // set by a script: maxLength does not apply
    var keep = CONFIG.max_chars;
    if (/[\ud800-\udbff]/.test(box.value.charAt(keep - 1))) { keep -= 1; }  // not half a character
    box.value = box.value.slice(0, keep);
  }
  if (full) {
    say(message, [CUT]); message.className = "al-message al-truncated";
  } else if (message.textContent === CUT) {
    say(message, []); message.className = "al-message";
  }
});
box.addEventListener("keydown", function (e) {  // Enter reads the sentence; Shift+Enter starts a new line
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(button); }
});

function run(model, encoded, first) {
  var ort = model.ort, T = encoded.ids.length, m = model.manifest;
  var ids = new BigInt64Array(T), mask = new BigInt64Array(T);
  encoded.ids.forEach(function (id, i) { ids[i] = BigInt(id); mask[i] = BigInt(1); });
  var feeds = {input_ids: new ort.Tensor("int64", ids, [1, T])};
  if (model.session.inputNames.indexOf("attention_mask") >= 0) {  // one sentence, no padding: every token counts
    feeds.attention_mask = new ort.Tensor("int64", mask, [1, T]);
  }
  var t0 = performance.now();
  return model.session.run(feeds).then(function (outputs) {
    var runMs = performance.now() - t0, attention = [];
    for (var l = 0; l < m.layers; l++) {
      var out = outputs["attention_" + l];
      if (!out || out.dims.join() !== [1, m.heads, T, T].join()) {
        throw new Error("the model's attention_" + l + " is not (1, " + m.heads + ", " + T + ", " + T + ")");
      }
      var heads = [];
      for (var h = 0; h < m.heads; h++) {
        var rows = [];
        for (var i = 0; i < T; i++) { rows.push(out.data.subarray((h * T + i) * T, (h * T + i + 1) * T)); }
        heads.push(rows);
      }
      attention.push(heads);
    }
    var timing = first ? Object.assign({}, model.timing, {run_ms: runMs}) : {run_ms: runMs};
    var live = {tokens: encoded.tokens, ids: encoded.ids, truncated: encoded.truncated, total: encoded.total,
      attention: attention, timing: timing};
    root.attnLive = live;
    return live;
  });
}

// --- drawing: the thumbnails, then the chosen head large in the book's viewer -----------------------------------
var stops = CONFIG.stops.map(function (h) {
  return [1, 3, 5].map(function (i) { return parseInt(h.slice(i, i + 2), 16); }); });
var ramp = [];  // 256 colours of viridis, as the viewer computes them
for (var q = 0; q < 256; q++) {
  var t = q / 255 * (stops.length - 1), k = Math.min(stops.length - 2, Math.floor(t)), f = t - k;
  ramp.push([0, 1, 2].map(function (c) { return Math.round(stops[k][c] + f * (stops[k + 1][c] - stops[k][c])); }));
}
var thumbs = null, buttons = [], holder = null, viewerRoot = null, draws = 0;
// viewer.js adds a "resize" listener to window and never removes it (a notebook draws a viewer once). Here it runs
// for every sentence: the listeners it adds are caught while it runs and removed before the next sentence's
// viewer, else each would keep its old viewer alive.
var viewerListeners = [];  // [listener, options]

function runViewer(renderer) {  // insert the viewer's script (it runs at once), catching its "resize" listeners
  var own = Object.prototype.hasOwnProperty.call(window, "addEventListener"), add = window.addEventListener;
  window.addEventListener = function (type, listener, options) {
    if (type === "resize") { viewerListeners.push([listener, options]); }
    return add.apply(this, arguments);
  };
  try {
    holder.appendChild(renderer);
  } finally {
    if (own) { window.addEventListener = add; } else { delete window.addEventListener; }
  }
}

function paint(canvas, rows) {
  var T = rows.length, ctx = canvas.getContext("2d");
  canvas.width = T; canvas.height = T;
  if (!ctx) { return; }
  var image = ctx.createImageData(T, T), px = image.data;
  for (var i = 0; i < T; i++) {
    for (var j = 0; j < T; j++) {
      var c = ramp[Math.max(0, Math.min(255, Math.round(rows[i][j] * 255)))], o = (i * T + j) * 4;
      px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2]; px[o + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}

function buildThumbs(layers, heads) {
  thumbs = el("div", "al-heads");
  thumbs.setAttribute("role", "group");
  thumbs.setAttribute("aria-label", "All " + layers * heads + " heads, a row per layer: choose one to show it " +
    "large (arrow keys move between them)");
  thumbs.style.gridTemplateColumns = "max-content repeat(" + heads + ", max-content)";
  // no-break spaces: on a narrow screen the corner breaks into two lines, "layer \u2193" over "head \u2192"
  thumbs.appendChild(el("span", "al-corner", "layer\u00a0\u2193 head\u00a0\u2192")).setAttribute("aria-hidden", "true");
  for (var h = 0; h < heads; h++) {
    thumbs.appendChild(el("span", "al-colhead", String(h + 1))).setAttribute("aria-hidden", "true");
  }
  buttons = [];
  for (var l = 0; l < layers; l++) {
    thumbs.appendChild(el("span", "al-rowhead", String(l + 1))).setAttribute("aria-hidden", "true");
    for (h = 0; h < heads; h++) {
      var b = el("button", "al-thumb");
      b.type = "button"; b.dataset.layer = l; b.dataset.head = h;
      b.setAttribute("aria-label", "layer " + (l + 1) + ", head " + (h + 1));
      b.appendChild(el("canvas")).setAttribute("aria-hidden", "true");
      b.addEventListener("click", function () { choose(+this.dataset.layer, +this.dataset.head, false); });
      thumbs.appendChild(b); buttons.push(b);
    }
  }
  thumbs.addEventListener("keydown", function (e) {
    var step = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]}[e.key];
    var l = chosen.layer, h = chosen.head;
    if (step) { l += step[0]; h += step[1]; } else if (e.key === "Home") { h = 0; } else if (e.key === "End") {
      h = heads - 1; } else { return; }
    e.preventDefault();
    choose(Math.max(0, Math.min(layers - 1, l)), Math.max(0, Math.min(heads - 1, h)), true);
  });
  holder = el("div", "al-big");
  result.textContent = "";
  result.appendChild(el("div", "al-caption", "All heads: each square is one head's weights, query rows by " +
    "key columns (brighter: more attention)."));
  result.appendChild(thumbs); result.appendChild(holder);
}

function mark() {  // the chosen thumbnail: pressed, and the one Tab reaches
  var heads = +thumbs.dataset.heads;
  buttons.forEach(function (b, n) {
    var on = n === chosen.layer * heads + chosen.head;
    b.setAttribute("aria-pressed", String(on)); b.tabIndex = on ? 0 : -1;
  });
}

function choose(layer, head, focus) {  // show (layer, head) large: move the viewer's sliders
  chosen = {layer: layer, head: head};
  mark();
  if (focus) { buttons[layer * +thumbs.dataset.heads + head].focus(); }
  if (!viewerRoot) { return; }
  [["layer", layer], ["head", head]].forEach(function (a) {
    var range = viewerRoot.querySelector('input.av-axis[data-axis="' + a[0] + '"]');
    if (range && +range.value !== a[1]) {
      range.value = a[1]; range.dispatchEvent(new Event("input", {bubbles: true}));
    }
  });
}

function draw(out) {
  var L = out.attention.length, H = out.attention[0].length, T = out.tokens.length;
  if (!thumbs || +thumbs.dataset.layers !== L || +thumbs.dataset.heads !== H) {
    buildThumbs(L, H); thumbs.dataset.layers = L; thumbs.dataset.heads = H;
  }
  chosen = {layer: Math.min(chosen.layer, L - 1), head: Math.min(chosen.head, H - 1)};
  buttons.forEach(function (b) { paint(b.firstChild, out.attention[+b.dataset.layer][+b.dataset.head]); });
  mark();
  // The viewer's payload: weights as integers in units of 10**-decimals, (layer, head, query, key) flattened.
  var scale = Math.pow(10, CONFIG.decimals), w = new Array(L * H * T * T), n = 0;
  out.attention.forEach(function (layer) { layer.forEach(function (rows) { rows.forEach(function (row) {
    for (var j = 0; j < T; j++) { w[n++] = Math.round(row[j] * scale); } }); }); });
  var range = function (k) { return Array.from({length: k}, function (_, i) { return String(i + 1); }); };
  var data = {title: CONFIG.model + " on your sentence (" + T + " tokens)", names: ["query", "key"],
    axes: [{name: "layer", ticks: range(L)}, {name: "head", ticks: range(H)}], scale: scale,
    decimals: CONFIG.decimals, vmax: 1, examples: [{name: "", rows: out.tokens, cols: out.tokens, w: w}]};
  draws += 1;
  viewerRoot = el("div", "attn-viewer");
  viewerRoot.id = uid + "-viewer-" + draws;
  var payload = el("script", "av-data");
  payload.type = "application/json";
  payload.textContent = JSON.stringify(data).replace(/</g, "\\u003c");  // data, never run, never parsed as HTML
  viewerRoot.appendChild(payload);
  viewerListeners.forEach(function (a) { window.removeEventListener("resize", a[0], a[1]); });
  viewerListeners = [];
  holder.textContent = "";
  holder.appendChild(viewerRoot);
  var renderer = document.createElement("script");  // the book's viewer, run as a notebook host runs it
  renderer.text = CONFIG.viewer.split(CONFIG.viewer_id_marker).join(viewerRoot.id);
  runViewer(renderer);
  out.viewerListeners = viewerListeners.length;  // for the tests: the viewer's listeners on window now
  viewerRoot.addEventListener("input", function () {  // the viewer's sliders move the thumbnails' choice too
    var l = viewerRoot.querySelector('input.av-axis[data-axis="layer"]');
    var h = viewerRoot.querySelector('input.av-axis[data-axis="head"]');
    if (l && h) { chosen = {layer: +l.value, head: +h.value}; mark(); }
  });
  var keep = chosen;
  chosen = {layer: 0, head: 0};
  choose(keep.layer, keep.head, false);
}
})();
