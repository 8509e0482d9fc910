package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// AcceptanceTest is the conformance suite of the Bucket contract. Every
// provider runs it against a real server (MinIO, fake-gcs-server, Azurite, a
// local directory), and the in-memory bucket runs it too, so a behaviour the
// layers above rely on is written down here once and checked everywhere.
//
// It works under a fresh random prefix and deletes what it wrote, so it can
// share a bucket with other runs. It uploads about 40 MiB in all; the 1100-key
// listing crosses the 1000-key page every provider lists by.
func AcceptanceTest(t *testing.T, b Bucket) {
	t.Helper()
	run := fmt.Sprintf("acceptance/%d-%s/", time.Now().UnixNano(), randomHex(4))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var keys []string
		for info, err := range b.List(ctx, run) {
			if err != nil {
				t.Logf("cleanup list: %v", err)
				break
			}
			keys = append(keys, info.Key)
		}
		if err := b.DeleteMany(ctx, keys); err != nil {
			t.Logf("cleanup delete: %v", err)
		}
	})
	a := &acceptance{b: b, run: run}
	t.Run("Name", a.name)
	t.Run("PutGetHead", a.putGetHead)
	t.Run("Overwrite", a.overwrite)
	t.Run("EmptyObject", a.emptyObject)
	t.Run("Ranges", a.ranges)
	t.Run("NotFound", a.notFound)
	t.Run("PutIfAbsent", a.putIfAbsent)
	t.Run("PutIfAbsentRace", a.putIfAbsentRace)
	t.Run("ShortReader", a.shortReader)
	t.Run("InvalidArguments", a.invalidArguments)
	t.Run("Multipart", a.multipart)
	t.Run("MultipartSmall", a.multipartSmall)
	t.Run("MultipartIfAbsent", a.multipartIfAbsent)
	t.Run("MultipartAbort", a.multipartAbort)
	t.Run("ListPrefix", a.listPrefix)
	t.Run("ListMany", a.listMany)
	t.Run("Delete", a.delete)
	t.Run("ContextCancel", a.contextCancel)
}

type acceptance struct {
	b   Bucket
	run string
}

func (a *acceptance) key(name string) string { return a.run + name }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func (a *acceptance) put(t *testing.T, key string, data []byte) ObjectInfo {
	t.Helper()
	info, err := a.b.Put(ctxT(t), key, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("Put %q: %v", key, err)
	}
	checkInfo(t, "Put", info, key, data)
	return info
}

// checkInfo checks what an upload returned. Checksum is mandatory here:
// uploads compute it from the bytes sent.
func checkInfo(t *testing.T, op string, info ObjectInfo, key string, data []byte) {
	t.Helper()
	if info.Key != key {
		t.Errorf("%s: Key = %q, want %q", op, info.Key, key)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("%s %q: Size = %d, want %d", op, key, info.Size, len(data))
	}
	if info.ETag == "" || strings.Contains(info.ETag, `"`) {
		t.Errorf("%s %q: ETag = %q, want non-empty and unquoted", op, key, info.ETag)
	}
	if want := ChecksumOf(data); info.Checksum != want {
		t.Errorf("%s %q: Checksum = %q, want %q", op, key, info.Checksum, want)
	}
	checkModified(t, op, key, info.LastModified)
}

func checkModified(t *testing.T, op, key string, m time.Time) {
	t.Helper()
	// Servers stamp with their own clock and often whole seconds; all run on
	// this machine, so a generous window catches a zero or garbage time only.
	if d := time.Since(m); d < -time.Minute || d > 10*time.Minute {
		t.Errorf("%s %q: LastModified = %v, not near now", op, key, m)
	}
}

