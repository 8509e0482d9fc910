package controller

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces doc.go: of our packages, controller imports only
// catalog (for the Raft log store). A store is reached through
// PartitionManager, which tools/ implements over logstore.
func TestImports(t *testing.T) {
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
			rel, ours := strings.CutPrefix(path, "github.com/aerostream/aerostream/")
			if ours && rel != "catalog" {
				t.Errorf("%s imports %s; controller imports no aerostream package but catalog", f, path)
			}
		}
	}
}
