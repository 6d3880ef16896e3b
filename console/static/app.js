// kbroker console: live numbers and small line charts, no libraries.
// The pages work without it; it refreshes the overview's counters and
// draws the throughput and lag charts from the console's JSON endpoints.
(function () {
  "use strict";
  var body = document.body;
  var prefix = body.dataset.prefix || "/ui";
  var interval = Math.max(1000, parseInt(body.dataset.interval, 10) || 2000);
  var colors = ["#2f6fde", "#2e9d5b", "#b26a00", "#8e44ad", "#c62828", "#16a0a0", "#7f8c8d"];

  function poll(url, fn) {
    function once() {
      fetch(url, { cache: "no-store" }).then(function (r) { return r.json(); })
        .then(function (d) { if (!d.error) { fn(d); } })
        .catch(function () {})
        .finally(function () { setTimeout(once, interval); });
    }
    once();
  }

  function setLive(name, value) {
    document.querySelectorAll('[data-live="' + name + '"]').forEach(function (e) { e.textContent = value; });
  }

  function setBad(name, bad) {
    var card = document.querySelector('[data-card="' + name + '"]');
    if (card) { card.classList.toggle("bad", bad); }
  }

  function human(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? Math.round(n) : n.toFixed(1)) + " " + units[i];
  }

  // chart draws series [{values:[...], color}] over times t (unix ms);
  // data-points says how many samples it drew (the browser test waits on it).
  function chart(canvas, t, series, fmt) {
    canvas.dataset.points = t.length;
    var dpr = window.devicePixelRatio || 1;
    var w = canvas.clientWidth || 900, h = canvas.clientHeight || 220;
    canvas.width = w * dpr; canvas.height = h * dpr;
    var g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    var left = 70, right = 10, top = 10, bottom = 22;
    var maxV = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { maxV = Math.max(maxV, v); }); });
    maxV = maxV > 0 ? maxV * 1.1 : 1;
    g.strokeStyle = "#dde1e8"; g.fillStyle = "#6b7385"; g.font = "11px sans-serif"; g.lineWidth = 1;
    for (var i = 0; i <= 4; i++) {
      var y = top + (h - top - bottom) * i / 4;
      g.beginPath(); g.moveTo(left, y); g.lineTo(w - right, y); g.stroke();
      g.fillText(fmt(maxV * (4 - i) / 4), 4, y + 4);
    }
    if (t.length < 2) {
      g.fillText("collecting samples…", left + 10, top + 20);
      return;
    }
    var t0 = t[0], t1 = t[t.length - 1];
    g.fillText(new Date(t0).toLocaleTimeString(), left, h - 6);
    g.fillText(new Date(t1).toLocaleTimeString(), w - right - 60, h - 6);
    series.forEach(function (s) {
      g.strokeStyle = s.color; g.lineWidth = 2; g.beginPath();
      s.values.forEach(function (v, j) {
        var x = left + (w - left - right) * (t[j] - t0) / Math.max(1, t1 - t0);
        var y = top + (h - top - bottom) * (1 - v / maxV);
        if (j === 0) { g.moveTo(x, y); } else { g.lineTo(x, y); }
      });
      g.stroke();
    });
  }

  var tp = document.querySelector('[data-chart="throughput"]');
  if (document.querySelector("[data-live-overview]")) {
    poll(prefix + "/api/overview", function (d) {
      ["brokers", "controller", "under_replicated", "under_min_isr", "offline"].forEach(function (k) { setLive(k, d[k]); });
      setLive("brokers_down", d.brokers_down && d.brokers_down.length ? d.brokers_down.join(",") : "none");
      setBad("under_replicated", d.under_replicated > 0); setBad("under_min_isr", d.under_min_isr > 0);
      setBad("offline", d.offline > 0); setBad("brokers_down", !!(d.brokers_down && d.brokers_down.length));
      document.querySelectorAll("tr[data-broker]").forEach(function (row) {
        row.classList.toggle("down", (d.brokers_down || []).indexOf(parseInt(row.dataset.broker, 10)) >= 0);
      });
      var th = d.throughput, last = th.t.length - 1;
      if (last >= 0) {
        setLive("bytes_in", human(th.bytes_in[last])); setLive("bytes_out", human(th.bytes_out[last]));
        setLive("records_in", Math.round(th.records_in[last]));
      }
      if (tp) {
        chart(tp, th.t, [{ values: th.bytes_in, color: colors[0] }, { values: th.bytes_out, color: colors[1] }], human);
      }
    });
  }

  var lag = document.querySelector('[data-chart="lag"]');
  if (lag) {
    poll(prefix + "/api/groups/" + encodeURIComponent(lag.dataset.group) + "/lag", function (d) {
      var names = Object.keys(d.partitions).sort().slice(0, colors.length - 1);
      var series = [{ values: d.total, color: "#1d2433" }];
      var legend = ["■ total"];
      names.forEach(function (n, i) {
        series.push({ values: d.partitions[n], color: colors[i] });
        legend.push('<span class="c' + i + '">■ ' + n.replace(/[<>&"]/g, "") + "</span>");
      });
      chart(lag, d.t, series, function (v) { return String(Math.round(v)); });
      document.getElementById("lag-legend").innerHTML = legend.join(" ");
    });
  }
})();
