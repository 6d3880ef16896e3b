package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/admin"
)

// page is one page's template: the layout plus its content.
type page struct{ tmpl *template.Template }

// pageNames are the pages; each has templates/NAME.html defining "content".
var pageNames = []string{"overview", "topics", "topic", "groups", "group", "messages", "risk"}

func parsePages() (map[string]*page, error) {
	out := map[string]*page{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		out[name] = &page{tmpl: t}
	}
	return out, nil
}

var funcs = template.FuncMap{
	"ids": func(v []int32) string {
		parts := make([]string, len(v))
		for i, id := range v {
			parts[i] = strconv.Itoa(int(id))
		}
		return strings.Join(parts, ",")
	},
	"bytes":  admin.HumanBytes,
	"offset": func(o int64) string { return map[bool]string{true: "-", false: strconv.FormatInt(o, 10)}[o < 0] },
	"rate": func(r float64, ok bool) string {
		if !ok {
			return "-"
		}
		return strconv.FormatFloat(r, 'f', 1, 64)
	},
	"leader": func(id int32) string {
		if id < 0 {
			return "none"
		}
		return strconv.Itoa(int(id))
	},
	"lt":   func(a, b int) bool { return a < b },
	"list": func() []string { return []string{"text", "json", "hex", "base64"} },
}

// view is what every page template gets.
type view struct {
	Prefix   string
	NodeID   int32
	Page     string
	Title    string
	Interval int64 // chart refresh, ms
	Error    string
	Data     any
}

// loader reads a page's data from the cluster; its title is the page's.
type loader func(ctx context.Context, r *http.Request) (title string, data any, err error)

// page renders a page with what load read. A failed load still renders the
// page, with the error on it (404 for a missing topic or group).
func (c *Console) page(name string, load loader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := c.ctx(r)
		defer cancel()
		title, data, err := load(ctx, r)
		v := view{Prefix: c.opts.Prefix, NodeID: c.opts.NodeID, Page: name, Title: title,
			Interval: c.opts.Interval.Milliseconds(), Data: data}
		status := http.StatusOK
		if err != nil {
			err = clientOf(ctx).Explain(ctx, err)
			v.Error, status = err.Error(), http.StatusBadGateway
			var nf *admin.NotFoundError
			var bad *badInput
			switch {
			case errors.As(err, &nf):
				status = http.StatusNotFound
			case errors.As(err, &bad):
				status = http.StatusBadRequest
			case denied(err):
				status = http.StatusForbidden
			}
		}
		var buf bytes.Buffer
		if terr := c.pages[name].tmpl.Execute(&buf, v); terr != nil {
			c.opts.Logger.Error("console page", "page", name, "err", terr)
			http.Error(w, "rendering the page failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		w.Write(buf.Bytes())
	}
}

// api serves JSON for the live parts of the pages.
func (c *Console) api(load func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := c.ctx(r)
		defer cancel()
		v, err := load(ctx, r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			json.NewEncoder(w).Encode(map[string]string{"error": clientOf(ctx).Explain(ctx, err).Error()})
			return
		}
		json.NewEncoder(w).Encode(v)
	}
}

// denied reports whether the cluster refused the viewer (its ACLs).
func denied(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}
