package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// `aerostream schema`: the schema registry's REST API from the command
// line (registry/ serves it on listeners.schema_registry).

// errIncompatible: `schema check` found the schema incompatible (exit 1).
var errIncompatible = errors.New("schema is not compatible")

// schemaClient speaks the registry's REST API.
type schemaClient struct {
	env  Env
	base string
	hc   *http.Client
}

// registryError is the registry's {error_code, message} answer.
type registryError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *registryError) Error() string { return fmt.Sprintf("%s (error code %d)", e.Message, e.Code) }

func (c *schemaClient) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("schema registry at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("schema registry at %s: reading the answer: %w", c.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e registryError
		if json.Unmarshal(data, &e) == nil && e.Code != 0 {
			return &e
		}
		return fmt.Errorf("schema registry at %s answered HTTP %d: %s", c.base, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return json.Unmarshal(data, out)
}

// print writes v as indented JSON.
func (c *schemaClient) print(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.env.Stdout, "%s\n", b)
	return err
}

// schemaBody reads a schema from --file (- for stdin) or --schema.
type schemaBody struct {
	file, text, typ string
	refs            []string
}

func (b *schemaBody) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.file, "file", "", "read the schema from this file (- for stdin)")
	cmd.Flags().StringVar(&b.text, "schema", "", "the schema text itself")
	cmd.Flags().StringVar(&b.typ, "type", "AVRO", "schema type: AVRO, PROTOBUF or JSON")
	cmd.Flags().StringArrayVar(&b.refs, "ref", nil, "a reference NAME=SUBJECT:VERSION (repeatable)")
}

func (b *schemaBody) body() (map[string]any, error) {
	text := b.text
	switch {
	case b.file != "" && b.text != "":
		return nil, usageError{errors.New("give --file or --schema, not both")}
	case b.file == "-":
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, err
		}
		text = string(data)
	case b.file != "":
		data, err := os.ReadFile(b.file)
		if err != nil {
			return nil, err
		}
		text = string(data)
	case text == "":
		return nil, usageError{errors.New("no schema: give --file or --schema")}
	}
	body := map[string]any{"schema": text}
	if t := strings.ToUpper(b.typ); t != "AVRO" {
		body["schemaType"] = t
	}
	var refs []map[string]any
	for _, r := range b.refs {
		name, rest, ok1 := strings.Cut(r, "=")
		subject, version, ok2 := strings.Cut(rest, ":")
		v, err := strconv.Atoi(version)
		if !ok1 || !ok2 || name == "" || subject == "" || err != nil {
			return nil, usageError{fmt.Errorf("--ref %q: want NAME=SUBJECT:VERSION", r)}
		}
		refs = append(refs, map[string]any{"name": name, "subject": subject, "version": v})
	}
	if refs != nil {
		body["references"] = refs
	}
	return body, nil
}

func subjectPath(s string) string { return "/subjects/" + url.PathEscape(s) }

