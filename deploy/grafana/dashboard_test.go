package grafana

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The dashboard may only chart what exists: a panel on a series nobody
// registers stays empty forever and looks like a quiet system. The names
// are read from the sources rather than from a running node's /metrics
// because a labelled series appears there only once observed.

// registeredMetrics parses every non-test Go file under root and returns
// the Prometheus names it registers, in the three shapes the code uses: a
// full "aerostream_..." literal; Opts{Namespace, Subsystem, Name} or
// BuildFQName(ns, sub, name) of literals; and a local helper
// (`g := func(name string, ...) { ... Opts{..., Name: name} }`, or
// `"aerostream_x_" + name`, or BuildFQName(lit, lit, name)) whose calls
// pass the rest of the name as their first argument.
func registeredMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	full := regexp.MustCompile(`^aerostream_[a-z0-9_]*[a-z0-9]$`)
	goCollector, processCollector := false, false
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Logf("skipping %s: %v", path, err)
			return nil
		}
		helpers := map[string]string{} // helper func name -> name prefix
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, ok := str(n); ok && full.MatchString(s) {
					names[s] = true
				}
			case *ast.SelectorExpr:
				switch n.Sel.Name {
				case "NewGoCollector":
					goCollector = true
				case "NewProcessCollector":
					processCollector = true
				}
			case *ast.CompositeLit:
				if name, ok := optsName(n); ok {
					names[name] = true
				}
			case *ast.CallExpr:
				if name, ok := fqName(n, nil); ok {
					names[name] = true
				}
			case *ast.AssignStmt:
				if len(n.Lhs) == 1 && len(n.Rhs) == 1 {
					id, ok1 := n.Lhs[0].(*ast.Ident)
					fn, ok2 := n.Rhs[0].(*ast.FuncLit)
					if ok1 && ok2 {
						if p, ok := helperPrefix(fn); ok {
							helpers[id.Name] = p
						}
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok {
				if p, ok := helpers[id.Name]; ok {
					if lit, ok := call.Args[0].(*ast.BasicLit); ok {
						if s, ok := str(lit); ok {
							names[p+s] = true
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// client_golang's standard collectors, which tools/cli registers.
	if goCollector {
		for _, n := range []string{"go_goroutines", "go_threads", "go_gc_duration_seconds", "go_memstats_heap_inuse_bytes", "go_memstats_alloc_bytes_total"} {
			names[n] = true
		}
	}
	if processCollector {
		for _, n := range []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds"} {
			names[n] = true
		}
	}
	return names
}

func str(lit *ast.BasicLit) (string, bool) {
	if lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// optsFields returns the literal values of a composite literal's
// Namespace, Subsystem and Name fields, and the Name expression itself.
func optsFields(c *ast.CompositeLit) (ns, sub, name string, nameExpr ast.Expr) {
	for _, e := range c.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		var s string
		if lit, ok := kv.Value.(*ast.BasicLit); ok {
			s, _ = str(lit)
		}
		switch key.Name {
		case "Namespace":
			ns = s
		case "Subsystem":
			sub = s
		case "Name":
			name, nameExpr = s, kv.Value
		}
	}
	return
}

func join(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "_")
}

// optsName is the full name of Opts{Namespace: "a", Subsystem: "b", Name: "c"}.
func optsName(c *ast.CompositeLit) (string, bool) {
	ns, sub, name, _ := optsFields(c)
	if ns == "" || name == "" {
		return "", false
	}
	return join(ns, sub, name), true
}

// fqName is the name of BuildFQName("a", "b", "c"); with param set, the
// prefix of BuildFQName("a", "b", param).
func fqName(call *ast.CallExpr, param *ast.Ident) (string, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "BuildFQName" || len(call.Args) != 3 {
		return "", false
	}
	var parts [3]string
	for i, a := range call.Args {
		if lit, ok := a.(*ast.BasicLit); ok {
			parts[i], _ = str(lit)
			continue
		}
		if id, ok := a.(*ast.Ident); ok && i == 2 && param != nil && id.Name == param.Name {
			return join(parts[0], parts[1]) + "_", true
		}
		return "", false
	}
	if param != nil {
		return "", false
	}
	return join(parts[:]...), true
}

// helperPrefix recognizes a func literal whose first string parameter
// completes a metric name, and returns the name's prefix.
func helperPrefix(fn *ast.FuncLit) (string, bool) {
	params := fn.Type.Params.List
	if len(params) == 0 || len(params[0].Names) == 0 {
		return "", false
	}
	if t, ok := params[0].Type.(*ast.Ident); !ok || t.Name != "string" {
		return "", false
	}
	param := params[0].Names[0]
	isParam := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == param.Name
	}
	prefix, found := "", false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if lit, ok := n.X.(*ast.BasicLit); ok && n.Op == token.ADD && isParam(n.Y) {
				if s, ok := str(lit); ok && strings.HasPrefix(s, "aerostream_") {
					prefix, found = s, true
				}
			}
		case *ast.CompositeLit:
			if ns, sub, _, nameExpr := optsFields(n); ns != "" && nameExpr != nil && isParam(nameExpr) {
				prefix, found = join(ns, sub)+"_", true
			}
		case *ast.CallExpr:
			if p, ok := fqName(n, param); ok {
				prefix, found = p, true
			}
		}
		return true
	})
	return prefix, found
}