func (a *acceptance) get(t *testing.T, key string, off, length int64) []byte {
	t.Helper()
	rc, err := a.b.GetRange(ctxT(t), key, off, length)
	if err != nil {
		t.Fatalf("GetRange %q [%d,+%d): %v", key, off, length, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("GetRange %q [%d,+%d): read: %v", key, off, length, err)
	}
	return data
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes (sha256 %x), want %d bytes (sha256 %x)",
			what, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func (a *acceptance) name(t *testing.T) {
	if a.b.Name() == "" {
		t.Fatal("Name() is empty")
	}
	if s, ok := a.b.(fmt.Stringer); ok && s.String() != a.b.Name() {
		t.Errorf("String() = %q, Name() = %q", s.String(), a.b.Name())
	}
}

func (a *acceptance) putGetHead(t *testing.T) {
	key := a.key("put/get/object.bin")
	data := randomBytes(256<<10 + 17)
	info := a.put(t, key, data)
	sameBytes(t, "full read", a.get(t, key, 0, -1), data)

	head, err := a.b.Head(ctxT(t), key)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if head.Key != key || head.Size != int64(len(data)) {
		t.Errorf("Head = %+v, want key %q size %d", head, key, len(data))
	}
	if head.ETag != info.ETag {
		t.Errorf("Head ETag %q != Put ETag %q", head.ETag, info.ETag)
	}
	if head.Checksum != "" && head.Checksum != info.Checksum {
		t.Errorf("Head Checksum %q != Put Checksum %q", head.Checksum, info.Checksum)
	}
	checkModified(t, "Head", key, head.LastModified)
}

func (a *acceptance) overwrite(t *testing.T) {
	key := a.key("overwrite")
	first := a.put(t, key, []byte("first version"))
	second := a.put(t, key, []byte("second, longer version"))
	if first.ETag == second.ETag {
		t.Errorf("ETag unchanged by overwrite: %q", first.ETag)
	}
	sameBytes(t, "after overwrite", a.get(t, key, 0, -1), []byte("second, longer version"))
}

func (a *acceptance) emptyObject(t *testing.T) {
	key := a.key("empty")
	a.put(t, key, nil)
	if got := a.get(t, key, 0, -1); len(got) != 0 {
		t.Errorf("empty object read %d bytes", len(got))
	}
	if got := a.get(t, key, 0, 10); len(got) != 0 {
		t.Errorf("empty object range read %d bytes", len(got))
	}
	head, err := a.b.Head(ctxT(t), key)
	if err != nil || head.Size != 0 {
		t.Errorf("Head empty = %+v, %v", head, err)
	}
}

func (a *acceptance) ranges(t *testing.T) {
	key := a.key("ranges")
	data := randomBytes(100_000)
	size := int64(len(data))
	a.put(t, key, data)
	for _, tc := range []struct {
		name        string
		off, length int64
		want        []byte
	}{
		{"start", 0, 10, data[:10]},
		{"middle", 4096, 8192, data[4096 : 4096+8192]},
		{"last byte", size - 1, 1, data[size-1:]},
		{"end exact", size - 100, 100, data[size-100:]},
		{"to end", 99_000, -1, data[99_000:]},
		{"past end is cut", size - 5, 100, data[size-5:]},
		{"zero length", 500, 0, nil},
		{"at end", size, -1, nil},
		{"at end with length", size, 10, nil},
	} {
		sameBytes(t, tc.name, a.get(t, key, tc.off, tc.length), tc.want)
	}
	_, err := a.b.GetRange(ctxT(t), key, size+1, 10)
	if !IsInvalidRange(err) {
		t.Errorf("GetRange beyond end: err = %v, want ErrInvalidRange", err)
	}
}

func (a *acceptance) notFound(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("never/written")
	if _, err := a.b.Head(ctx, key); !IsNotFound(err) {
		t.Errorf("Head missing: err = %v, want IsNotFound", err)
	}
	if rc, err := a.b.GetRange(ctx, key, 0, -1); !IsNotFound(err) {
		if rc != nil {
			rc.Close()
		}
		t.Errorf("GetRange missing: err = %v, want IsNotFound", err)
	}
	if rc, err := a.b.GetRange(ctx, key, 10, 10); !IsNotFound(err) {
		if rc != nil {
			rc.Close()
		}
		t.Errorf("GetRange [10,+10) missing: err = %v, want IsNotFound", err)
	}
	if _, err := a.b.Head(ctx, key); IsTransient(err) {
		t.Errorf("not-found error classified transient: %v", err)
	}
}

func (a *acceptance) putIfAbsent(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("conditional")
	data := []byte("the original")
	info, err := a.b.PutIfAbsent(ctx, key, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("PutIfAbsent new key: %v", err)
	}
	checkInfo(t, "PutIfAbsent", info, key, data)
	other := []byte("an impostor")
	_, err = a.b.PutIfAbsent(ctx, key, bytes.NewReader(other), int64(len(other)))
	if !IsPreconditionFailed(err) {
		t.Fatalf("PutIfAbsent existing key: err = %v, want IsPreconditionFailed", err)
	}
	if IsTransient(err) {
		t.Errorf("precondition failure classified transient: %v", err)
	}
	sameBytes(t, "after refused PutIfAbsent", a.get(t, key, 0, -1), data)
}

// putIfAbsentRace: the condition is checked by the server, atomically.
func (a *acceptance) putIfAbsentRace(t *testing.T) {
	key := a.key("conditional-race")
	const n = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		won      []int
		failures []error
	)
	for i := range n {
		wg.Go(func() {
			data := fmt.Appendf(nil, "writer %d", i)
			_, err := a.b.PutIfAbsent(ctxT(t), key, bytes.NewReader(data), int64(len(data)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, i)
			case !IsPreconditionFailed(err):
				failures = append(failures, err)
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("racing PutIfAbsent failed otherwise than by precondition: %v", failures)
	}
	if len(won) != 1 {
		t.Fatalf("%d racing PutIfAbsent calls succeeded (%v), want exactly 1", len(won), won)
	}
	sameBytes(t, "race winner", a.get(t, key, 0, -1), fmt.Appendf(nil, "writer %d", won[0]))
}

func (a *acceptance) shortReader(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("short")
	_, err := a.b.Put(ctx, key, strings.NewReader("only 12 byte"), 100)
	if err == nil {
		t.Fatalf("Put with a reader shorter than size succeeded")
	}
	if _, err := a.b.Head(ctx, key); !IsNotFound(err) {
		t.Errorf("a short Put left an object behind: Head err = %v", err)
	}
	// Bytes past the declared size are not stored.
	info, err := a.b.Put(ctx, key, strings.NewReader("0123456789extra"), 10)
	if err != nil {
		t.Fatalf("Put with a longer reader: %v", err)
	}
	checkInfo(t, "Put", info, key, []byte("0123456789"))
	sameBytes(t, "longer reader", a.get(t, key, 0, -1), []byte("0123456789"))
}

func (a *acceptance) invalidArguments(t *testing.T) {
	ctx := ctxT(t)
	for _, key := range []string{"", "/abs", "trailing/", "a//b", "a/../b", "./a", "nul\x00"} {
		if _, err := a.b.Put(ctx, key, strings.NewReader("x"), 1); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Put %q: err = %v, want ErrInvalidArgument", key, err)
		}
		if _, err := a.b.Head(ctx, key); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Head %q: err = %v, want ErrInvalidArgument", key, err)
		}
	}
	key := a.key("args")
	if _, err := a.b.Put(ctx, key, strings.NewReader("x"), -1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Put size -1: err = %v, want ErrInvalidArgument", err)
	}
	if _, err := a.b.GetRange(ctx, key, -1, 5); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("GetRange offset -1: err = %v, want ErrInvalidArgument", err)
	}
	if _, err := a.b.GetRange(ctx, key, 0, -2); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("GetRange length -2: err = %v, want ErrInvalidArgument", err)
	}
}

