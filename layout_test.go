package aerostream_test

// The folders are the architecture (DESIGN §2), so the import graph is
// checked here, in the manner of pebble's TestForbiddenImports. The check
// parses every .go file itself instead of asking `go list`, so that files
// behind build tags (crash, integration gates) are checked too and so that
// it works while some package does not compile.

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const pebble = "github.com/cockroachdb/pebble"

// importRule forbids some imports for some importers. Our packages are
// named by their path relative to the module root ("" is the root itself);
// other imports keep their full path, and ours tells the two apart.
type importRule struct {
	why      string
	importer func(pkg string) bool
	forbids  func(pkg, imp string, ours bool) bool
	// prodOnly: the rule holds for non-test files only.
	prodOnly bool
}

// under reports whether pkg is root or below it.
func under(pkg, root string) bool {
	return pkg == root || strings.HasPrefix(pkg, root+"/")
}

// gatewaySubtree is the gateway a package belongs to ("gateways/kafka" for
// gateways/kafka/x), or "" for the shared plumbing (gateways,
// gateways/internal/...).
func gatewaySubtree(pkg string) string {
	parts := strings.Split(pkg, "/")
	if len(parts) < 2 || parts[0] != "gateways" || parts[1] == "internal" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

var importRules = []importRule{
	{
		why:      "controller imports no aerostream package but catalog, topicconfig and auth (stores are reached through PartitionManager)",
		importer: func(p string) bool { return under(p, "controller") },
		forbids: func(_, i string, ours bool) bool {
			return ours && !under(i, "controller") && !under(i, "catalog") && !under(i, "topicconfig") && !under(i, "auth")
		},
	},
	{
		// The registry of topic configs is read by the controller, logstore,
		// tierd and the gateways, so it must sit below all of them.
		why:      "topicconfig imports no other aerostream package",
		importer: func(p string) bool { return under(p, "topicconfig") },
		forbids:  func(_, i string, ours bool) bool { return ours && !under(i, "topicconfig") },
	},
	{
		// Users, credentials and ACLs are read by the controller and the
		// gateways, so auth sits below both.
		why:      "auth imports no other aerostream package",
		importer: func(p string) bool { return under(p, "auth") },
		forbids:  func(_, i string, ours bool) bool { return ours && !under(i, "auth") },
	},
	{
		why:      "tierd/objstore and its providers import no other aerostream package",
		importer: func(p string) bool { return under(p, "tierd/objstore") },
		forbids:  func(_, i string, ours bool) bool { return ours && !under(i, "tierd/objstore") },
	},
	{
		why:      "the objstore contract package imports no cloud SDK (only its providers do)",
		importer: func(p string) bool { return p == "tierd/objstore" },
		forbids: func(_, i string, ours bool) bool {
			return !ours && (strings.HasPrefix(i, "github.com/minio/") || strings.HasPrefix(i, "cloud.google.com/") ||
				strings.HasPrefix(i, "google.golang.org/api") || strings.HasPrefix(i, "github.com/Azure/"))
		},
	},
	{
		why:      "the packages under internal/ are leaves: they import no other aerostream package",
		importer: func(p string) bool { return under(p, "internal") },
		forbids:  func(_, i string, ours bool) bool { return ours && !under(i, "internal") },
	},
	{
		why:      "catalog imports no other aerostream package but the leaves under internal/",
		importer: func(p string) bool { return under(p, "catalog") },
		forbids:  func(_, i string, ours bool) bool { return ours && !under(i, "catalog") && !under(i, "internal") },
	},
	{
		why:      "only catalog imports pebble",
		importer: func(p string) bool { return !under(p, "catalog") },
		forbids:  func(_, i string, ours bool) bool { return !ours && under(i, pebble) },
	},
	{
		why: "logstore imports no aerostream package but catalog, topicconfig and the leaves under internal/",
		importer: func(p string) bool {
			return under(p, "logstore") && !under(p, "logstore/ring")
		},
		forbids: func(_, i string, ours bool) bool {
			return ours && !under(i, "catalog") && !under(i, "topicconfig") && !under(i, "internal") && !(under(i, "logstore") && !under(i, "logstore/ring"))
		},
	},
	{
		why:      "logstore/ring imports no aerostream package but logstore (and catalog, to build one) and the leaves under internal/",
		importer: func(p string) bool { return under(p, "logstore/ring") },
		prodOnly: true,
		forbids: func(_, i string, ours bool) bool {
			return ours && !under(i, "logstore") && !under(i, "catalog") && !under(i, "internal")
		},
	},
	{
		// The ring takes a *tls.Config; its tests build real ones through
		// auth, a leaf, so the mTLS suite runs on the configs nodes use.
		why:      "logstore/ring's tests import no aerostream package but logstore, catalog, internal/ and auth",
		importer: func(p string) bool { return under(p, "logstore/ring") },
		forbids: func(_, i string, ours bool) bool {
			return ours && !under(i, "logstore") && !under(i, "catalog") && !under(i, "internal") && !under(i, "auth")
		},
	},
	{
		// tierd sees the store only through its own Store interface, which
		// tools/ satisfies with *logstore.Store; its tests may build a real
		// store to put behind it.
		why:      "tierd imports no aerostream package but catalog, topicconfig and tierd/...",
		importer: func(p string) bool { return under(p, "tierd") },
		forbids: func(_, i string, ours bool) bool {
			return ours && !under(i, "tierd") && !under(i, "catalog") && !under(i, "topicconfig")
		},
		prodOnly: true,
	},
	{
		why:      "tierd reaches no controller, shard ring or fetchcache, not even in tests",
		importer: func(p string) bool { return under(p, "tierd") },
		forbids: func(_, i string, ours bool) bool {
			return ours && (under(i, "controller") || under(i, "logstore/ring") || under(i, "fetchcache"))
		},
	},
	{
		// fetchcache is the store's ColdTier: it needs logstore's contract
		// and batch parser, the segment record and the bucket, nothing above
		// them and not the tiering daemon itself.
		why:      "fetchcache imports no aerostream package but logstore (not the ring), catalog, tierd/objstore and tierd/segobj",
		importer: func(p string) bool { return under(p, "fetchcache") },
		forbids: func(_, i string, ours bool) bool {
			return ours && !under(i, "fetchcache") && !under(i, "catalog") &&
				!under(i, "tierd/objstore") && !under(i, "tierd/segobj") &&
				!(under(i, "logstore") && !under(i, "logstore/ring"))
		},
	},
	{
		// The replica manager drives a store through logstore and reaches
		// leaders over the ring and the controller; its tests may open a
		// real store over a catalog.
		why:      "replica imports no catalog, tierd or fetchcache",
		importer: func(p string) bool { return under(p, "replica") },
		forbids: func(_, i string, ours bool) bool {
			return ours && (under(i, "catalog") || under(i, "tierd") || under(i, "fetchcache"))
		},
		prodOnly: true,
	},
	{
		why:      "only tools/ imports replica",
		importer: func(p string) bool { return !under(p, "tools") && !under(p, "replica") },
		forbids:  func(_, i string, ours bool) bool { return ours && under(i, "replica") },
	},
	{
		why:      "nothing outside tools/ imports tools/",
		importer: func(p string) bool { return !under(p, "tools") },
		forbids:  func(_, i string, ours bool) bool { return ours && under(i, "tools") },
	},
	{
		why:      "no package imports a gateway (only tools/ wires them)",
		importer: func(p string) bool { return !under(p, "tools") && !under(p, "gateways") },
		forbids:  func(_, i string, ours bool) bool { return ours && under(i, "gateways") },
	},
	{
		why:      "a gateway imports no other gateway, only the shared plumbing",
		importer: func(p string) bool { return under(p, "gateways") },
		forbids: func(p, i string, ours bool) bool {
			target := gatewaySubtree(i)
			return ours && under(i, "gateways") && target != "" && target != gatewaySubtree(p)
		},
	},
	{
		// Gateways see storage only through the ring's Backend. Their tests
		// may open a real store to put behind the in-process ring.
		why:      "gateways reach storage only through logstore/ring",
		importer: func(p string) bool { return under(p, "gateways") },
		forbids: func(_, i string, ours bool) bool {
			return ours && ((under(i, "logstore") && !under(i, "logstore/ring")) || under(i, "catalog"))
		},
		prodOnly: true,
	},
}

// forbidden returns why importer may not import imp, or "".
func forbidden(importer, imp string, test bool) string {
	imp, ours := rel(imp)
	for _, r := range importRules {
		if test && r.prodOnly {
			continue
		}
		if r.importer(importer) && r.forbids(importer, imp, ours) {
			return r.why
		}
	}
	return ""
}

var modulePath = readModulePath()

func readModulePath() string {
	f, err := os.Open("go.mod")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	panic("go.mod has no module line")
}

// rel turns one of our import paths into its module-relative form.
func rel(imp string) (string, bool) {
	if imp == modulePath {
		return "", true
	}
	if r, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
		return r, true
	}
	return imp, false
}

