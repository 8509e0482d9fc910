package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/tierd/objstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to MinIO open.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	)
}

const testBucket = "aerostream-test"

// server returns the MinIO the test runs against, or skips: the one visible
// gate for tests that need a real S3 (DESIGN §6.8).
func server(t *testing.T) (endpoint, access, secret string) {
	t.Helper()
	endpoint = os.Getenv("AEROSTREAM_TEST_S3_ENDPOINT")
	if endpoint == "" {
		t.Skip("AEROSTREAM_TEST_S3_ENDPOINT is not set; `make test-objstore` starts MinIO and runs this test")
	}
	return endpoint, os.Getenv("AEROSTREAM_TEST_S3_ACCESS_KEY"), os.Getenv("AEROSTREAM_TEST_S3_SECRET_KEY")
}

// ensureBucket creates the test bucket with admin credentials; the provider
// itself never creates buckets (that is provisioning, not tiering).
func ensureBucket(t *testing.T, endpoint, access, secret, name string) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	c, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Secure: strings.HasPrefix(endpoint, "https://")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := c.BucketExists(ctx, name); err != nil {
		t.Fatal(err)
	} else if !ok {
		if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func testConfig(t *testing.T) Config {
	endpoint, access, secret := server(t)
	ensureBucket(t, endpoint, access, secret, testBucket)
	return Config{
		Bucket:          testBucket,
		Prefix:          fmt.Sprintf("/run-%d/", time.Now().UnixNano()),
		Region:          "us-east-1",
		EndpointURL:     endpoint,
		AccessKeyID:     access,
		SecretAccessKey: secret,
		ForcePathStyle:  true,
	}
}

func open(t *testing.T, cfg Config) objstore.Bucket {
	t.Helper()
	b, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestAcceptance(t *testing.T) {
	cfg := testConfig(t)
	b := open(t, cfg)
	objstore.AcceptanceTest(t, b)

	// Aborted and failed multipart uploads were aborted on the server, not
	// just forgotten: nothing incomplete remains under the prefix.
	bk := b.(*bucket)
	for up := range bk.core.ListIncompleteUploads(context.Background(), testBucket, strings.Trim(cfg.Prefix, "/")+"/", true) {
		t.Errorf("incomplete upload left: %+v", up)
	}
	if strings.Contains(b.Name(), cfg.SecretAccessKey) {
		t.Errorf("Name %q contains the secret", b.Name())
	}
}

func TestMissingBucket(t *testing.T) {
	cfg := testConfig(t)
	cfg.Bucket = "aerostream-no-such-bucket"
	_, err := New(context.Background(), cfg, Options{})
	if !errors.Is(err, objstore.ErrBucketNotFound) || !strings.Contains(err.Error(), cfg.Bucket) {
		t.Fatalf("New on a missing bucket: %v", err)
	}
	// Without the startup check, the first operation says the same.
	b, err := New(context.Background(), cfg, Options{SkipBucketCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), "k", strings.NewReader("x"), 1); !errors.Is(err, objstore.ErrBucketNotFound) {
		t.Errorf("Put into a missing bucket: %v", err)
	}
}

func TestWrongCredentials(t *testing.T) {
	cfg := testConfig(t)
	cfg.SecretAccessKey = "not-the-secret"
	_, err := New(context.Background(), cfg, Options{})
	if !errors.Is(err, objstore.ErrAccessDenied) || objstore.IsTransient(err) {
		t.Fatalf("New with a wrong secret: %v", err)
	}
	if strings.Contains(err.Error(), "not-the-secret") {
		t.Errorf("error leaks the secret: %v", err)
	}
}

// chainEnv empties every source of the credential chain that is not under
// test, so the test can neither pass on the host's own credentials nor
// reach out to the EC2 metadata service.
func chainEnv(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ENDPOINT_URL_STS"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

// roundTrip proves a bucket opened from the chain can write and read.
func roundTrip(t *testing.T, b objstore.Bucket) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.Put(ctx, "chain/obj", strings.NewReader("via the chain"), 13); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Head(ctx, "chain/obj"); err != nil || info.Size != 13 {
		t.Fatalf("Head = %+v, %v", info, err)
	}
	if err := b.Delete(ctx, "chain/obj"); err != nil {
		t.Fatal(err)
	}
}

func TestEnvCredentials(t *testing.T) {
	cfg := testConfig(t)
	chainEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretAccessKey)
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
	roundTrip(t, open(t, cfg))
}

// temporaryCredentials gets short-lived credentials with a session token
// from MinIO's own STS AssumeRole, so the container and web-identity tests
// hand out what AWS would: keys plus a token the server checks.
func temporaryCredentials(t *testing.T, cfg Config) credentials.Value {
	t.Helper()
	creds, err := credentials.NewSTSAssumeRole(cfg.EndpointURL, credentials.STSAssumeRoleOptions{
		AccessKey: cfg.AccessKeyID, SecretKey: cfg.SecretAccessKey, Location: cfg.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := creds.GetWithContext(nil)
	if err != nil {
		t.Fatalf("MinIO AssumeRole: %v", err)
	}
	if v.SessionToken == "" {
		t.Fatal("AssumeRole returned no session token")
	}
	return v
}

// TestContainerCredentials serves the ECS/EKS container credentials
// endpoint on loopback (AWS_CONTAINER_CREDENTIALS_FULL_URI must be
// loopback) with temporary MinIO credentials.
func TestContainerCredentials(t *testing.T) {
	cfg := testConfig(t)
	tmp := temporaryCredentials(t, cfg)
	const authToken = "container-auth-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != authToken {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"AccessKeyId": tmp.AccessKeyID, "SecretAccessKey": tmp.SecretAccessKey,
			"Token": tmp.SessionToken, "Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	defer srv.Close()
	chainEnv(t)
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/v2/credentials")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", authToken)
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
	roundTrip(t, open(t, cfg))
}

// TestWebIdentityCredentials is IRSA: a projected token file and a role
// ARN, exchanged at STS (AssumeRoleWithWebIdentity) for temporary keys. The
// STS here is a loopback stand-in that checks the token and role and hands
// out real temporary MinIO credentials; MinIO then checks those.
func TestWebIdentityCredentials(t *testing.T) {
	cfg := testConfig(t)
	tmp := temporaryCredentials(t, cfg)
	const token, role = "projected-service-account-token", "arn:aws:iam::123456789012:role/aerostream"
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRoleWithWebIdentity" ||
			r.Form.Get("WebIdentityToken") != token || r.Form.Get("RoleArn") != role {
			http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>
<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>`, tmp.AccessKeyID, tmp.SecretAccessKey, tmp.SessionToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer sts.Close()
	chainEnv(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
	t.Setenv("AWS_ROLE_ARN", role)
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
	roundTrip(t, open(t, cfg))
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Bucket: "b"}
	for _, tc := range []struct {
		cfg  Config
		want string // a key named in the error, "" for valid
	}{
		{ok, ""},
		{Config{}, "bucket"},
		{Config{Bucket: "b", AccessKeyID: "id"}, "secret_access_key"},
		{Config{Bucket: "b", SecretAccessKey: "s"}, "access_key_id"},
		{Config{Bucket: "b", EndpointURL: "ftp://x"}, "endpoint_url"},
		{Config{Bucket: "b", EndpointURL: "http://x:9000/path"}, "endpoint_url"},
		{Config{Bucket: "b", EndpointURL: "minio.local:9000"}, ""},
		{Config{Bucket: "b", EndpointURL: "http://127.0.0.1:9000/"}, ""},
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
	}
}

func TestSecretsRedacted(t *testing.T) {
	cfg := Config{Bucket: "b", AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG"}
	var sb strings.Builder
	for _, s := range []string{cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%v %+v", cfg, cfg), cfg.LogValue().String()} {
		sb.WriteString(s)
	}
	if strings.Contains(sb.String(), cfg.SecretAccessKey) {
		t.Errorf("secret in %q", sb.String())
	}
	b, err := New(context.Background(), Config{Bucket: "b", Prefix: "p", AccessKeyID: "id", SecretAccessKey: "sekrit", EndpointURL: "http://127.0.0.1:1"}, Options{SkipBucketCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.Name(), "sekrit") || b.Name() != "s3://b/p (http://127.0.0.1:1)" {
		t.Errorf("Name = %q", b.Name())
	}
}

func TestMapErr(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		resp minio.ErrorResponse
		want error
	}{
		{minio.ErrorResponse{Code: "NoSuchKey", StatusCode: 404}, objstore.ErrNotFound},
		{minio.ErrorResponse{Code: "NoSuchBucket", StatusCode: 404}, objstore.ErrBucketNotFound},
		{minio.ErrorResponse{Code: "PreconditionFailed", StatusCode: 412}, objstore.ErrPreconditionFailed},
		{minio.ErrorResponse{Code: "InvalidRange", StatusCode: 416}, objstore.ErrInvalidRange},
		{minio.ErrorResponse{Code: "SignatureDoesNotMatch", StatusCode: 403}, objstore.ErrAccessDenied},
		{minio.ErrorResponse{Code: "SlowDown", StatusCode: 503}, objstore.ErrTransient},
		{minio.ErrorResponse{Code: "Whatever", StatusCode: 502}, objstore.ErrTransient},
		{minio.ErrorResponse{Code: "ConditionalRequestConflict", StatusCode: 409}, objstore.ErrTransient},
	} {
		if err := mapErr(ctx, tc.resp); !errors.Is(err, tc.want) {
			t.Errorf("mapErr(%s %d) = %v, want %v", tc.resp.Code, tc.resp.StatusCode, err, tc.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := mapErr(cancelled, errors.New("connection closed")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// damager is a transport that changes one byte of the body of every PUT to
// a key under "damaged/" as it goes out, as a faulty link or proxy would.
type damager struct {
	base http.RoundTripper
	hits atomic.Int32
}

func (d *damager) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && req.Body != nil && strings.Contains(req.URL.Path, "/damaged/") {
		// The request itself, not a clone: minio-go fills in the CRC32C
		// trailer once the body is read, in the request's own Trailer.
		req.Body = &flipReader{ReadCloser: req.Body, at: 300_000, hit: &d.hits}
	}
	return d.base.RoundTrip(req)
}

type flipReader struct {
	io.ReadCloser
	at, n int64
	hit   *atomic.Int32
}

func (f *flipReader) Read(p []byte) (int, error) {
	k, err := f.ReadCloser.Read(p)
	if f.n <= f.at && f.at < f.n+int64(k) {
		p[f.at-f.n] ^= 0x20
		f.hit.Add(1)
	}
	f.n += int64(k)
	return k, err
}

// TestDamagedUpload: MinIO refuses a body changed on its way, however the
// provider sends it: unsigned with a CRC32C trailer (the default), signed
// (sign_payload), or as a multipart part with its Content-MD5. Nothing is
// stored under the key, and the same transport carries an intact upload.
func TestDamagedUpload(t *testing.T) {
	body := bytes.Repeat([]byte("aerostream"), 600_000) // 6 MB: two parts of 5 MiB
	for _, sign := range []bool{false, true} {
		t.Run(fmt.Sprintf("sign_payload=%v", sign), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.SignPayload = sign
			d := &damager{base: http.DefaultTransport.(*http.Transport).Clone()}
			b, err := New(context.Background(), cfg, Options{Transport: d})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx := context.Background()
			if _, err := b.Put(ctx, "intact/one", bytes.NewReader(body[:1<<20]), 1<<20); err != nil {
				t.Fatalf("intact put: %v", err)
			}
			// Unsigned, the server names the damage, and a retry can
			// succeed. Signed, it cannot tell damage from a wrong key.
			retryable := !sign
			if _, err := b.Put(ctx, "damaged/one", bytes.NewReader(body[:1<<20]), 1<<20); err == nil {
				t.Fatal("a put damaged in transit was accepted")
			} else if objstore.IsTransient(err) != retryable {
				t.Errorf("damaged put: %v; transient %v, want %v", err, objstore.IsTransient(err), retryable)
			}
			w, err := b.NewMultipartWriter(ctx, "damaged/multi", objstore.MultipartOptions{PartSize: objstore.MinPartSize})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort(ctx) // a no-op after a failed Close, which aborts itself
			// A failed part may surface in Write (the next part's) or in
			// Close; either way the error must say what happened.
			if _, err = w.Write(body); err == nil {
				err = w.Close()
			}
			if err == nil {
				t.Fatal("a multipart upload damaged in transit was completed")
			}
			// Unsigned, the part's Content-MD5 names the damage.
			if objstore.IsTransient(err) != retryable {
				t.Errorf("damaged multipart upload: %v; transient %v, want %v", err, objstore.IsTransient(err), retryable)
			}
			if d.hits.Load() < 2 {
				t.Fatalf("the transport damaged %d bodies, want both uploads", d.hits.Load())
			}
			for _, key := range []string{"damaged/one", "damaged/multi"} {
				if _, err := b.Head(ctx, key); !objstore.IsNotFound(err) {
					t.Errorf("%s after a damaged upload: %v, want not found", key, err)
				}
			}
		})
	}
}