func newSchemaCmd(env Env) *cobra.Command {
	c := &schemaClient{env: env, hc: &http.Client{Timeout: 30 * time.Second}}
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Register, read, check and delete schemas in the schema registry",
		Long: `Register, read, check and delete schemas in AeroStream's schema registry
through its Confluent-compatible REST API (listeners.schema_registry, or
/schema-registry on listeners.http).`,
	}
	requireSubcommand(cmd)
	var registryURL string
	var deleted bool
	cmd.PersistentFlags().StringVar(&registryURL, "registry", "http://127.0.0.1:8081", "the schema registry's URL")
	cmd.PersistentPreRun = func(*cobra.Command, []string) {
		if !strings.Contains(registryURL, "://") {
			registryURL = "http://" + registryURL
		}
		c.base = strings.TrimSuffix(registryURL, "/")
	}

	var body schemaBody
	var normalize bool
	register := &cobra.Command{Use: "register SUBJECT", Short: "Register a schema under a subject and print its id",
		Args: needArgs("SUBJECT", 1, 1), RunE: func(cmd *cobra.Command, args []string) error {
			b, err := body.body()
			if err != nil {
				return err
			}
			var out struct {
				ID int32 `json:"id"`
			}
			q := url.Values{}
			if normalize {
				q.Set("normalize", "true")
			}
			if err := c.do(cmd.Context(), http.MethodPost, subjectPath(args[0])+"/versions", q, b, &out); err != nil {
				return err
			}
			_, err = fmt.Fprintf(env.Stdout, "%d\n", out.ID)
			return err
		}}
	body.flags(register)
	register.Flags().BoolVar(&normalize, "normalize", false, "store the schema normalized")

	var id int32
	get := &cobra.Command{Use: "get [SUBJECT [VERSION]]", Short: "Print a subject's version (default latest), or a schema by --id",
		Args: needArgs("SUBJECT [VERSION], or --id", 0, 2), RunE: func(cmd *cobra.Command, args []string) error {
			var out any
			switch {
			case id > 0 && len(args) == 0:
				if err := c.do(cmd.Context(), http.MethodGet, fmt.Sprintf("/schemas/ids/%d", id), nil, nil, &out); err != nil {
					return err
				}
			case id == 0 && len(args) > 0:
				version := "latest"
				if len(args) == 2 {
					version = args[1]
				}
				q := url.Values{}
				if deleted {
					q.Set("deleted", "true")
				}
				if err := c.do(cmd.Context(), http.MethodGet, subjectPath(args[0])+"/versions/"+url.PathEscape(version), q, nil, &out); err != nil {
					return err
				}
			default:
				return usageError{errors.New("schema get: give a SUBJECT [VERSION] or --id, not both")}
			}
			return c.print(out)
		}}
	get.Flags().Int32Var(&id, "id", 0, "the schema's global id")

	list := &cobra.Command{Use: "list [SUBJECT]", Short: "List the subjects, or a subject's versions",
		Args: needArgs("[SUBJECT]", 0, 1), RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if deleted {
				q.Set("deleted", "true")
			}
			path := "/subjects"
			if len(args) == 1 {
				path = subjectPath(args[0]) + "/versions"
			}
			var out []any
			if err := c.do(cmd.Context(), http.MethodGet, path, q, nil, &out); err != nil {
				return err
			}
			for _, v := range out {
				if _, err := fmt.Fprintln(env.Stdout, v); err != nil {
					return err
				}
			}
			return nil
		}}

	var permanent bool
	del := &cobra.Command{Use: "delete SUBJECT [VERSION]", Short: "Delete a subject or one version (soft; --permanent after a soft delete)",
		Args: needArgs("SUBJECT [VERSION]", 1, 2), RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if permanent {
				q.Set("permanent", "true")
			}
			path := subjectPath(args[0])
			if len(args) == 2 {
				path += "/versions/" + url.PathEscape(args[1])
			}
			var out any
			if err := c.do(cmd.Context(), http.MethodDelete, path, q, nil, &out); err != nil {
				return err
			}
			_, err := fmt.Fprintf(env.Stdout, "deleted %v\n", out)
			return err
		}}
	del.Flags().BoolVar(&permanent, "permanent", false, "delete for good (the version must be soft-deleted first)")

	var checkBody schemaBody
	var version string
	check := &cobra.Command{Use: "check SUBJECT", Short: "Check a schema's compatibility with a subject's version (default latest); exit 1 if incompatible",
		Args: needArgs("SUBJECT", 1, 1), RunE: func(cmd *cobra.Command, args []string) error {
			b, err := checkBody.body()
			if err != nil {
				return err
			}
			path := "/compatibility" + subjectPath(args[0]) + "/versions"
			if version != "all" {
				path += "/" + url.PathEscape(version)
			}
			var out struct {
				Is       bool     `json:"is_compatible"`
				Messages []string `json:"messages"`
			}
			if err := c.do(cmd.Context(), http.MethodPost, path, url.Values{"verbose": {"true"}}, b, &out); err != nil {
				return err
			}
			if out.Is {
				_, err := fmt.Fprintln(env.Stdout, "compatible")
				return err
			}
			for _, m := range out.Messages {
				fmt.Fprintln(env.Stdout, m)
			}
			return errIncompatible
		}}
	checkBody.flags(check)
	check.Flags().StringVar(&version, "version", "latest", "the version to check against, latest, or all (those the subject's level names)")

	var mode bool
	config := &cobra.Command{Use: "config [SUBJECT] [LEVEL]", Short: "Print or set the compatibility level (or, with --mode, the mode), global or of a subject",
		Args: needArgs("[SUBJECT] [LEVEL]", 0, 2), RunE: func(cmd *cobra.Command, args []string) error {
			base := "/config"
			key := "compatibility"
			if mode {
				base, key = "/mode", "mode"
			}
			path, value := base, ""
			switch len(args) {
			case 1:
				if isLevelOrMode(args[0]) {
					value = args[0]
				} else {
					path = base + "/" + url.PathEscape(args[0])
				}
			case 2:
				path, value = base+"/"+url.PathEscape(args[0]), args[1]
			}
			var out map[string]string
			if value == "" {
				q := url.Values{}
				if path != base {
					q.Set("defaultToGlobal", "true")
				}
				if err := c.do(cmd.Context(), http.MethodGet, path, q, nil, &out); err != nil {
					return err
				}
			} else if err := c.do(cmd.Context(), http.MethodPut, path, nil, map[string]string{key: strings.ToUpper(value)}, &out); err != nil {
				return err
			}
			for _, v := range out {
				if _, err := fmt.Fprintln(env.Stdout, v); err != nil {
					return err
				}
			}
			return nil
		}}
	config.Flags().BoolVar(&mode, "mode", false, "the mode (READWRITE, READONLY, IMPORT) instead of the compatibility level")

	for _, sub := range []*cobra.Command{get, list} {
		sub.Flags().BoolVar(&deleted, "deleted", false, "include soft-deleted subjects and versions")
	}
	cmd.AddCommand(register, get, list, del, check, config)
	return cmd
}

// isLevelOrMode tells `schema config LEVEL` from `schema config SUBJECT`.
func isLevelOrMode(s string) bool {
	switch strings.ToUpper(s) {
	case "NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE",
		"READWRITE", "READONLY", "IMPORT":
		return true
	}
	return false
}
