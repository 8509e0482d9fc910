package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/registry"
)

// openVoter starts a single-voter controller on loopback and waits until
// it leads.
func openVoter(t testing.TB) *controller.Controller {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.Open(controller.Options{
		NodeID: 1, Dir: filepath.Join(t.TempDir(), "raft"), Listener: ln, Bootstrap: true,
		SessionTimeout: 5 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := c.ClusterInfo(context.Background())
		if err == nil && info.State == "Leader" && info.ClusterID != "" {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader within 20s: %+v %v", info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serveRegistry serves a registry over store and returns its URL.
func serveRegistry(t testing.TB, store controller.SchemaStore, maxBytes int) string {
	t.Helper()
	reg, err := registry.New(registry.Options{Store: store, MaxSchemaBytes: maxBytes,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func srClient(t *testing.T, url string) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode checks that err is the registry's answer with code.
func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a registry error %d", err, code)
	}
	if re.ErrorCode != code {
		t.Fatalf("error code %d (%s), want %d", re.ErrorCode, re.Message, code)
	}
}

const (
	userV1 = `{"type":"record","name":"User","namespace":"t","fields":[{"name":"name","type":"string"}]}`
	// v2 adds a field with a default: BACKWARD compatible.
	userV2 = `{"type":"record","name":"User","namespace":"t","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	// bad adds a field without a default: not BACKWARD compatible.
	userBad = `{"type":"record","name":"User","namespace":"t","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
)

// The franz-go sr client against the registry, over the in-process
// controller (serve) and over the controller client (a gateway process).
func TestSRClient(t *testing.T) {
	c := openVoter(t)
	t.Run("in-process", func(t *testing.T) { testSRClient(t, srClient(t, serveRegistry(t, c, 0))) })
	t.Run("client", func(t *testing.T) {
		cl := controller.NewClient([]string{c.Addr()}, controller.ClientOptions{Timeout: 20 * time.Second})
		t.Cleanup(cl.Close)
		// The same state: subjects of the first run are there already.
		testSRClientAgain(t, srClient(t, serveRegistry(t, cl, 0)))
	})
}

func testSRClient(t *testing.T, cl *sr.Client) {
	ctx := ctxT(t)
	types, err := cl.SupportedTypes(ctx)
	if err != nil || len(types) != 3 {
		t.Fatalf("types = %v, %v", types, err)
	}
	ss, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV1})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != 1 || ss.Version != 1 || ss.Subject != "users-value" {
		t.Fatalf("created %+v", ss)
	}
	// Whitespace does not make another schema.
	id, err := cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: strings.ReplaceAll(userV1, ",", " , ")}, -1, -1)
	if err != nil || id != 1 {
		t.Fatalf("re-register = %d, %v", id, err)
	}
	_, err = cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: userBad}, -1, -1)
	wantCode(t, err, 409)
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "users-value", -1, sr.Schema{Schema: userBad})
	if err != nil || res.Is || len(res.Messages) == 0 {
		t.Fatalf("check bad = %+v, %v", res, err)
	}
	res, err = cl.CheckCompatibility(ctx, "users-value", 1, sr.Schema{Schema: userV2})
	if err != nil || !res.Is {
		t.Fatalf("check v2 = %+v, %v", res, err)
	}
	ss, err = cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV2})
	if err != nil || ss.ID != 2 || ss.Version != 2 {
		t.Fatalf("v2 = %+v, %v", ss, err)
	}
	got, err := cl.SchemaByVersion(ctx, "users-value", -1)
	if err != nil || got.Version != 2 || got.Schema.Schema != userV2 {
		t.Fatalf("latest = %+v, %v", got, err)
	}
	s, err := cl.SchemaByID(ctx, 1)
	if err != nil || s.Schema != userV1 {
		t.Fatalf("id 1 = %+v, %v", s, err)
	}
	look, err := cl.LookupSchema(ctx, "users-value", sr.Schema{Schema: userV1})
	if err != nil || look.ID != 1 || look.Version != 1 {
		t.Fatalf("lookup = %+v, %v", look, err)
	}
	vs, err := cl.SubjectVersions(ctx, "users-value")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions = %v, %v", vs, err)
	}

	// Config: FORWARD refuses what BACKWARD allowed the other way round.
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if r := cl.Compatibility(ctx, "users-value"); r[0].Err != nil || r[0].Level != sr.CompatNone {
		t.Fatalf("subject level = %+v", r[0])
	}
	if r := cl.Compatibility(ctx); r[0].Err != nil || r[0].Level != sr.CompatBackward {
		t.Fatalf("global level = %+v", r[0])
	}

	// Protobuf and JSON Schema, with references.
	base := `syntax = "proto3"; package t; message Base { string id = 1; }`
	if _, err := cl.CreateSchema(ctx, "base.proto", sr.Schema{Schema: base, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	top := `syntax = "proto3"; package t; import "base.proto"; message Top { Base base = 1; int64 n = 2; }`
	ps, err := cl.CreateSchema(ctx, "top-value", sr.Schema{Schema: top, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "base.proto", Subject: "base.proto", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.References) != 1 || ps.Type != sr.TypeProtobuf {
		t.Fatalf("protobuf schema = %+v", ps)
	}
	// Changing a field's wire type breaks BACKWARD.
	_, err = cl.RegisterSchema(ctx, "top-value", sr.Schema{Schema: strings.Replace(top, "int64 n", "string n", 1), Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "base.proto", Subject: "base.proto", Version: 1}}}, -1, -1)
	wantCode(t, err, 409)
	// A referenced version cannot go.
	wantCode(t, cl.DeleteSchema(ctx, "base.proto", 1, sr.SoftDelete), 42206)

	js := `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`
	if _, err := cl.CreateSchema(ctx, "j-value", sr.Schema{Schema: js, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.RegisterSchema(ctx, "j-value", sr.Schema{Schema: `{"type":"object","properties":{"a":{"type":"integer"}}}`, Type: sr.TypeJSON}, -1, -1)
	wantCode(t, err, 409)

	// Bad input.
	_, err = cl.RegisterSchema(ctx, "x", sr.Schema{Schema: `{"type":"record"`}, -1, -1)
	wantCode(t, err, 42201)
	_, err = cl.RegisterSchema(ctx, "x", sr.Schema{Schema: `message {`, Type: sr.TypeProtobuf}, -1, -1)
	wantCode(t, err, 42201)
	_, err = cl.RegisterSchema(ctx, "x", sr.Schema{Schema: `"string"`, References: []sr.SchemaReference{{Name: "n", Subject: "nope", Version: 1}}}, -1, -1)
	wantCode(t, err, 42201)
	_, err = cl.SchemaByVersion(ctx, "nope", 1)
	wantCode(t, err, 40401)
	_, err = cl.SchemaByVersion(ctx, "users-value", 9)
	wantCode(t, err, 40402)
	_, err = cl.SchemaByID(ctx, 999)
	wantCode(t, err, 40403)

	// Deletes: soft, then permanent; ids are not reused.
	if vs, err := cl.DeleteSubject(ctx, "j-value", sr.SoftDelete); err != nil || len(vs) != 1 {
		t.Fatalf("soft delete = %v, %v", vs, err)
	}
	_, err = cl.DeleteSubject(ctx, "j-value", sr.SoftDelete)
	wantCode(t, err, 40404)
	if _, err := cl.DeleteSubject(ctx, "j-value", sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	subs, err := cl.Subjects(ctx)
	if err != nil || strings.Contains(strings.Join(subs, ","), "j-value") {
		t.Fatalf("subjects = %v, %v", subs, err)
	}
	ss, err = cl.CreateSchema(ctx, "j-value", sr.Schema{Schema: js, Type: sr.TypeJSON})
	if err != nil || ss.ID <= 5 {
		t.Fatalf("re-created = %+v, %v (want a fresh id)", ss, err)
	}

	// Mode: READONLY refuses writes.
	if r := cl.SetMode(ctx, sr.ModeReadOnly); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	_, err = cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: `"string"`}, -1, -1)
	wantCode(t, err, 42205)
	if r := cl.SetMode(ctx, sr.ModeReadWrite); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
}

func testSRClientAgain(t *testing.T, cl *sr.Client) {
	ctx := ctxT(t)
	s, err := cl.SchemaByID(ctx, 2)
	if err != nil || s.Schema != userV2 {
		t.Fatalf("id 2 through the client = %+v, %v", s, err)
	}
	ss, err := cl.CreateSchema(ctx, "other-value", sr.Schema{Schema: `"long"`})
	if err != nil || ss.Version != 1 {
		t.Fatalf("create through the client = %+v, %v", ss, err)
	}
}

// Raw HTTP: the media type, error shape and size bound.
func TestHTTPShapes(t *testing.T) {
	c := openVoter(t)
	url := serveRegistry(t, c, 256)
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(url+path, registry.ContentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != registry.ContentType {
			t.Errorf("%s: content type %q", path, ct)
		}
		var m map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	big, _ := json.Marshal(map[string]string{"schema": `{"type":"record","name":"R","fields":[],"doc":"` + strings.Repeat("x", 300) + `"}`})
	st, m := post("/subjects/s/versions", string(big))
	if st != 422 || m["error_code"] != float64(42201) || !strings.Contains(m["message"].(string), "max_schema_bytes") {
		t.Fatalf("oversize: %d %v", st, m)
	}
	st, m = post("/subjects/s/versions", `{"schema":"\"int\""}`)
	if st != 200 || m["id"] != float64(1) {
		t.Fatalf("register: %d %v", st, m)
	}
	resp, err := http.Get(url + "/subjects/s/versions/latest/schema")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `"int"` {
		t.Fatalf("raw schema = %q", b)
	}
	resp, err = http.Get(url + "/subjects/s/versions/0")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 422 || !bytes.Contains(b, []byte(`"error_code":42202`)) {
		t.Fatalf("version 0: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodPut, url+"/config", strings.NewReader(`{"compatibility":"SIDEWAYS"}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 422 || !bytes.Contains(b, []byte(`"error_code":42203`)) {
		t.Fatalf("bad level: %d %s", resp.StatusCode, b)
	}
}
