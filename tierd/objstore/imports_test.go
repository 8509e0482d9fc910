package objstore

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/aerostream/aerostream"

// TestImports enforces doc.go: objstore and its providers import no
// aerostream package but objstore itself, and objstore imports no cloud SDK
// (each provider owns its own, so the contract stays vendor-neutral and a
// binary links only the SDKs of the providers it uses).
func TestImports(t *testing.T) {
	sdks := []string{"github.com/minio/", "cloud.google.com/", "google.golang.org/api", "github.com/Azure/"}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		parent := filepath.Dir(path) == "."
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if strings.HasPrefix(imp, module+"/") && imp != module+"/tierd/objstore" {
				t.Errorf("%s imports %s; objstore and its providers import no other aerostream package", path, imp)
			}
			for _, sdk := range sdks {
				if parent && strings.HasPrefix(imp, sdk) {
					t.Errorf("%s imports %s; the contract package imports no cloud SDK", path, imp)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