// Words of PromQL, and of Grafana's templating queries, that are not
// series names.
var promqlWords = map[string]bool{
	"histogram_quantile": true, "label_replace": true, "label_join": true, "count_values": true,
	"avg_over_time": true, "max_over_time": true, "min_over_time": true, "sum_over_time": true,
	"count_over_time": true, "last_over_time": true, "quantile_over_time": true, "group_left": true,
	"group_right": true, "bool": true, "label_values": true, "label_names": true, "query_result": true,
}

var (
	promLabelSet  = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring)\s*\([^)]*\)`)
	promRange     = regexp.MustCompile(`\[[^\]]*\]`)
	promString    = regexp.MustCompile(`"[^"]*"`)
	grafanaVar    = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)
	promIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	histogramPart = regexp.MustCompile(`_(bucket|sum|count)$`)
)

// seriesIn returns the series names a PromQL expression reads.
func seriesIn(expr string) []string {
	e := promString.ReplaceAllString(expr, "")
	e = promLabelSet.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	e = promRange.ReplaceAllString(e, " ")
	e = grafanaVar.ReplaceAllString(e, " ")
	var out []string
	for _, id := range promIdent.FindAllString(e, -1) {
		if strings.Contains(id, "_") && !promqlWords[id] {
			out = append(out, id)
		}
	}
	return out
}

// exprs collects every "expr" and templating "query" string in the
// dashboard JSON.
func exprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "query") {
				*out = append(*out, s)
				continue
			}
			if q, ok := x.(map[string]any); ok && k == "query" {
				if s, ok := q["query"].(string); ok {
					*out = append(*out, s)
				}
			}
			exprs(x, out)
		}
	case []any:
		for _, x := range v {
			exprs(x, out)
		}
	}
}

func TestDashboardQueriesRegisteredSeries(t *testing.T) {
	registered := registeredMetrics(t, filepath.Join("..", ".."))
	for _, want := range []string{"aerostream_kafka_request_duration_seconds", "aerostream_fetchcache_hit_ratio",
		"aerostream_replica_leader_partitions", "aerostream_cleaner_cleanings_total", "aerostream_tier_upload_backlog"} {
		if !registered[want] {
			t.Fatalf("the source scan misses %s, which the code registers: the scan is broken", want)
		}
	}
	raw, err := os.ReadFile("aerostream.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("aerostream.json: %v", err)
	}
	var all []string
	exprs(dash, &all)
	if len(all) == 0 {
		t.Fatal("aerostream.json has no queries")
	}
	used := map[string]bool{}
	for _, e := range all {
		for _, s := range seriesIn(e) {
			base := s
			if !registered[s] {
				base = histogramPart.ReplaceAllString(s, "")
			}
			if !registered[base] {
				t.Errorf("the dashboard queries %s (in %q), which no code registers", s, e)
			}
			used[base] = true
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d queries over %d series: %s", len(all), len(names), strings.Join(names, ", "))
}

// The checker itself: a made-up series is caught, labels, ranges,
// groupings and functions are not mistaken for series.
func TestSeriesIn(t *testing.T) {
	got := seriesIn(`histogram_quantile(0.99, sum by (le, api) (rate(aerostream_kafka_request_duration_seconds_bucket{job=~"$job", api!="fetch_x"}[$__rate_interval]))) / on (instance) group_left aerostream_no_such_metric`)
	want := []string{"aerostream_kafka_request_duration_seconds_bucket", "aerostream_no_such_metric"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("seriesIn = %v, want %v", got, want)
	}
}
