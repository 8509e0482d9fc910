package s3

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// Config is [tiered_storage.s3]; the toml tags are the documented keys.
type Config struct {
	Bucket string `toml:"bucket"`
	// Prefix is prepended to every key ("aerostream/prod").
	Prefix string `toml:"prefix"`
	// Region is the bucket's region; empty lets minio-go discover it
	// (one extra request per bucket, then cached).
	Region string `toml:"region"`
	// EndpointURL is the service, e.g. "http://127.0.0.1:9000" for MinIO;
	// empty means AWS S3. A URL without a scheme means https.
	EndpointURL string `toml:"endpoint_url"`
	// AccessKeyID and SecretAccessKey are inline credentials; both or
	// neither. Neither means the standard AWS credential chain (doc.go).
	AccessKeyID     string `toml:"access_key_id"`
	SecretAccessKey string `toml:"secret_access_key"`
	// ForcePathStyle addresses the bucket as endpoint/bucket instead of
	// bucket.endpoint; MinIO and most S3-compatible services need it.
	ForcePathStyle bool `toml:"force_path_style"`
	// SignPayload signs every upload's body over http (SigV4 streaming:
	// a SHA-256 of each 64 KiB on both sides). Without it, a body goes
	// unsigned with a CRC32C trailer the server checks, as it does over
	// https either way: the same integrity against damage, for about
	// half the client's CPU per upload and a seventh less of MinIO's
	// (measured with 1 MiB PUTs to MinIO on loopback). Over plain http
	// only a signed body also stops someone on the path from changing it.
	SignPayload bool `toml:"sign_payload"`
}

const redacted = "[REDACTED]"

// String renders the config for logs and errors with the secret redacted.
func (c Config) String() string {
	secret := ""
	if c.SecretAccessKey != "" {
		secret = redacted
	}
	return fmt.Sprintf("s3{bucket=%q prefix=%q region=%q endpoint_url=%q access_key_id=%q secret_access_key=%q force_path_style=%v sign_payload=%v}",
		c.Bucket, c.Prefix, c.Region, c.EndpointURL, c.AccessKeyID, secret, c.ForcePathStyle, c.SignPayload)
}

// LogValue keeps the secret out of slog output too, which does not use
// String for structs.
func (c Config) LogValue() slog.Value {
	return slog.StringValue(c.String())
}

// endpoint splits EndpointURL into minio-go's host and TLS flag.
func (c Config) endpoint() (host string, secure bool, err error) {
	raw := c.EndpointURL
	if raw == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", false, fmt.Errorf("%w: s3: endpoint_url %q must be scheme://host[:port] with no path", objstore.ErrInvalidConfig, c.EndpointURL)
	}
	switch u.Scheme {
	case "https":
		return u.Host, true, nil
	case "http":
		return u.Host, false, nil
	}
	return "", false, fmt.Errorf("%w: s3: endpoint_url %q: scheme must be http or https", objstore.ErrInvalidConfig, c.EndpointURL)
}

// Validate checks the config without contacting the service. Errors name
// the key at fault.
func (c Config) Validate() error {
	if c.Bucket == "" {
		return fmt.Errorf("%w: s3: bucket is required", objstore.ErrInvalidConfig)
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		missing := "secret_access_key"
		if c.AccessKeyID == "" {
			missing = "access_key_id"
		}
		return fmt.Errorf("%w: s3: %s is required when the other inline credential is set", objstore.ErrInvalidConfig, missing)
	}
	_, _, err := c.endpoint()
	return err
}
