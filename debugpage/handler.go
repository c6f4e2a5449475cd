package debugpage

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"net/http"
)

// ServeHTTP serves the page, or with ?format=json the [Snapshot] as JSON.
// It answers GET and HEAD only, never caches, and sends a Content Security
// Policy that lets only the page's own inline script and style run and
// fetch nothing but the page's JSON, as a second wall behind the escaping
// of keys and names. The page's script reads the JSON of its own path once
// a second, so it works wherever the page is mounted.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "debugpage: only GET and HEAD are served", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	snap := p.Snapshot()
	var buf bytes.Buffer
	if r.URL.Query().Get("format") == "json" {
		if err := json.NewEncoder(&buf).Encode(snap); err != nil {
			http.Error(w, "debugpage: encoding the snapshot failed", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		w.Write(buf.Bytes())
		return
	}
	var n [16]byte
	rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	v := view{Snap: snap, Nonce: nonce}
	for k := range numKinds {
		name := kindName(k)
		v.Outcomes = append(v.Outcomes, outcomeView{
			Name:   name,
			Total:  snap.Totals[name],
			Window: snap.Window.Totals[name],
			Rate:   snap.Window.PerSecond[name],
		})
	}
	if err := pageTemplate.Execute(&buf, v); err != nil {
		http.Error(w, "debugpage: rendering the page failed", http.StatusInternalServerError)
		return
	}
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

type view struct {
	Snap     Snapshot
	Nonce    string
	Outcomes []outcomeView
}

type outcomeView struct {
	Name          string
	Total, Window uint64
	Rate          float64
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
	"keysArgs": func(id, title, unit string, top TopKeys) keysView {
		return keysView{ID: id, Title: title, Unit: unit, Top: top}
	},
}).Parse(pageHTML))

type keysView struct {
	ID, Title, Unit string
	Top             TopKeys
}

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
#chart { width: 100%; height: 120px; background: #fff; border: 1px solid #ddd; }
.legend span { margin-right: 1em; } .sw { display: inline-block; width: .8em; height: .8em; margin-right: .3em; }
.g { background: #2da44e; } .r { background: #cf222e; } .o { background: #bf8700; }
.state-closed { color: #1a7f37; } .state-open { color: #cf222e; font-weight: bold; } .state-half-open { color: #9a6700; }
</style>
</head>
<body>
<h1>floodgate: live limiter view</h1>
<div class="meta">since <span id="since">{{.Snap.Since.Format "2006-01-02 15:04:05 MST"}}</span>, updated <span id="updated">{{.Snap.Time.Format "15:04:05"}}</span> (<span id="status">loading</span>); keys {{if .Snap.RawKeys}}shown raw{{else}}redacted (keyed hash, per process){{end}}</div>

<h2>Decisions since start</h2>
<div class="cards">
{{range .Outcomes}}<div class="card {{.Name}}"><div>{{.Name}}</div><div class="n" id="total-{{.Name}}">{{.Total}}</div><div class="sub"><span id="window-{{.Name}}">{{.Window}}</span> in window, <span id="rate-{{.Name}}">{{printf "%.1f" .Rate}}</span>/s</div></div>
{{end}}<div class="card"><div>shadow denied</div><div class="n" id="shadow-denied">{{.Snap.ShadowDenied}}</div><div class="sub">let through</div></div>
<div class="card"><div>overflow</div><div class="n" id="overflow">{{.Snap.Overflow}}</div><div class="sub">shared state</div></div>
</div>

<h2>Decisions per second, last {{.Snap.Window.Seconds}} s</h2>
<svg id="chart" viewBox="0 0 {{.Snap.Window.Seconds}} 100" preserveAspectRatio="none" role="img" aria-label="decisions per second"></svg>
<div class="legend meta"><span><i class="sw g"></i>admitted</span><span><i class="sw r"></i>denied</span><span><i class="sw o"></i>errors</span><span>peak <b id="chart-peak">0</b>/s</span></div>

<div class="cols">
{{template "keys" (keysArgs "hot" "Hottest keys" "requests" .Snap.HotKeys)}}
{{template "keys" (keysArgs "refused" "Most refused keys" "denials" .Snap.RefusedKeys)}}
</div>

<h2>Policies in force</h2>
{{if .Snap.Policies}}<table id="policies"><thead><tr><th>limiter</th><th>policy</th><th>events</th><th>per</th><th>burst</th></tr></thead><tbody>
{{range .Snap.Policies}}{{$l := .Limiter}}{{range .Limits}}<tr><td>{{$l}}</td><td>{{.Name}}</td><td class="num">{{.Events}}</td><td>{{.Period}}</td><td class="num">{{.Burst}}</td></tr>
{{end}}{{end}}</tbody></table>{{else}}<p class="meta">none registered (debugpage.WithLimiter, WithPolicies)</p>{{end}}

<h2>Store health</h2>
{{if .Snap.Health}}<table id="health"><thead><tr><th>store</th><th>breaker</th><th>primary decisions</th><th>local decisions</th><th>primary failures</th><th>opens</th></tr></thead><tbody>
{{range $i, $h := .Snap.Health}}<tr><td>{{.Name}}</td><td id="health-state-{{$i}}" class="state-{{.State}}">{{.State}}</td>{{with .Stats}}<td class="num" id="health-primary-{{$i}}">{{.PrimaryDecisions}}</td><td class="num" id="health-local-{{$i}}">{{.LocalDecisions}}</td><td class="num" id="health-failures-{{$i}}">{{.PrimaryFailures}}</td><td class="num" id="health-opens-{{$i}}">{{.Opens}}</td>{{else}}<td colspan="4" class="meta">no stats</td>{{end}}</tr>
{{end}}</tbody></table>{{else}}<p class="meta">none registered (debugpage.WithHealth)</p>{{end}}

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
  function keys(prefix, top) {
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
    set(prefix + "-unmonitored", top.unmonitored);
  }
  function chart(w) {
    var svg = document.getElementById("chart");
    var ns = "http://www.w3.org/2000/svg";
    var c = w.counts, peak = 0, bars = [];
    for (var i = 0; i < w.seconds; i++) {
      var ok = c.allowed[i] + c.shaped[i], no = c.denied[i];
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
    keys("hot", d.hot_keys);
    keys("refused", d.refused_keys);
    d.health.forEach(function (h, i) {
      var e = document.getElementById("health-state-" + i);
      if (e) { e.textContent = h.state; e.className = "state-" + h.state; }
      if (h.stats) {
        set("health-primary-" + i, h.stats.primary_decisions);
        set("health-local-" + i, h.stats.local_decisions);
        set("health-failures-" + i, h.stats.primary_failures);
        set("health-opens-" + i, h.stats.opens);
      }
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
{{end}}</tbody></table><div class="meta">keys not monitored: at most <span id="{{.ID}}-unmonitored">{{.Top.Unmonitored}}</span> {{.Unit}} each</div></div>{{end}}`
