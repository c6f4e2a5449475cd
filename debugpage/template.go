package debugpage

// pageHTML is rendered with html/template, which escapes every key, name
// and state for the context it lands in; the script sets text only through
// textContent.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>floodgate debug</title>
<style nonce="{{.Nonce}}">
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2em 2em; color: #222; background: #fafafa; }
h1 { font-size: 1.3em; margin: 0 0 .2em; } h2 { font-size: 1.05em; margin: 1.2em 0 .4em; }
.meta { color: #666; font-size: .9em; }
.cards { display: flex; flex-wrap: wrap; gap: .6em; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .5em .8em; min-width: 7.5em; }
.card .n { font-size: 1.6em; font-variant-numeric: tabular-nums; }
.card .sub { color: #666; font-size: .85em; font-variant-numeric: tabular-nums; }
.allowed .n { color: #1a7f37; } .denied .n { color: #cf222e; } .shaped .n { color: #9a6700; }
.cols { display: flex; flex-wrap: wrap; gap: 2em; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #ddd; padding: .2em .6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.key { font-family: ui-monospace, monospace; max-width: 28em; overflow-wrap: anywhere; }
#chart { width: 100%; height: 120px; background: #fff; border: 1px solid #ddd; display: block; }
.axis { display: flex; justify-content: space-between; }
.legend span { margin-right: 1em; } .sw { display: inline-block; width: .8em; height: .8em; margin-right: .3em; }
.g { background: #2da44e; } .r { background: #cf222e; } .o { background: #bf8700; }
.state-closed { color: #1a7f37; } .state-open { color: #cf222e; font-weight: bold; } .state-half-open { color: #9a6700; }
</style>
</head>
<body>
<h1>floodgate: live limiter view</h1>
<div class="meta">since <span id="since">{{.Snap.Since.Format "2006-01-02 15:04:05 MST"}}</span>, updated <span id="updated">{{.Snap.Time.Format "15:04:05"}}</span> (<span id="status">loading</span>); keys {{if eq .Snap.KeyForm "custom"}}shown by the page's key redaction function{{else}}redacted (keyed hash, per process){{end}}</div>

<h2>Decisions since start</h2>
<div class="cards">
{{range .Outcomes}}<div class="card {{.Name}}"><div>{{.Name}}</div><div class="n" id="total-{{.Name}}">{{.Total}}</div><div class="sub"><span id="window-{{.Name}}">{{.Window}}</span> in window, <span id="rate-{{.Name}}">{{printf "%.1f" .Rate}}</span>/s</div></div>
{{end}}<div class="card"><div>shadow denied</div><div class="n" id="shadow-denied">{{.Snap.ShadowDenied}}</div><div class="sub">let through</div></div>
<div class="card"><div>overflow</div><div class="n" id="overflow">{{.Snap.Overflow}}</div><div class="sub">shared state</div></div>
</div>

<h2>Decisions per second, last {{.Snap.Window.Seconds}} s</h2>
<svg id="chart" viewBox="0 0 {{.Snap.Window.Seconds}} 100" preserveAspectRatio="none" role="img" aria-label="decisions per second"></svg>
<div class="axis meta"><span id="axis-start">{{.Snap.Window.Seconds}} s ago</span><span id="axis-end">now</span></div>
<div class="legend meta"><span><i class="sw g"></i>admitted</span><span><i class="sw r"></i>denied</span><span><i class="sw o"></i>errors</span><span>peak <b id="chart-peak">0</b>/s</span></div>

<div class="cols">
{{template "keys" (keysArgs "hot" "Hottest keys" "requests" .Snap.HotKeys)}}
{{template "keys" (keysArgs "refused" "Most refused keys" "denials" .Snap.RefusedKeys)}}
</div>

<h2>Policies in force</h2>
{{if .Snap.Policies}}<table id="policies"><thead><tr><th>limiter</th><th>policy</th><th>events</th><th>per</th><th>burst</th></tr></thead><tbody>
{{range .Snap.Policies}}{{$l := .Limiter}}{{range .Limits}}<tr><td>{{$l}}</td><td>{{.Name}}</td><td class="num">{{.Events}}</td><td>{{.Period}}</td><td class="num">{{.Burst}}</td></tr>
{{end}}{{end}}</tbody></table>{{else}}<p class="meta">none registered (debugpage.WithLimiter)</p>{{end}}

<h2>Store health</h2>
{{if .Snap.Health}}<table id="health"><thead><tr><th>store</th><th>breaker</th><th>primary decisions</th><th>local decisions</th><th>primary failures</th><th>opens</th><th>lease decisions</th><th>leases</th><th>units returned</th><th>returns</th></tr></thead><tbody>
{{range $i, $h := .Snap.Health}}<tr><td>{{.Name}}</td><td id="health-state-{{$i}}" class="state-{{.State}}">{{.State}}</td>{{with .Stats}}<td class="num" id="health-primary-{{$i}}">{{.PrimaryDecisions}}</td><td class="num" id="health-local-{{$i}}">{{.LocalDecisions}}</td><td class="num" id="health-failures-{{$i}}">{{.PrimaryFailures}}</td><td class="num" id="health-opens-{{$i}}">{{.Opens}}</td><td class="num" id="health-lease-{{$i}}">{{.LeaseDecisions}}</td><td class="num" id="health-leases-{{$i}}">{{.Leases}}</td><td class="num" id="health-returned-{{$i}}">{{.Returned}}</td><td class="num" id="health-returns-{{$i}}">{{.Returns}}</td>{{else}}<td colspan="8" class="meta">no stats</td>{{end}}</tr>
{{end}}</tbody></table>{{else}}<p class="meta">none registered (debugpage.WithHealth)</p>{{end}}

<h2>Overload guards</h2>
{{if .Snap.Guards}}<table id="guards"><thead><tr><th>guard</th><th>limit in flight</th><th>in flight</th><th>latency (ms)</th></tr></thead><tbody>
{{range $i, $g := .Snap.Guards}}<tr><td>{{.Name}}</td><td class="num" id="guard-limit-{{$i}}">{{.Limit}}</td><td class="num" id="guard-inflight-{{$i}}">{{.InFlight}}</td><td class="num" id="guard-latency-{{$i}}">{{printf "%.3f" .LatencyMs}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="meta">none registered (debugpage.WithGuard)</p>{{end}}

<h2>Sheds by priority</h2>
<table id="sheds"><thead><tr><th>priority</th><th>level</th><th>shed</th></tr></thead><tbody id="sheds-body">
{{range .Snap.ShedByPriority}}<tr><td>{{.Priority}}</td><td class="num">{{.Level}}</td><td class="num" id="shed-{{.Priority}}">{{.Count}}</td></tr>
{{end}}</tbody></table>

<script nonce="{{.Nonce}}">
(function () {
  "use strict";
  var initial = {{.Snap}};
  var url = location.pathname + "?format=json";
  function set(id, v) { var e = document.getElementById(id); if (e) { e.textContent = String(v); } }
  function cell(tr, text, cls, id) {
    var td = document.createElement("td");
    td.textContent = String(text);
    if (cls) { td.className = cls; }
    if (id) { td.id = id; }
    tr.appendChild(td);
  }
  function keys(prefix, top, unit) {
    var body = document.getElementById(prefix + "-body");
    if (!body) { return; }
    var rows = document.createDocumentFragment();
    top.keys.forEach(function (k, i) {
      var tr = document.createElement("tr");
      cell(tr, i + 1, "num");
      cell(tr, k.key, "key", prefix + "-key-" + i);
      cell(tr, k.count, "num", prefix + "-count-" + i);
      cell(tr, k.error ? "\u00b1" + k.error : "exact", "num");
      rows.appendChild(tr);
    });
    body.replaceChildren(rows);
    set(prefix + "-note", keysNote(top, unit));
  }
  // keysNote is the Go function of the same name, in the same words.
  function keysNote(top, unit) {
    if (!top.keys.length) { return "None yet."; }
    if (!top.unmonitored) { return "Every key seen so far is monitored, with an exact count."; }
    if (top.unmonitored === 1) { unit = unit.replace(/s$/, ""); }
    return "Keys not monitored: the page monitors up to " + top.monitored + " keys per list; any other key has had at most " + top.unmonitored + " " + unit + ".";
  }
  function sheds(list) {
    var rows = document.createDocumentFragment();
    list.forEach(function (p) {
      var tr = document.createElement("tr");
      cell(tr, p.priority);
      cell(tr, p.level, "num");
      cell(tr, p.count, "num", "shed-" + p.priority);
      rows.appendChild(tr);
    });
    document.getElementById("sheds-body").replaceChildren(rows);
  }
  function chart(w) {
    var svg = document.getElementById("chart");
    var ns = "http://www.w3.org/2000/svg";
    var c = w.counts, peak = 0, bars = [];
    for (var i = 0; i < w.seconds; i++) {
      var ok = c.allowed[i] + c.shaped[i], no = c.denied[i] + c.shed[i];
      var bad = c.bad_key[i] + c.bad_cost[i] + c.error[i] + c.store_error[i] + c.canceled[i] + c.other[i];
      bars.push([ok, no, bad]);
      peak = Math.max(peak, ok + no + bad);
    }
    var frag = document.createDocumentFragment(), colors = ["#2da44e", "#cf222e", "#bf8700"];
    bars.forEach(function (b, i) {
      var y = 100;
      b.forEach(function (v, j) {
        if (!v) { return; }
        var h = v / Math.max(peak, 1) * 96;
        y -= h;
        var r = document.createElementNS(ns, "rect");
        r.setAttribute("x", i); r.setAttribute("y", y);
        r.setAttribute("width", 0.85); r.setAttribute("height", h);
        r.setAttribute("fill", colors[j]);
        frag.appendChild(r);
      });
    });
    svg.replaceChildren(frag);
    set("chart-peak", peak);
  }
  function render(d) {
    Object.keys(d.totals).forEach(function (k) {
      set("total-" + k, d.totals[k]);
      set("window-" + k, d.window.totals[k]);
      set("rate-" + k, d.window.per_second[k].toFixed(1));
    });
    set("shadow-denied", d.shadow_denied);
    set("overflow", d.overflow);
    set("updated", String(d.time).substring(11, 19));
    chart(d.window);
    keys("hot", d.hot_keys, "requests");
    keys("refused", d.refused_keys, "denials");
    d.health.forEach(function (h, i) {
      var e = document.getElementById("health-state-" + i);
      if (e) { e.textContent = h.state; e.className = "state-" + h.state; }
      if (h.stats) {
        set("health-primary-" + i, h.stats.primary_decisions);
        set("health-local-" + i, h.stats.local_decisions);
        set("health-failures-" + i, h.stats.primary_failures);
        set("health-opens-" + i, h.stats.opens);
        set("health-lease-" + i, h.stats.lease_decisions);
        set("health-leases-" + i, h.stats.leases);
        set("health-returned-" + i, h.stats.returned_units);
        set("health-returns-" + i, h.stats.returns);
      }
    });
    sheds(d.shed_by_priority);
    d.guards.forEach(function (g, i) {
      set("guard-limit-" + i, g.limit);
      set("guard-inflight-" + i, g.in_flight);
      set("guard-latency-" + i, g.latency_ms.toFixed(3));
    });
  }
  function poll() {
    fetch(url, { cache: "no-store", credentials: "same-origin" }).then(function (r) {
      if (!r.ok) { throw new Error("HTTP " + r.status); }
      return r.json();
    }).then(function (d) {
      render(d);
      set("status", "live");
    }).catch(function (e) {
      set("status", "stale: " + e.message);
    }).finally(function () {
      setTimeout(poll, 1000);
    });
  }
  render(initial);
  setTimeout(poll, 1000);
})();
</script>
</body>
</html>
{{define "keys"}}<div><h2>{{.Title}}</h2><table id="{{.ID}}"><thead><tr><th>#</th><th>key</th><th>{{.Unit}}</th><th>error</th></tr></thead><tbody id="{{.ID}}-body">
{{range $i, $k := .Top.Keys}}<tr><td class="num">{{inc $i}}</td><td class="key" id="{{$.ID}}-key-{{$i}}">{{.Key}}</td><td class="num" id="{{$.ID}}-count-{{$i}}">{{.Count}}</td><td class="num">{{if .Error}}&plusmn;{{.Error}}{{else}}exact{{end}}</td></tr>
{{end}}</tbody></table><div class="meta" id="{{.ID}}-note">{{keysNote .Top .Unit}}</div></div>{{end}}`
