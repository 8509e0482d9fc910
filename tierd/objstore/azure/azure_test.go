package azure

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/tierd/objstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to Azurite open.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	)
}

const testContainer = "aerostream-test"

// server returns the Azurite config the test runs against, or skips: the
// one visible gate for tests that need a real Azure (DESIGN §6.8).
func server(t *testing.T) Config {
	t.Helper()
	endpoint := os.Getenv("AEROSTREAM_TEST_AZURE_ENDPOINT")
	if endpoint == "" {
		t.Skip("AEROSTREAM_TEST_AZURE_ENDPOINT is not set; `make test-objstore` starts Azurite and runs this test")
	}
	return Config{
		ContainerName: testContainer,
		AccountName:   os.Getenv("AEROSTREAM_TEST_AZURE_ACCOUNT"),
		AccessKey:     os.Getenv("AEROSTREAM_TEST_AZURE_KEY"),
		Endpoint:      endpoint,
		Prefix:        fmt.Sprintf("run-%d", time.Now().UnixNano()),
	}
}

// ensureContainer creates the test container; the provider never creates
// containers.
func ensureContainer(t *testing.T, cfg Config) {
	t.Helper()
	cred, err := container.NewSharedKeyCredential(cfg.AccountName, cfg.AccessKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(cfg.Endpoint+"/"+cfg.ContainerName, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatal(err)
	}
}

func testConfig(t *testing.T) Config {
	cfg := server(t)
	ensureContainer(t, cfg)
	return cfg
}

func TestAcceptance(t *testing.T) {
	cfg := testConfig(t)
	b, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	objstore.AcceptanceTest(t, b)
	if strings.Contains(b.Name(), cfg.AccessKey) {
		t.Errorf("Name %q contains the key", b.Name())
	}
}

// Put above singlePutMax goes through staged blocks, conditional included.
func TestLargePut(t *testing.T) {
	cfg := testConfig(t)
	b, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := make([]byte, singlePutMax+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	info, err := b.PutIfAbsent(ctx, "large", strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.Checksum != objstore.ChecksumOf(data) {
		t.Errorf("info %+v", info)
	}
	if _, err := b.PutIfAbsent(ctx, "large", strings.NewReader(string(data)), int64(len(data))); !objstore.IsPreconditionFailed(err) {
		t.Errorf("second large PutIfAbsent: %v", err)
	}
	if err := b.Delete(ctx, "large"); err != nil {
		t.Fatal(err)
	}
}

func TestMissingContainer(t *testing.T) {
	cfg := server(t)
	cfg.ContainerName = "aerostream-no-such-container"
	_, err := New(context.Background(), cfg, Options{})
	if !errors.Is(err, objstore.ErrBucketNotFound) || !strings.Contains(err.Error(), cfg.ContainerName) {
		t.Fatalf("New on a missing container: %v", err)
	}
}

func TestWrongKey(t *testing.T) {
	cfg := testConfig(t)
	cfg.AccessKey = base64.StdEncoding.EncodeToString([]byte("not the account key at all, no"))
	_, err := New(context.Background(), cfg, Options{})
	if !errors.Is(err, objstore.ErrAccessDenied) || objstore.IsTransient(err) {
		t.Fatalf("New with a wrong key: %v", err)
	}
	if strings.Contains(err.Error(), cfg.AccessKey) {
		t.Errorf("error leaks the key: %v", err)
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	cfg := testConfig(t)
	t.Setenv("AZURE_STORAGE_KEY", cfg.AccessKey)
	cfg.AccessKey = ""
	b, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), "env", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(context.Background(), "env"); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Setenv("AZURE_STORAGE_KEY", "")
	key := base64.StdEncoding.EncodeToString([]byte("k"))
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{ContainerName: "c", AccountName: "a", AccessKey: key}, ""},
		{Config{AccountName: "a", AccessKey: key}, "container_name"},
		{Config{ContainerName: "c", AccessKey: key}, "account_name"},
		{Config{ContainerName: "c", AccountName: "a"}, "access_key"},
		{Config{ContainerName: "c", AccountName: "a", AccessKey: "not base64!"}, "access_key"},
		{Config{ContainerName: "c", AccountName: "a", AccessKey: key, Endpoint: "127.0.0.1:10000"}, "endpoint"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.cfg, err)
			}
			continue
		}
		if !errors.Is(err, objstore.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one naming %s", tc.cfg, err, tc.want)
		}
		if tc.cfg.AccessKey != "" && strings.Contains(err.Error(), tc.cfg.AccessKey) {
			t.Errorf("error leaks the key: %v", err)
		}
	}
	cfg := Config{ContainerName: "c", AccountName: "a", AccessKey: key}
	if s := fmt.Sprintf("%v %+v %s", cfg, cfg, cfg.LogValue()); strings.Contains(s, key) {
		t.Errorf("key in %q", s)
	}
}

func TestMapErr(t *testing.T) {
	ctx := context.Background()
	resp := func(status int, code bloberror.Code) error {
		return &azcore.ResponseError{StatusCode: status, ErrorCode: string(code)}
	}
	for _, tc := range []struct {
		err  error
		want error
	}{
		{resp(404, bloberror.BlobNotFound), objstore.ErrNotFound},
		{resp(404, bloberror.ContainerNotFound), objstore.ErrBucketNotFound},
		{resp(409, bloberror.BlobAlreadyExists), objstore.ErrPreconditionFailed},
		{resp(412, bloberror.ConditionNotMet), objstore.ErrPreconditionFailed},
		{resp(416, bloberror.InvalidRange), objstore.ErrInvalidRange},
		{resp(403, bloberror.AuthenticationFailed), objstore.ErrAccessDenied},
		{resp(503, bloberror.ServerBusy), objstore.ErrTransient},
		{resp(http.StatusBadGateway, ""), objstore.ErrTransient},
	} {
		if err := mapErr(ctx, tc.err); !errors.Is(err, tc.want) {
			t.Errorf("mapErr(%v) = %v, want %v", tc.err, err, tc.want)
		}
	}
}
