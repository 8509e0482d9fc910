package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"go.uber.org/goleak"
	"google.golang.org/api/googleapi"

	"github.com/aerostream/aerostream/tierd/objstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to the emulator open,
		// and the client's gRPC/OpenTelemetry plumbing starts background
		// workers at init.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

const testBucket = "aerostream-test"

// emulator points the client at fake-gcs-server, or skips: the one visible
// gate for tests that need a real GCS (DESIGN §6.8).
func emulator(t *testing.T) {
	t.Helper()
	endpoint := os.Getenv("AEROSTREAM_TEST_GCS_ENDPOINT")
	if endpoint == "" {
		t.Skip("AEROSTREAM_TEST_GCS_ENDPOINT is not set; `make test-objstore` starts fake-gcs-server and runs this test")
	}
	t.Setenv("STORAGE_EMULATOR_HOST", endpoint)
}

// ensureBucket creates the test bucket; the provider never creates buckets.
func ensureBucket(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	c, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Bucket(name).Create(ctx, "aerostream-test-project", nil)
	var gerr *googleapi.Error
	if err != nil && !(errors.As(err, &gerr) && gerr.Code == http.StatusConflict) {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

func testConfig(t *testing.T) Config {
	emulator(t)
	ensureBucket(t, testBucket)
	return Config{Bucket: testBucket, Prefix: fmt.Sprintf("run-%d", time.Now().UnixNano())}
}

func TestAcceptance(t *testing.T) {
	cfg := testConfig(t)
	b, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	objstore.AcceptanceTest(t, b)
}

// Head returns the server's own CRC32C, which must be the one the upload
// computed: that is what lets tierd verify without reading.
func TestServerChecksum(t *testing.T) {
	cfg := testConfig(t)
	b, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	data := []byte(strings.Repeat("checksummed ", 1000))
	put, err := b.Put(ctx, "sum", strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	head, err := b.Head(ctx, "sum")
	if err != nil {
		t.Fatal(err)
	}
	if head.Checksum == "" || head.Checksum != put.Checksum || head.Checksum != objstore.ChecksumOf(data) {
		t.Errorf("Head checksum %q, Put checksum %q, want %q", head.Checksum, put.Checksum, objstore.ChecksumOf(data))
	}
	if err := b.Delete(ctx, "sum"); err != nil {
		t.Fatal(err)
	}
}

func TestMissingBucket(t *testing.T) {
	emulator(t)
	_, err := New(context.Background(), Config{Bucket: "aerostream-no-such-bucket"}, Options{})
	if !errors.Is(err, objstore.ErrBucketNotFound) || !strings.Contains(err.Error(), "aerostream-no-such-bucket") {
		t.Fatalf("New on a missing bucket: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "sa.json")
	os.WriteFile(good, []byte(`{"type":"service_account","client_email":"x@y"}`), 0o600)
	user := filepath.Join(dir, "user.json")
	os.WriteFile(user, []byte(`{"type":"authorized_user"}`), 0o600)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Bucket: "b"}, ""},
		{Config{Bucket: "b", ServiceAccountPath: good}, ""},
		{Config{}, "bucket"},
		{Config{Bucket: "b", ServiceAccountPath: filepath.Join(dir, "missing.json")}, "service_account_path"},
		{Config{Bucket: "b", ServiceAccountPath: user}, "service_account_path"},
		{Config{Bucket: "b", Endpoint: "storage.example:443"}, "endpoint"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.cfg, err)
			}
			continue
		}
		if !errors.Is(err, objstore.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
}

func TestMapErr(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		want error
	}{
		{storage.ErrObjectNotExist, objstore.ErrNotFound},
		{storage.ErrBucketNotExist, objstore.ErrBucketNotFound},
		{&googleapi.Error{Code: 412}, objstore.ErrPreconditionFailed},
		{&googleapi.Error{Code: 416}, objstore.ErrInvalidRange},
		{&googleapi.Error{Code: 403}, objstore.ErrAccessDenied},
		{&googleapi.Error{Code: 429}, objstore.ErrTransient},
		{&googleapi.Error{Code: 503}, objstore.ErrTransient},
	} {
		if err := mapErr(ctx, tc.err); !errors.Is(err, tc.want) {
			t.Errorf("mapErr(%v) = %v, want %v", tc.err, err, tc.want)
		}
	}
}
