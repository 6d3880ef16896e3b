package console

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/admin"
)

// Options configure a console.
type Options struct {
	// ClientAddr is the client listener the console connects to with
	// kadm (host:port; a wildcard host means loopback).
	ClientAddr string
	// Client overrides the connection settings (tests; a secured
	// listener). Its Brokers win over ClientAddr.
	Client *admin.Config
	// Gatherer is the broker's own metrics registry, read for the
	// produce and fetch throughput of this broker.
	Gatherer prometheus.Gatherer
	NodeID   int32
	Logger   *slog.Logger
	// Prefix is where the console is mounted (default /ui).
	Prefix string
	// Interval is the sampling period of the charts (default 2 s).
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Console is the web console: read-only pages over kadm, and a sampler for
// the charts. Every handler only reads.
type Console struct {
	opts    Options
	client  *admin.Client
	pages   map[string]*page
	mux     *http.ServeMux
	samples *sampler

	stopOnce sync.Once
	cancel   context.CancelFunc // stops the sampler
	done     chan struct{}      // closed when the sampler has stopped
}

// New builds a console and starts its sampler; Close stops it.
func New(opts Options) (*Console, error) {
	if opts.Prefix == "" {
		opts.Prefix = "/ui"
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := admin.DefaultConfig()
	cfg.ClientID, cfg.RequestTimeout = "kbroker-console", 5*time.Second
	cfg.Brokers = []string{loopback(opts.ClientAddr)}
	if opts.Client != nil {
		cfg = *opts.Client
	}
	client, err := admin.Dial(cfg)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		client.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{opts: opts, client: client, pages: pages, cancel: cancel, done: make(chan struct{})}
	c.samples = newSampler(opts.Now)
	c.routes()
	go c.sampleLoop(ctx)
	return c, nil
}

// Mount serves a console under /ui on mux and returns its Close, for the
// broker's metrics listener. A console that cannot be built is logged and
// left out: the metrics endpoint still serves.
func Mount(mux *http.ServeMux, opts Options) (closeFn func()) {
	c, err := New(opts)
	if err != nil {
		if opts.Logger != nil {
			opts.Logger.Error("web console disabled", "err", err)
		}
		return func() {}
	}
	mux.Handle(c.opts.Prefix+"/", c)
	mux.Handle(c.opts.Prefix, http.RedirectHandler(c.opts.Prefix+"/", http.StatusFound))
	return c.Close
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.samples.touch()
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	c.mux.ServeHTTP(w, r)
}

// Close stops the sampler and closes the client.
func (c *Console) Close() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		c.client.Close()
	})
}

func (c *Console) routes() {
	p := c.opts.Prefix
	m := http.NewServeMux()
	m.HandleFunc("GET "+p+"/{$}", c.page("overview", c.overview))
	m.HandleFunc("GET "+p+"/topics", c.page("topics", c.topics))
	m.HandleFunc("GET "+p+"/topics/{topic}", c.page("topic", c.topic))
	m.HandleFunc("GET "+p+"/groups", c.page("groups", c.groups))
	m.HandleFunc("GET "+p+"/groups/{group}", c.page("group", c.group))
	m.HandleFunc("GET "+p+"/messages", c.page("messages", c.messages))
	m.HandleFunc("GET "+p+"/risk", c.page("risk", c.risk))
	m.HandleFunc("GET "+p+"/api/overview", c.api(c.overviewLive))
	m.HandleFunc("GET "+p+"/api/groups/{group}/lag", c.api(c.groupLag))
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", http.FileServerFS(static)))
	m.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the console is read-only", http.StatusMethodNotAllowed)
			return
		}
		http.NotFound(w, r)
	})
	c.mux = m
}

// ctx bounds one page's requests to the cluster.
func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	wctx, stop := c.client.Watch(ctx)
	return wctx, func() { stop(); cancel() }
}

// loopback turns a listener address with a wildcard host into one a
// client on this host can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
