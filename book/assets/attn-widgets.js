// Loaded between require.js and the ipywidgets HTML manager on pages with saved widgets (see _config.yml).
(function () {
  // The manager's webpack chunks (Font Awesome's fonts) are fetched relative to its AMD module name:
  // map that name to the vendored copy in _static/vendor/html-manager.
  var base = document.currentScript.src.replace(/attn-widgets\.js.*$/, "");
  window.require.config({paths: {"@jupyter-widgets/html-manager/dist": base + "vendor/html-manager"}});
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
