package catalog

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoAerostreamImports enforces doc.go: catalog sits at the bottom of the
// dependency graph, so it imports no other aerostream package (test files
// included, which keeps the test binary from dragging them in).
func TestNoAerostreamImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/aerostream/aerostream") {
				t.Errorf("%s imports %s; catalog must not import other aerostream packages", f, path)
			}
		}
	}
}
