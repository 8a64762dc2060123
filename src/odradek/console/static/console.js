// The console's only script: draws the charts (uPlot) from the data-chart attribute the server rendered,
// again after every htmx refresh, and says so when a refresh fails because the cluster went away.
(function () {
  "use strict";
  var COLORS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];

  function formatValue(unit, value) {
    if (value == null) return "–";
    if (unit === "B") {
      var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
      while (Math.abs(value) >= 1024 && i < units.length - 1) { value /= 1024; i++; }
      return (i === 0 ? Math.round(value) : value.toFixed(1)) + " " + units[i] + "/s";
    }
    return Number.isInteger(value) ? value.toLocaleString() : value.toFixed(1);
  }

  function draw(element) {
    var spec = JSON.parse(element.getAttribute("data-chart"));
    var unit = element.getAttribute("data-unit") || "";
    var spark = element.classList.contains("sparkline");
    element.innerHTML = "";
    if (spec.data[0].length < 2) {
      element.innerHTML = '<span class="muted">collecting samples…</span>';
      return;
    }
    var series = [{}];
    spec.labels.forEach(function (label, i) {
      series.push({label: label, stroke: COLORS[i % COLORS.length], width: i === 0 ? 2 : 1,
                   fill: spark ? "rgba(37,99,235,0.12)" : undefined,
                   value: function (u, v) { return formatValue(unit, v); }});
    });
    var options = {
      width: element.clientWidth || 300,
      height: spark ? 50 : 220,
      series: series,
      legend: {show: !spark},
      cursor: {show: !spark},
      axes: spark ? [{show: false}, {show: false}]
                  : [{}, {values: function (u, values) { return values.map(function (v) { return formatValue(unit, v); }); }, size: 80}],
      scales: {y: {range: function (u, min, max) { return [0, Math.max(4, Math.ceil(max * 1.1))]; }}},
    };
    element.chart = new uPlot(options, spec.data, element);
  }

  function drawAll(root) {
    root.querySelectorAll("[data-chart]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.body.addEventListener("htmx:afterSettle", function (event) { drawAll(event.detail.elt.parentNode || document); });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var banner = document.getElementById("refresh-failed");
    if (banner) banner.hidden = event.detail.successful;
  });
})();
