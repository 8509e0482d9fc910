package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/tierd/objstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newBucket(t *testing.T) (objstore.Bucket, string) {
	t.Helper()
	root := t.TempDir()
	b, err := New(Config{RootPath: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, root
}

// The local provider's real server is the filesystem itself, so its
// acceptance runs with the unit tests. AEROSTREAM_TEST_LOCAL_ROOT points it
// at another mount (an NFS export, say) instead of a temporary directory.
func TestAcceptance(t *testing.T) {
	if root := os.Getenv("AEROSTREAM_TEST_LOCAL_ROOT"); root != "" {
		b, err := New(Config{RootPath: root}, nil)
		if err != nil {
			t.Fatal(err)
		}
		objstore.AcceptanceTest(t, b)
		return
	}
	b, root := newBucket(t)
	// Everything the suite wrote is deleted by its own cleanup, which runs
	// before this one (cleanups run last-registered first): no folders or
	// temporaries may be left behind.
	t.Cleanup(func() {
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != tmpDir {
				t.Errorf("left behind: %s", e.Name())
			}
		}
		if tmp, _ := os.ReadDir(filepath.Join(root, tmpDir)); len(tmp) != 0 {
			t.Errorf("temporary files left: %v", tmp)
		}
	})
	objstore.AcceptanceTest(t, b)
}

func TestConfigErrors(t *testing.T) {
	if _, err := New(Config{}, nil); !errors.Is(err, objstore.ErrInvalidConfig) || !strings.Contains(err.Error(), "root_path") {
		t.Errorf("empty root_path: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := New(Config{RootPath: missing}, nil); !errors.Is(err, objstore.ErrBucketNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing root: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := New(Config{RootPath: file}, nil); !errors.Is(err, objstore.ErrInvalidConfig) {
		t.Errorf("root is a file: %v", err)
	}
}

func TestReservedAndFolders(t *testing.T) {
	ctx := context.Background()
	b, root := newBucket(t)
	if _, err := b.Put(ctx, tmpDir+"/x", strings.NewReader("x"), 1); !errors.Is(err, objstore.ErrInvalidArgument) {
		t.Errorf("Put into the temporary folder: %v", err)
	}
	if _, err := b.Put(ctx, "a/b/c", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	// "a/b" is a folder, not an object.
	if _, err := b.Head(ctx, "a/b"); !objstore.IsNotFound(err) {
		t.Errorf("Head of a folder: %v", err)
	}
	if _, err := b.Head(ctx, "a/b/c/d"); !objstore.IsNotFound(err) {
		t.Errorf("Head below a file: %v", err)
	}
	if err := b.Delete(ctx, "a/b"); err != nil {
		t.Errorf("Delete of a folder: %v", err)
	}
	if err := b.Delete(ctx, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Errorf("empty folders not pruned: %v", err)
	}
}

func TestInFlightUploadIsInvisible(t *testing.T) {
	ctx := context.Background()
	b, root := newBucket(t)
	w, err := b.NewMultipartWriter(ctx, "t/0/seg", objstore.MultipartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, objstore.DefaultPartSize+1)); err != nil {
		t.Fatal(err)
	}
	for info, err := range b.List(ctx, "") {
		t.Errorf("List during an upload: %+v %v", info, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart clears what a crash left in the temporary folder long ago,
	// but not a recent file: another process on the same root may be
	// writing it.
	stale := filepath.Join(root, tmpDir, "obj-stale")
	fresh := filepath.Join(root, tmpDir, "obj-fresh")
	os.WriteFile(stale, []byte("half"), 0o644)
	os.WriteFile(fresh, []byte("in flight"), 0o644)
	old := time.Now().Add(-staleTempAge - time.Hour)
	os.Chtimes(stale, old, old)
	if _, err := New(Config{RootPath: root}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file survived New: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("New removed a recent temporary file: %v", err)
	}
	os.Remove(fresh)
	if info, err := b.Head(ctx, "t/0/seg"); err != nil || info.Size != objstore.DefaultPartSize+1 {
		t.Errorf("Head = %+v, %v", info, err)
	}
}
