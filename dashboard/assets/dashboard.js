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
    var select = Array.prototype.find.call(document.querySelectorAll("select[data-table]"), function (s) {
      return s.getAttribute("data-table") === input.getAttribute("data-table");
    });
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

  // node makes an element of tag holding text as text: data from the
  // store (labels, hosts, notes) never passes through an HTML parser.
  function node(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  // line is a div of the tooltip, of texts and nodes in order.
  function line(parts) {
    var d = node("div");
    parts.forEach(function (x) { d.appendChild(typeof x === "string" ? document.createTextNode(x) : x); });
    return d;
  }

  // The trend's data is a JSON block, not a script: a page without an
  // inline script runs under a Content-Security-Policy without
  // 'unsafe-inline'.
  function trendData() {
    var el = document.getElementById("trend-data");
    return el ? JSON.parse(el.textContent) : null;
  }

  function trend() {
    var data = trendData(), el = document.getElementById("chart");
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
    // The tooltip is an element built with textContent (ECharts takes
    // an HTMLElement from a formatter): a string would be parsed as
    // HTML. items is the axis' list, or one item (a note's pin).
    function tip(items) {
      var it = Array.isArray(items) ? items[0] : items, box = node("div", undefined, "tip");
      if (!it) return box;
      var p = it.componentType === "series" ? pts[it.dataIndex] : null;
      if (!p) {
        if (it.name) box.appendChild(line(["note: " + it.name]));
        return box;
      }
      // The short sha is 8 characters, as text.Short writes it in Go.
      box.appendChild(line([p.date]));
      box.appendChild(line([p.commit + " ", node("code", p.sha.slice(0, 8))]));
      box.appendChild(line([ser.metric + " = " + p.value.toPrecision(6)]));
      if (p.base !== undefined) box.appendChild(line(["baseline " + p.base_name + " = " + p.base.toPrecision(6)]));
      box.appendChild(line(["host " + p.host + (p.doctor ? " (" + p.doctor + " doctor findings)" : "")]));
      if (annotated[p.sha] !== undefined) box.appendChild(line(["note: " + annotated[p.sha]]));
      return box;
    }
    var hasBase = pts.some(function (p) { return p.base !== undefined; });
    chart.setOption({
      animation: false,
      grid: {left: 70, right: 30, top: 40, bottom: 80},
      tooltip: {trigger: "axis", formatter: tip},
      xAxis: {type: "category", data: pts.map(function (p) { return p.date; })},
      yAxis: {type: "value", scale: true, name: ser.metric},
      dataZoom: [{type: "inside"}, {type: "slider"}],
      series: [{
        name: ser.metric, type: "line", showAllSymbol: true, symbolSize: 6,
        data: pts.map(function (p) { return p.value; }),
        markLine: {symbol: "none", data: marks},
        markPoint: {symbol: "pin", symbolSize: 36, data: notes, tooltip: {trigger: "item", formatter: tip}},
      }].concat(hasBase ? [{
        // The other arm: the baseline's value in each point's run.
        name: "baseline", type: "line", showAllSymbol: true, symbolSize: 6, connectNulls: true,
        itemStyle: {color: "#888"}, lineStyle: {type: "dashed", color: "#888"},
        data: pts.map(function (p) { return p.base === undefined ? null : p.base; }),
      }] : []),
      legend: hasBase ? {top: 0, data: [ser.metric, "baseline"]} : undefined,
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