// writeChunks writes data in uneven small writes, so the writer has to
// coalesce them into parts.
func writeChunks(t *testing.T, w io.Writer, data []byte) {
	t.Helper()
	sizes := []int{1, 100, 64<<10 + 3, 7, 300<<10 + 11}
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		if m, err := w.Write(data[:n]); err != nil || m != n {
			t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
		}
		data = data[n:]
	}
}

func (a *acceptance) multipart(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("multipart/big.bin")
	// Two full parts of MinPartSize and a short last one.
	data := randomBytes(2*MinPartSize + 1<<20 + 123)
	w, err := a.b.NewMultipartWriter(ctx, key, MultipartOptions{PartSize: MinPartSize, Concurrency: 2})
	if err != nil {
		t.Fatalf("NewMultipartWriter: %v", err)
	}
	defer w.Abort(ctx)
	writeChunks(t, w, data)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkInfo(t, "multipart Close", w.Info(), key, data)
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Abort(ctx); err != nil {
		t.Errorf("Abort after Close: %v", err)
	}
	got := a.get(t, key, 0, -1)
	sameBytes(t, "multipart round trip", got, data)
	if ChecksumOf(got) != w.Info().Checksum {
		t.Errorf("checksum of read bytes %s != upload checksum %s", ChecksumOf(got), w.Info().Checksum)
	}
	// A range across the first part boundary.
	sameBytes(t, "range across parts", a.get(t, key, MinPartSize-10, 20), data[MinPartSize-10:MinPartSize+10])
	head, err := a.b.Head(ctx, key)
	if err != nil || head.Size != int64(len(data)) {
		t.Errorf("Head = %+v, %v", head, err)
	}
	if head.ETag != w.Info().ETag {
		t.Errorf("Head ETag %q != Close ETag %q", head.ETag, w.Info().ETag)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: err = %v, want ErrClosed", err)
	}
}

