package debugpage

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

// ServeHTTP serves the page, or with ?format=json its data as JSON (the
// package documentation lists the fields).
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
	snap := p.snapshot()
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
	Snap     snapshot
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
	"keysArgs": func(id, title, unit string, top topList) keysView {
		return keysView{ID: id, Title: title, Unit: unit, Top: top}
	},
	"keysNote": keysNote,
}).Parse(pageHTML))

type keysView struct {
	ID, Title, Unit string
	Top             topList
}

// keysNote says what a list's bound on keys not monitored means: the
// footer under the list. The page's script writes the same text
// (function keysNote) when it refreshes the list.
func keysNote(top topList, unit string) string {
	switch {
	case len(top.Keys) == 0:
		return "None yet."
	case top.Unmonitored == 0:
		return "Every key seen so far is monitored, with an exact count."
	}
	if top.Unmonitored == 1 {
		unit = strings.TrimSuffix(unit, "s")
	}
	return fmt.Sprintf("Keys not monitored: the page monitors up to %d keys per list; any other key has had at most %d %s.", top.Monitored, top.Unmonitored, unit)
}
