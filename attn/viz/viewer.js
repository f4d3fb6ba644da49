(function () {
var root = document.currentScript && document.currentScript.previousElementSibling;
if (!root || !root.classList.contains("attn-viewer") || root.dataset.drawn) {
  // Hosts that run the script elsewhere (e.g. appended to <head>): the first undrawn viewer with this id.
  root = Array.prototype.filter.call(document.querySelectorAll('[id="__VIEWER_ID__"]'), function (r) {
    return !r.dataset.drawn; })[0];
}
if (!root) { return; }
var d = JSON.parse(root.querySelector("script.av-data").textContent);
var stops = __VIRIDIS_STOPS__.map(function (h) {
  return [1, 3, 5].map(function (i) { return parseInt(h.slice(i, i + 2), 16); }); });
function colour(t) {
  t = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  var i = Math.min(stops.length - 2, Math.floor(t)), f = t - i, a = stops[i], b = stops[i + 1];
  return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }).join(",") + ")";
}
function el(tag, cls, text) {
  var e = document.createElement(tag); if (cls) { e.className = cls; }
  if (text !== undefined) { e.textContent = text; } return e;
}
var fallback = root.querySelector("em.av-fallback"); if (fallback) { root.removeChild(fallback); }
root.dataset.drawn = "1";
// The chosen cell's id, unique on the page even when one viewer is shown twice (same data, same root id).
window.attnViewers = (window.attnViewers || 0) + 1;
var hitId = root.id + "-hit-" + window.attnViewers;
if (d.title) { root.appendChild(el("div", "av-title", d.title)); }
var controls = el("div", "av-controls"), grid = el("div", "av-grid"), readout = el("div", "av-readout");
readout.setAttribute("aria-live", "polite");
grid.tabIndex = 0;
grid.setAttribute("role", "grid");
grid.setAttribute("aria-label", (d.title ? d.title + ": " : "") + "attention weights, " + d.names[0] + " by " +
  d.names[1] + "; hover over a cell, or use the arrow keys");
var table = el("table", "av-table"), show = el("button", "av-show", "Show as table");
show.type = "button"; show.setAttribute("aria-expanded", "false"); table.hidden = true;
show.addEventListener("click", function () {
  table.hidden = !table.hidden; show.setAttribute("aria-expanded", String(!table.hidden));
  show.textContent = table.hidden ? "Show as table" : "Hide the table"; draw(); });
root.appendChild(controls); root.appendChild(grid); root.appendChild(readout);
// Plain keys typed here stay here: JupyterLab would take them as notebook shortcuts (arrows move the selected
// cell, "d d" deletes it). Keys with Ctrl, Alt or Meta, Escape and Shift+Enter (run the cell) still reach it.
["keydown", "keyup"].forEach(function (type) {
  root.addEventListener(type, function (e) {
    var passes = e.key === "Escape" || (e.key === "Enter" && e.shiftKey) || e.ctrlKey || e.altKey || e.metaKey;
    if (!passes) { e.stopPropagation(); } }); });
