package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/tools/config"
)

// newHealthCmd is `aerostream health`: one GET of a node's /healthz that
// exits 0 when it answers 2xx. It exists so that a container's HEALTHCHECK
// and a Kubernetes exec probe need no shell, curl or wget in the image.
func newHealthCmd(env Env) *cobra.Command {
	var (
		url, file string
		timeout   time.Duration
		insecure  bool
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Ask a node's /healthz whether it is ready; exit 0 when it is",
		Long: `GETs the node's readiness endpoint and exits 0 when it answers 2xx, 1
otherwise (not listening, not ready, or failed), printing its status and
reasons. Without --url it asks /healthz on listeners.http of the same
configuration a daemon would load (--config, AEROSTREAM_CONFIG,
./aerostream.toml, AEROSTREAM_* variables), on loopback when that listener
binds every interface.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				loaded, err := config.Load(config.Options{File: file, Env: env.Environ})
				if err != nil {
					return err
				}
				if url, err = healthURL(loaded.Config.Listeners.HTTP); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return checkHealth(ctx, env, url, insecure)
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "readiness URL to GET (default: /healthz on listeners.http)")
	cmd.Flags().StringVar(&file, "config", "", "config file whose listeners.http is asked when --url is not given")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "over https, do not verify the server's certificate (a probe of the node's own loopback address)")
	return cmd
}

// healthURL is the /healthz URL of a listeners.http address: https for an
// SSL:// listener, and loopback for one that binds every interface, since
// the probe runs beside the node.
func healthURL(listener string) (string, error) {
	if listener == "" {
		return "", fmt.Errorf("listeners.http is empty: the node serves no /healthz; give --url")
	}
	proto, addr, err := config.SplitListener(listener)
	if err != nil {
		return "", fmt.Errorf("listeners.http %q: %w", listener, err)
	}
	if strings.HasPrefix(addr, "unix:") {
		return "", fmt.Errorf("listeners.http %q is a Unix socket: give --url", listener)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listeners.http %q: %w", listener, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if config.IsTLS(proto) {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/healthz", nil
}

// healthAnswer is the body of /healthz.
type healthAnswer struct {
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"`
}

func checkHealth(ctx context.Context, env Env, url string, insecure bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("health: %s: %w", url, err)
	}
	defer resp.Body.Close()
	// A readiness answer is a few reasons long; the bound keeps a wrong
	// URL from streaming something large into the probe.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("health: %s: reading the answer: %w", url, err)
	}
	var ans healthAnswer
	summary := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &ans) == nil && ans.Status != "" {
		summary = ans.Status
		if len(ans.Reasons) > 0 {
			summary += ": " + strings.Join(ans.Reasons, "; ")
		}
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("health: %s answered %s: %s", url, resp.Status, summary)
	}
	_, err = fmt.Fprintln(env.Stdout, summary)
	return err
}
