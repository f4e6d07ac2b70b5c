// abtest dashboard: sortable, filterable tables and the trend chart.
// Plain JavaScript, no network: the pages open from disk.
(function () {
  "use strict";

  function cellValue(row, i, numeric) {
    var td = row.cells[i];
    if (!td) return numeric ? NaN : "";
    var v = td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent;
    if (!numeric) return v.trim().toLowerCase();
    var x = parseFloat(v);
    return isNaN(x) ? -Infinity : x;
  }

  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, i) {
      th.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "num";
        var dir = th.getAttribute("data-dir") === "asc" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-dir"); });
        th.setAttribute("data-dir", dir === 1 ? "asc" : "desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, i, numeric), y = cellValue(b, i, numeric);
          return (x < y ? -1 : x > y ? 1 : 0) * dir;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  // A search input filters the tables its data-table names (one or
  // more ids); a select of the same data-table filters by verdict.
  function filterable(input) {
    var tables = input.getAttribute("data-table").split(/\s+/).map(function (id) {
      return document.getElementById(id);
    }).filter(Boolean);
    var select = document.querySelector('select[data-table="' + input.getAttribute("data-table") + '"]');
    var shown = document.getElementById("shown");
    function apply() {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var verdict = select ? select.value : "";
      var n = 0, all = 0;
      tables.forEach(function (table) {
        Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
          var t = r.textContent.toLowerCase();
          var ok = words.every(function (w) { return t.indexOf(w) >= 0; }) &&
            (!verdict || r.getAttribute("data-verdict") === verdict);
          r.hidden = !ok;
          all++;
          if (ok) n++;
        });
      });
      if (shown) shown.textContent = n + " of " + all + " rows";
    }
    input.addEventListener("input", apply);
    if (select) select.addEventListener("change", apply);
    apply();
  }

  document.querySelectorAll("table.sortable").forEach(sortable);
  document.querySelectorAll("input[data-table]").forEach(filterable);

  function trend() {
    var data = window.abtestTrend, el = document.getElementById("chart");
    if (!data || !el || !window.echarts) return;
    var pts = data.points, ser = data.series;
    var chart = echarts.init(el, null, {renderer: "canvas"});
    var marks = ser.change_points.map(function (cp) {
      var color = cp.expected ? "#2ca02c" : "#d62728";
      return {
        xAxis: cp.index,
        name: cp.expected ? "expected" : "change",
        lineStyle: {color: color, type: cp.expected ? "dotted" : "dashed", width: 2},
        label: {formatter: (cp.delta_pct >= 0 ? "+" : "") + cp.delta_pct.toFixed(1) + "%" + (cp.expected ? " (expected)" : ""), color: color},
      };
    });
    var annotated = {};
    ser.annotations.forEach(function (a) { annotated[a.sha] = a.note; });
    var notes = [];
    pts.forEach(function (p, i) {
      if (annotated[p.sha] !== undefined) notes.push({coord: [i, p.value], value: "note", name: annotated[p.sha]});
    });
    chart.setOption({
      animation: false,
      grid: {left: 70, right: 30, top: 40, bottom: 80},
      tooltip: {
        trigger: "axis",
        formatter: function (items) {
          var p = pts[items[0].dataIndex];
          // The short sha is 8 characters, as text.Short writes it in Go.
          var s = p.date + "<br>" + p.commit + " <code>" + p.sha.slice(0, 8) + "</code><br>" +
            ser.metric + " = " + p.value.toPrecision(6) + "<br>host " + p.host;
          if (p.doctor) s += " (" + p.doctor + " doctor findings)";
          if (annotated[p.sha] !== undefined) s += "<br>note: " + annotated[p.sha];
          return s;
        },
      },
      xAxis: {type: "category", data: pts.map(function (p) { return p.date; })},
      yAxis: {type: "value", scale: true, name: ser.metric},
      dataZoom: [{type: "inside"}, {type: "slider"}],
      series: [{
        name: ser.metric, type: "line", showAllSymbol: true, symbolSize: 6,
        data: pts.map(function (p) { return p.value; }),
        markLine: {symbol: "none", data: marks},
        markPoint: {symbol: "pin", symbolSize: 36, data: notes},
      }],
    });
    chart.on("click", function (e) {
      if (e.componentType === "series" && pts[e.dataIndex]) window.location.href = pts[e.dataIndex].page;
    });
    window.addEventListener("resize", function () { chart.resize(); });
    window.abtestChart = chart;
  }
  trend();
  window.abtestReady = true;
})();