var state = {example: 0, pos: d.axes.map(function () { return 0; })};
if (d.examples.length > 1) {
  var menu = el("select", "av-example");
  d.examples.forEach(function (x, i) { var o = el("option", "", x.name); o.value = i; menu.appendChild(o); });
  menu.setAttribute("aria-label", "example");
  menu.addEventListener("change", function () { state.example = +menu.value; draw(); });
  var lab = el("label", "", "example "); lab.appendChild(menu); controls.appendChild(lab);
}
d.axes.forEach(function (axis, a) {
  if (axis.ticks.length < 2) { return; }
  var lab = el("label", "", axis.name + " "), range = el("input", "av-axis"), shown = el("b", "", axis.ticks[0]);
  range.type = "range"; range.min = 0; range.max = axis.ticks.length - 1; range.value = 0; range.step = 1;
  range.dataset.axis = axis.name; range.setAttribute("aria-label", axis.name);
  range.setAttribute("aria-valuetext", axis.name + " " + axis.ticks[0]);
  range.addEventListener("input", function () {
    state.pos[a] = +range.value; shown.textContent = axis.ticks[state.pos[a]];
    range.setAttribute("aria-valuetext", axis.name + " " + axis.ticks[state.pos[a]]); draw(); });
  lab.appendChild(range); lab.appendChild(shown); controls.appendChild(lab);
});
var bar = el("div", "av-bar"), ramp = el("span", "av-ramp");
ramp.style.background = "linear-gradient(to right," + __VIRIDIS_STOPS__.join(",") + ")";
bar.appendChild(el("span", "", "0")); bar.appendChild(ramp); var top = el("span", "av-vmax", "");
bar.appendChild(top); root.appendChild(bar);
controls.appendChild(show); root.appendChild(table);
var corner = d.names[0] + " \u2193, " + d.names[1] + " \u2192";  // the header cell above the row labels
function iso(t) {  // a token between Unicode isolates: right-to-left text (or an override) stays inside it
  return "\u2068" + t + "\u2069";
}
function describe(x, w, i, j) {
  return d.names[0] + " \u201c" + iso(x.rows[i]) + "\u201d (" + (i + 1) + ") \u2192 " + d.names[1] + " \u201c" +
    iso(x.cols[j]) + "\u201d (" + (j + 1) + "): " + w[i * x.cols.length + j].toFixed(d.decimals);
}
function draw() {
  var x = d.examples[state.example], nq = x.rows.length, nk = x.cols.length, offset = 0;
  d.axes.forEach(function (axis, a) { offset = offset * axis.ticks.length + state.pos[a]; });
  offset *= nq * nk;
  var w = x.w.slice(offset, offset + nq * nk).map(function (v) { return v / d.scale; });
  var vmax = d.vmax;
  if (vmax === null) { vmax = w.reduce(function (m, v) { return v > m ? v : m; }, 1 / d.scale); }
  top.textContent = String(+vmax.toFixed(d.decimals));
  var size = Math.max(6, Math.min(26, Math.floor(480 / Math.max(nq, nk))));  // 64 columns still fit the book's column
  // A row's label is a line of text across it: rows keep the height of that line (17 px) where 480 px hold them,
  // else the labels shrink to fit their rows, as the column labels do, so that no two labels overlap.
  var high = Math.max(size, Math.min(17, Math.floor(480 / nq)));
  grid.textContent = "";
  grid.style.gridTemplateColumns = "max-content repeat(" + nk + "," + size + "px)";
  grid.style.gridAutoRows = high + "px";
  grid.style.gridTemplateRows = "max-content";
  // ARIA grid: a row of column headers, then one row per query (header + cells); the rows are display:contents,
  // so the cells still lay out on the CSS grid.
  var head = grid.appendChild(el("div", "av-line"));
  head.setAttribute("role", "row");
  head.appendChild(el("div", "", "")).setAttribute("role", "columnheader");
  head.firstChild.appendChild(el("span", "av-sr", corner));
  var colHeads = x.cols.map(function (t) {
    var h = head.appendChild(el("div", "av-col", t)); h.setAttribute("role", "columnheader");
    if (size < 17) { h.style.fontSize = Math.max(6, size) + "px"; h.style.lineHeight = size + "px"; }  // fit the column
    return h; });
  var rowHeads = [], cells = [];
  for (var i = 0; i < nq; i++) {
    var line = grid.appendChild(el("div", "av-line")); line.setAttribute("role", "row");
    rowHeads.push(line.appendChild(el("div", "av-row", x.rows[i])));
    rowHeads[i].setAttribute("role", "rowheader");
    if (high < 17) {  // fit the row
      rowHeads[i].style.fontSize = Math.max(6, Math.min(13, high - 2)) + "px";
      rowHeads[i].style.lineHeight = high + "px";
    }
    for (var j = 0; j < nk; j++) {
      var v = w[i * nk + j], c = line.appendChild(el("div", "av-cell"));
      c.style.background = colour(v / vmax); c.dataset.i = i; c.dataset.j = j;
      c.setAttribute("role", "gridcell"); c.title = describe(x, w, i, j); cells.push(c);
    }
  }
  if (!table.hidden) { fill(x, w); }
  readout.textContent = "Hover over a cell (or use the arrow keys) to read its weight.";
  function pick(i, j) {
    grid.querySelectorAll(".av-on,.av-hit").forEach(function (n) {
      n.classList.remove("av-on", "av-hit"); n.removeAttribute("id"); n.removeAttribute("aria-selected"); });
    rowHeads[i].classList.add("av-on"); colHeads[j].classList.add("av-on");
    var c = cells[i * nk + j];
    c.classList.add("av-hit"); c.id = hitId; c.setAttribute("aria-selected", "true");
    grid.setAttribute("aria-activedescendant", c.id);
    state.cell = [i, j];
    readout.textContent = describe(x, w, i, j);
  }
  grid.onmouseover = function (e) {
    if (e.target.classList.contains("av-cell")) { pick(+e.target.dataset.i, +e.target.dataset.j); }
  };
  grid.onkeydown = function (e) {  // arrow keys move the readout from cell to cell
    var step = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]}[e.key];
    if (!step) { return; }
    e.preventDefault();
    var c = state.cell;
    if (!c) { pick(0, 0); return; }  // the first key press shows the first cell
    pick(Math.min(nq - 1, Math.max(0, c[0] + step[0])), Math.min(nk - 1, Math.max(0, c[1] + step[1])));
  };
  grid.removeAttribute("aria-activedescendant");
  var kept = state.cell;  // a slider or another example keeps the chosen cell where it still exists
  state.cell = null;
  if (kept && kept[0] < nq && kept[1] < nk) { pick(kept[0], kept[1]); }
}
function fill(x, w) {  // the matrix as a table: a header cell for every row and column
  table.textContent = "";
  var caption = table.appendChild(el("caption", "", (d.title ? d.title + ": " : "") + d.names[0] + " (rows) by " +
    d.names[1] + " (columns)"));
  caption.style.textAlign = "left";
  var tr = table.appendChild(el("tr"));
  tr.appendChild(el("th", "", "")).appendChild(el("span", "av-sr", corner));
  x.cols.forEach(function (t) { tr.appendChild(el("th", "", t)).setAttribute("scope", "col"); });
  x.rows.forEach(function (t, i) {
    var r = table.appendChild(el("tr"));
    r.appendChild(el("th", "", t)).setAttribute("scope", "row");
    x.cols.forEach(function (_, j) { r.appendChild(el("td", "", w[i * x.cols.length + j].toFixed(d.decimals))); });
  });
}
draw();
// On a narrow screen the grid scrolls inside the viewer: say so above it, while (and only while) it does.
var more = el("div", "av-more", "Wider than the screen: scroll sideways for the rest \u2192");
root.insertBefore(more, root.children[d.title ? 1 : 0]);
function fits() { more.style.display = root.scrollWidth > root.clientWidth + 1 ? "" : "none"; }
fits();
window.addEventListener("resize", fits);
root.addEventListener("change", fits);
})();