func (a *acceptance) multipartSmall(t *testing.T) {
	ctx := ctxT(t)
	for _, size := range []int{0, 1, 1000} {
		key := a.key(fmt.Sprintf("multipart/small-%d", size))
		data := randomBytes(size)
		w, err := a.b.NewMultipartWriter(ctx, key, MultipartOptions{})
		if err != nil {
			t.Fatalf("NewMultipartWriter: %v", err)
		}
		writeChunks(t, w, data)
		if err := w.Close(); err != nil {
			t.Fatalf("Close %d bytes: %v", size, err)
		}
		checkInfo(t, "multipart Close", w.Info(), key, data)
		sameBytes(t, fmt.Sprintf("multipart of %d bytes", size), a.get(t, key, 0, -1), data)
	}
}

func (a *acceptance) multipartIfAbsent(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("multipart/conditional")
	data := randomBytes(MinPartSize + 1000)
	w, err := a.b.NewMultipartWriter(ctx, key, MultipartOptions{IfAbsent: true})
	if err != nil {
		t.Fatalf("NewMultipartWriter: %v", err)
	}
	writeChunks(t, w, data)
	if err := w.Close(); err != nil {
		t.Fatalf("IfAbsent multipart on a new key: %v", err)
	}
	w, err = a.b.NewMultipartWriter(ctx, key, MultipartOptions{IfAbsent: true, PartSize: MinPartSize})
	if err != nil {
		t.Fatalf("NewMultipartWriter: %v", err)
	}
	writeChunks(t, w, randomBytes(MinPartSize+10))
	if err := w.Close(); !IsPreconditionFailed(err) {
		t.Fatalf("IfAbsent multipart on an existing key: err = %v, want IsPreconditionFailed", err)
	}
	sameBytes(t, "after refused multipart", a.get(t, key, 0, -1), data)
}

func (a *acceptance) multipartAbort(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("multipart/aborted")
	w, err := a.b.NewMultipartWriter(ctx, key, MultipartOptions{PartSize: MinPartSize})
	if err != nil {
		t.Fatalf("NewMultipartWriter: %v", err)
	}
	// More than a part, so at least one was uploaded before the abort.
	writeChunks(t, w, randomBytes(MinPartSize+1<<20))
	if err := w.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close after Abort: err = %v, want ErrClosed", err)
	}
	if _, err := a.b.Head(ctx, key); !IsNotFound(err) {
		t.Errorf("Head after Abort: err = %v, want IsNotFound", err)
	}
	for info, err := range a.b.List(ctx, a.key("multipart/aborted")) {
		t.Errorf("List after Abort: %+v, %v", info, err)
	}
}

func (a *acceptance) list(t *testing.T, prefix string) []ObjectInfo {
	t.Helper()
	var out []ObjectInfo
	for info, err := range a.b.List(ctxT(t), prefix) {
		if err != nil {
			t.Fatalf("List %q: %v", prefix, err)
		}
		out = append(out, info)
	}
	return out
}

func keysOf(infos []ObjectInfo) []string {
	var keys []string
	for _, i := range infos {
		keys = append(keys, i.Key)
	}
	return keys
}

func (a *acceptance) listPrefix(t *testing.T) {
	// Plain string prefixes, and byte order: '-' (0x2d) sorts before '/'
	// (0x2f), which a directory walk gets wrong.
	names := []string{"lp/a/1", "lp/a/2/deep/x", "lp/a-b", "lp/ab", "lp/b/1", "lp/a.txt"}
	for _, n := range names {
		a.put(t, a.key(n), []byte(n))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"lp/", []string{"lp/a-b", "lp/a.txt", "lp/a/1", "lp/a/2/deep/x", "lp/ab", "lp/b/1"}},
		{"lp/a", []string{"lp/a-b", "lp/a.txt", "lp/a/1", "lp/a/2/deep/x", "lp/ab"}},
		{"lp/a/", []string{"lp/a/1", "lp/a/2/deep/x"}},
		{"lp/a/2/deep/x", []string{"lp/a/2/deep/x"}},
		{"lp/c", nil},
	} {
		var want []string
		for _, w := range tc.want {
			want = append(want, a.key(w))
		}
		got := a.list(t, a.key(tc.prefix))
		if !slices.Equal(keysOf(got), want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, keysOf(got), want)
		}
		for _, info := range got {
			if info.Size != int64(len(strings.TrimPrefix(info.Key, a.run))) {
				t.Errorf("List: %q has Size %d", info.Key, info.Size)
			}
			checkModified(t, "List", info.Key, info.LastModified)
		}
	}
	// Breaking out of the loop early is allowed and stops the listing.
	n := 0
	for _, err := range a.b.List(ctxT(t), a.key("lp/")) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("early break yielded %d", n)
	}
}