type goFile struct {
	path    string // relative to the repo root
	pkg     string // relative import path of its directory
	test    bool
	imports []string
	lines   []int
}

// scanRepo parses the imports of every .go file of the module.
func scanRepo(t *testing.T) []goFile {
	t.Helper()
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if path != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		gf := goFile{path: path, pkg: filepath.ToSlash(filepath.Dir(path)), test: strings.HasSuffix(path, "_test.go")}
		if gf.pkg == "." {
			gf.pkg = ""
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			gf.imports = append(gf.imports, p)
			gf.lines = append(gf.lines, fset.Position(is.Pos()).Line)
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("found no Go files; run from the repository root")
	}
	return files
}

func TestForbiddenImports(t *testing.T) {
	for _, f := range scanRepo(t) {
		for i, imp := range f.imports {
			if why := forbidden(f.pkg, imp, f.test); why != "" {
				t.Errorf("%s:%d: %s imports %s, but %s", f.path, f.lines[i], show(f.pkg), imp, why)
			}
		}
	}
}

// show names one of our packages by its full import path.
func show(p string) string {
	if p == "" {
		return modulePath
	}
	return modulePath + "/" + p
}

// TestImportRulesBite keeps the rules honest: each case is an import the
// rules must refuse or allow.
func TestImportRulesBite(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		test     bool
		bad      bool
	}{
		{"catalog", "logstore", false, true},
		{"controller", "logstore", false, true},
		{"controller", "catalog", false, false},
		{"controller", "topicconfig", false, false},
		{"logstore", "topicconfig", false, false},
		{"gateways/kafka", "topicconfig", false, false},
		{"topicconfig", "catalog", false, true},
		{"topicconfig", "controller", true, true},
		{"tierd/objstore/s3", "tierd/objstore", false, false},
		{"tierd/objstore/s3", "catalog", false, true},
		{"tierd/objstore", "github.com/minio/minio-go/v7", false, true},
		{"tierd/objstore/s3", "github.com/minio/minio-go/v7", false, false},
		{"catalog", "tools/config", true, true},
		{"catalog", pebble + "/v2", false, false},
		{"catalog/internal/x", pebble + "/v2/vfs", false, false},
		{"logstore", pebble + "/v2", false, true},
		{"tierd", pebble, true, true},
		{"tierd", "catalog", false, false},
		{"tierd", "tierd/objstore", false, false},
		{"tierd", "tierd/segobj", false, false},
		{"tierd", "topicconfig", false, false},
		{"tierd", "logstore", false, true},
		{"tierd", "logstore", true, false},
		{"tierd", "logstore/logtest", true, false},
		{"tierd", "logstore/ring", true, true},
		{"tierd", "controller", false, true},
		{"tierd", "controller", true, true},
		{"tierd", "fetchcache", false, true},
		{"tierd", "gateways/kafka", true, true},
		{"tierd", "tools/config", false, true},
		{"tierd/segobj", "logstore", false, true},
		{"tierd/segobj", "tierd/objstore", false, false},
		{"fetchcache", "logstore", false, false},
		{"fetchcache", "logstore/logtest", true, false},
		{"fetchcache", "catalog", false, false},
		{"fetchcache", "tierd/objstore", false, false},
		{"fetchcache", "tierd/segobj", false, false},
		{"fetchcache", "tierd", false, true},
		{"fetchcache", "tierd", true, true},
		{"fetchcache", "logstore/ring", false, true},
		{"fetchcache", "controller", false, true},
		{"fetchcache", "gateways", false, true},
		{"fetchcache", "tools/cli", true, true},
		{"logstore", "catalog", false, false},
		{"logstore/internal/seg", "logstore", false, false},
		{"logstore", "logstore/ring", false, true},
		{"logstore", "tierd", false, true},
		{"logstore", "fetchcache", true, true},
		{"logstore/ring", "logstore", false, false},
		{"logstore/ring/ringtest", "catalog", false, false},
		{"logstore/ring", "controller", false, true},
		{"logstore/ring", "gateways", false, true},
		{"logstore/ring", "auth", false, true},
		{"logstore/ring", "auth/authtest", true, false},
		{"logstore/ring", "controller", true, true},
		{"logstore", "tools/config", false, true},
		{"gateways/kafka", "tools/cli", true, true},
		{"tools/cli", "tools/config", false, false},
		{"tools/cli", "gateways/kafka", false, false},
		{"tools/crashtest", "logstore", true, false},
		{"controller", "gateways", false, true},
		{"iceberg", "gateways/native/client", false, true},
		{"gateways/kafka", "gateways", false, false},
		{"gateways/kafka", "gateways/internal/conn", false, false},
		{"gateways/kafka", "gateways/kafka/internal/x", false, false},
		{"gateways/kafka", "gateways/native", false, true},
		{"gateways/native/client", "gateways/native", false, false},
		{"gateways", "gateways/kafka", false, true},
		{"gateways/kafka", "logstore", false, true},
		{"gateways/kafka", "catalog", false, true},
		{"gateways/kafka", "logstore/ring", false, false},
		{"gateways/kafka", "logstore", true, false},
		{"gateways/native", "controller", false, false},
		{"gateways/http", "gateways", false, false},
		{"gateways/http", "logstore", false, true},
		{"gateways/http", "catalog", false, true},
		{"gateways/http", "gateways/kafka", false, true},
		{"gateways/kafka", "gateways/http", false, true},
		{"tierd", "gateways/http", false, true},
		{"tools/cli", "gateways/http", false, false},
		{"replica", "controller", false, false},
		{"replica", "logstore/ring", false, false},
		{"replica", "catalog", false, true},
		{"replica", "catalog", true, false},
		{"replica", "tierd", false, true},
		{"replica", "gateways/kafka", false, true},
		{"gateways/kafka", "replica", false, true},
		{"controller", "replica", false, true},
		{"tools/cli", "replica", false, false},
		{"", "tools/config", true, true},
		{"logstore", "std:errors", false, false},
		{"gateways/kafka", "std:net", false, false},
		{"catalog", "golang.org/x/sys/unix", false, false},
	} {
		to, isStd := strings.CutPrefix(tc.to, "std:")
		if !isStd && !strings.Contains(strings.SplitN(to, "/", 2)[0], ".") {
			to = modulePath + "/" + to // one of ours
		}
		why := forbidden(tc.from, to, tc.test)
		if (why != "") != tc.bad {
			t.Errorf("%q imports %q (test %v): forbidden=%q, want forbidden %v", tc.from, tc.to, tc.test, why, tc.bad)
		}
	}
}

// TestEveryPackageHasDocGo: each package says in doc.go what it owns and
// what it must not import (DESIGN §6.9).
func TestEveryPackageHasDocGo(t *testing.T) {
	hasCode := map[string]bool{}
	for _, f := range scanRepo(t) {
		if !f.test {
			hasCode[f.pkg] = true
		}
	}
	var pkgs []string
	for p := range hasCode {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		dir := p
		if dir == "" {
			dir = "."
		}
		doc := filepath.Join(dir, "doc.go")
		f, err := parser.ParseFile(token.NewFileSet(), doc, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("package %s: %v", show(p), err)
			continue
		}
		if f.Doc == nil || len(strings.TrimSpace(f.Doc.Text())) == 0 {
			t.Errorf("%s: no package comment", doc)
		}
	}
}
