package tiertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"google.golang.org/api/googleapi"
)

const testBucket = "aerostream-tiertest"

// provider is how serve reaches one real object store: its flags and the
// environment its process needs.
type provider struct {
	name string
	args []string
	env  []string
}

func skipWithout(t *testing.T, v string) string {
	t.Helper()
	s := os.Getenv(v)
	if s == "" {
		t.Skipf("%s is not set; `make test-tiered` starts the object store servers and runs this test", v)
	}
	return s
}

// s3Provider points at MinIO through endpoint (MinIO itself, or a fault
// proxy in front of it).
func s3Provider(t *testing.T, endpoint string) provider {
	real := skipWithout(t, "AEROSTREAM_TEST_S3_ENDPOINT")
	access, secret := os.Getenv("AEROSTREAM_TEST_S3_ACCESS_KEY"), os.Getenv("AEROSTREAM_TEST_S3_SECRET_KEY")
	host := strings.TrimPrefix(real, "http://")
	c, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := c.BucketExists(ctx, testBucket); err != nil {
		t.Fatal(err)
	} else if !ok {
		if err := c.MakeBucket(ctx, testBucket, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if endpoint == "" {
		endpoint = real
	}
	prefix := fmt.Sprintf("run-%d", time.Now().UnixNano())
	return provider{name: "s3", args: []string{"--tiered_storage.enabled", "--tiered_storage.provider", "s3",
		"--tiered_storage.s3.bucket", testBucket, "--tiered_storage.s3.prefix", prefix,
		"--tiered_storage.s3.region", "us-east-1", "--tiered_storage.s3.endpoint_url", endpoint,
		"--tiered_storage.s3.force_path_style"},
		// Credentials through the standard AWS variables, as production
		// would use them, rather than inline.
		env: []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret}}
}

func gcsProvider(t *testing.T) provider {
	endpoint := skipWithout(t, "AEROSTREAM_TEST_GCS_ENDPOINT")
	t.Setenv("STORAGE_EMULATOR_HOST", endpoint)
	ctx := context.Background()
	c, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Bucket(testBucket).Create(ctx, "aerostream-test-project", nil)
	var gerr *googleapi.Error
	if err != nil && !(errors.As(err, &gerr) && gerr.Code == http.StatusConflict) {
		t.Fatalf("creating bucket: %v", err)
	}
	return provider{name: "gcs", args: []string{"--tiered_storage.enabled", "--tiered_storage.provider", "gcs",
		"--tiered_storage.gcs.bucket", testBucket, "--tiered_storage.gcs.prefix", fmt.Sprintf("run-%d", time.Now().UnixNano())},
		env: []string{"STORAGE_EMULATOR_HOST=" + endpoint}}
}

func azureProvider(t *testing.T) provider {
	endpoint := skipWithout(t, "AEROSTREAM_TEST_AZURE_ENDPOINT")
	account, key := os.Getenv("AEROSTREAM_TEST_AZURE_ACCOUNT"), os.Getenv("AEROSTREAM_TEST_AZURE_KEY")
	cred, err := container.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(endpoint+"/"+testBucket, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatal(err)
	}
	return provider{name: "azure", args: []string{"--tiered_storage.enabled", "--tiered_storage.provider", "azure",
		"--tiered_storage.azure.container_name", testBucket, "--tiered_storage.azure.account_name", account,
		"--tiered_storage.azure.endpoint", endpoint, "--tiered_storage.azure.prefix", fmt.Sprintf("run-%d", time.Now().UnixNano())},
		env: []string{"AZURE_STORAGE_KEY=" + key}}
}