func (a *acceptance) listMany(t *testing.T) {
	const n = 1100
	ctx := ctxT(t)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = a.key(fmt.Sprintf("many/%05d", i))
	}
	var (
		wg   sync.WaitGroup
		work = make(chan string)
		errs = make(chan error, n)
	)
	for range 16 {
		wg.Go(func() {
			for k := range work {
				if _, err := a.b.Put(ctx, k, strings.NewReader("x"), 1); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Put: %v", err)
	}
	got := keysOf(a.list(t, a.key("many/")))
	if !slices.Equal(got, keys) {
		t.Fatalf("List of %d keys returned %d (first %q, last %q)", n, len(got), first(got), last(got))
	}
	// DeleteMany crosses the 1000-key batch limit of S3 too.
	if err := a.b.DeleteMany(ctx, keys); err != nil {
		t.Fatalf("DeleteMany: %v", err)
	}
	if got := a.list(t, a.key("many/")); len(got) != 0 {
		t.Fatalf("after DeleteMany, List returned %d keys", len(got))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func (a *acceptance) delete(t *testing.T) {
	ctx := ctxT(t)
	key := a.key("delete/one")
	a.put(t, key, []byte("doomed"))
	if err := a.b.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := a.b.Head(ctx, key); !IsNotFound(err) {
		t.Errorf("Head after Delete: err = %v, want IsNotFound", err)
	}
	if err := a.b.Delete(ctx, key); err != nil {
		t.Errorf("Delete of a missing key: %v, want nil", err)
	}
	keys := []string{a.key("delete/m1"), a.key("delete/m2"), a.key("delete/m3")}
	for _, k := range keys[:2] {
		a.put(t, k, []byte(k))
	}
	// keys[2] was never written: DeleteMany ignores missing keys.
	if err := a.b.DeleteMany(ctx, keys); err != nil {
		t.Fatalf("DeleteMany: %v", err)
	}
	if got := a.list(t, a.key("delete/")); len(got) != 0 {
		t.Errorf("after DeleteMany: %q", keysOf(got))
	}
	if err := a.b.DeleteMany(ctx, nil); err != nil {
		t.Errorf("DeleteMany(nil): %v", err)
	}
}

func (a *acceptance) contextCancel(t *testing.T) {
	key := a.key("cancel/object")
	// HTTP transports notice a cancelled body read on another goroutine;
	// on a loaded machine a 3 MiB rest was read in full before that ran.
	data := randomBytes(32 << 20)
	a.put(t, key, data)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	isCancel := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: err = %v, want context.Canceled", op, err)
		}
		if IsTransient(err) {
			t.Errorf("%s: cancellation classified transient: %v", op, err)
		}
	}
	_, err := a.b.Put(cancelled, a.key("cancel/put"), bytes.NewReader(data), int64(len(data)))
	isCancel("Put", err)
	_, err = a.b.PutIfAbsent(cancelled, a.key("cancel/put"), bytes.NewReader(data), int64(len(data)))
	isCancel("PutIfAbsent", err)
	_, err = a.b.Head(cancelled, key)
	isCancel("Head", err)
	rc, err := a.b.GetRange(cancelled, key, 0, -1)
	if err == nil {
		rc.Close()
	}
	isCancel("GetRange", err)
	for _, err := range a.b.List(cancelled, a.run) {
		isCancel("List", err)
		break
	}
	isCancel("Delete", a.b.Delete(cancelled, key))

	// Cancelling mid-read fails the read rather than ending it cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, err = a.b.GetRange(ctx, key, 0, -1)
	if err != nil {
		t.Fatalf("GetRange: %v", err)
	}
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(rc, buf); err != nil {
		t.Fatalf("first read: %v", err)
	}
	cancel()
	rest, err := io.ReadAll(rc)
	rc.Close()
	if err == nil && len(rest) == len(data)-len(buf) {
		t.Errorf("a read cancelled mid-way returned the whole object")
	}

	// A writer whose context is cancelled cannot complete.
	ctx, cancel = context.WithCancel(context.Background())
	w, err := a.b.NewMultipartWriter(ctx, a.key("cancel/multipart"), MultipartOptions{})
	if err != nil {
		t.Fatalf("NewMultipartWriter: %v", err)
	}
	_, _ = w.Write([]byte("some bytes"))
	cancel()
	if err := w.Close(); err == nil {
		t.Errorf("multipart Close after cancel succeeded")
	}
	if _, err := a.b.Head(ctxT(t), a.key("cancel/multipart")); !IsNotFound(err) {
		t.Errorf("cancelled multipart left an object: Head err = %v", err)
	}
	// The object is intact after all that.
	sameBytes(t, "after cancellations", a.get(t, key, 0, -1), data)
}
