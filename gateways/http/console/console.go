package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// csp allows the page nothing but its own script, stylesheet and same-origin
// fetches: should a value ever reach the DOM as markup, an injected script
// or inline handler still does not run.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Options configure the console.
type Options struct {
	Logger *slog.Logger
}

// page is one console page: its template and what the navigation calls it.
type page struct {
	name  string // template file and data-page value
	title string
	nav   string // the navigation entry it belongs to
}

var (
	pageCluster    = page{"cluster", "Cluster", "cluster"}
	pageTopics     = page{"topics", "Topics", "topics"}
	pageTopic      = page{"topic", "Topic", "topics"}
	pageMessages   = page{"messages", "Messages", "messages"}
	pageGroups     = page{"groups", "Consumer groups", "groups"}
	pageGroup      = page{"group", "Consumer group", "groups"}
	pageTables     = page{"tables", "Iceberg tables", "tables"}
	pageThroughput = page{"throughput", "Throughput", "throughput"}
	pageNotFound   = page{"notfound", "Not found", ""}
)

// navItem is one entry of the navigation bar.
type navItem struct {
	Key, Href, Label string
}

var nav = []navItem{
	{"cluster", "/", "Cluster"},
	{"topics", "/topics", "Topics"},
	{"messages", "/messages", "Messages"},
	{"groups", "/groups", "Groups"},
	{"tables", "/tables", "Iceberg"},
	{"throughput", "/throughput", "Throughput"},
}

// view is what a page template sees.
type view struct {
	Page   string
	Title  string
	Active string
	Nav    []navItem
	Topic  string // topic page: the topic's name, from the path
	Group  string // group page: the group's name, from the path
	Path   string // not-found page: what was asked for
}

type console struct {
	logger *slog.Logger
	pages  map[string]*template.Template
}

// Handler serves the console. It expects whole paths (a mount at "/").
func Handler(opts Options) (http.Handler, error) {
	c := &console{logger: opts.Logger, pages: map[string]*template.Template{}}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	for _, p := range []page{pageCluster, pageTopics, pageTopic, pageMessages, pageGroups, pageGroup, pageTables, pageThroughput, pageNotFound} {
		t, err := template.ParseFS(templateFS, "templates/layout.html", "templates/"+p.name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", p.name, err)
		}
		c.pages[p.name] = t
	}
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	files := http.StripPrefix("/assets/", http.FileServer(http.FS(assets)))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.render(pageCluster))
	mux.HandleFunc("GET /topics", c.render(pageTopics))
	mux.HandleFunc("GET /topics/{topic}", c.render(pageTopic))
	mux.HandleFunc("GET /messages", c.render(pageMessages))
	mux.HandleFunc("GET /groups", c.render(pageGroups))
	// A group id may hold any character, "/" too.
	mux.HandleFunc("GET /groups/{group...}", c.render(pageGroup))
	mux.HandleFunc("GET /tables", c.render(pageTables))
	mux.HandleFunc("GET /throughput", c.render(pageThroughput))
	mux.Handle("GET /assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.write(w, r, http.StatusNotFound, pageNotFound, view{Path: r.URL.Path})
	})
	return mux, nil
}

func (c *console) render(p page) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.write(w, r, http.StatusOK, p, view{Topic: r.PathValue("topic"), Group: r.PathValue("group")})
	}
}

func (c *console) write(w http.ResponseWriter, r *http.Request, code int, p page, v view) {
	v.Page, v.Title, v.Active, v.Nav = p.name, p.title, p.nav, nav
	var buf bytes.Buffer
	if err := c.pages[p.name].ExecuteTemplate(&buf, "layout", v); err != nil {
		// The templates are embedded and parsed at start, so this is a
		// bug in them, not in the request.
		c.logger.Error("console page", "page", p.name, "path", r.URL.Path, "err", err)
		http.Error(w, "console page failed to render", http.StatusInternalServerError)
		return
	}
	secure(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}
