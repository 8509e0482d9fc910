package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/aerostream/aerostream/controller"
)

// ContentType is the registry's media type; plain application/json is
// accepted too, as Confluent's registry does.
const ContentType = "application/vnd.schemaregistry.v1+json"

// schemaTypes is GET /schemas/types.
var schemaTypes = []string{controller.SchemaJSON, controller.SchemaProtobuf, controller.SchemaAvro}

// maxBodySlack is what a request body may hold besides the schema (JSON
// escaping can double a schema's size, and references add to it).
const maxBodySlack = 64 << 10

// Handler serves Confluent's REST API at the root of its paths (mount it
// under a prefix with the HTTP gateway's Mount).
func (r *Registry) Handler() http.Handler {
	m := http.NewServeMux()
	h := func(pattern string, fn func(ctx context.Context, req *http.Request) (any, error)) {
		m.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			out, err := fn(req.Context(), req)
			if err != nil {
				r.writeError(w, req, err)
				return
			}
			if raw, ok := out.(rawBody); ok {
				w.Header().Set("Content-Type", ContentType)
				_, _ = io.WriteString(w, string(raw))
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	h("GET /{$}", func(context.Context, *http.Request) (any, error) { return struct{}{}, nil })
	h("GET /schemas/types", func(context.Context, *http.Request) (any, error) { return schemaTypes, nil })

	h("GET /subjects", r.listSubjects)
	h("POST /subjects/{subject}/versions", r.register)
	h("POST /subjects/{subject}", r.lookup)
	h("GET /subjects/{subject}/versions", r.listVersions)
	h("GET /subjects/{subject}/versions/{version}", r.getVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", r.getVersionSchema)
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.referencedBy)
	h("DELETE /subjects/{subject}", r.deleteSubject)
	h("DELETE /subjects/{subject}/versions/{version}", r.deleteVersion)

	h("GET /schemas/ids/{id}", r.getByID)
	h("GET /schemas/ids/{id}/schema", r.getRawByID)
	h("GET /schemas/ids/{id}/versions", r.idVersions)
	h("GET /schemas/ids/{id}/subjects", r.idSubjects)

	h("GET /config", r.getConfig)
	h("PUT /config", r.putConfig)
	h("DELETE /config", r.deleteConfig)
	h("GET /config/{subject}", r.getConfig)
	h("PUT /config/{subject}", r.putConfig)
	h("DELETE /config/{subject}", r.deleteConfig)

	h("GET /mode", r.getMode)
	h("PUT /mode", r.putMode)
	h("DELETE /mode", r.deleteMode)
	h("GET /mode/{subject}", r.getMode)
	h("PUT /mode/{subject}", r.putMode)
	h("DELETE /mode/{subject}", r.deleteMode)

	h("POST /compatibility/subjects/{subject}/versions/{version}", r.compatibility)
	h("POST /compatibility/subjects/{subject}/versions", r.compatibility)

	m.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, http.StatusNotFound, &Error{Code: 404, Message: "HTTP 404 Not Found"})
	})
	return m
}

// rawBody is an answer written as it is (a schema's own text).
type rawBody string

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (r *Registry) writeError(w http.ResponseWriter, req *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = storeError(err)
	}
	if e.Code >= 50000 {
		r.log.Warn("schema registry request failed", "method", req.Method, "path", req.URL.Path, "err", err)
	}
	writeJSON(w, e.Status(), e)
}

// Request parsing.

func boolParam(req *http.Request, name string) bool {
	v, _ := strconv.ParseBool(req.URL.Query().Get(name))
	return v
}

// versionParam parses a version: 1 to 2^31-1, or "latest" (or -1).
func versionParam(s string) (int32, error) {
	if s == "latest" || s == "-1" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 1 || v > math.MaxInt32 {
		return 0, errorf(controller.SchemaErrInvalidVersion,
			"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return int32(v), nil
}

func idParam(s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 1 {
		return 0, errorf(controller.SchemaErrSchemaNotFound, "Schema %s not found", s)
	}
	return int32(v), nil
}

// decodeBody reads a JSON body of at most limit bytes into v.
func decodeBody(req *http.Request, limit int, v any) error {
	b, err := io.ReadAll(io.LimitReader(req.Body, int64(limit)+1))
	if err != nil {
		return errorf(422, "Unprocessable Entity: reading the body: %v", err)
	}
	if len(b) > limit {
		return wrapf(controller.SchemaErrInvalidSchema, ErrSchemaTooLarge, "Invalid schema: request body above %d bytes (schema_registry.max_schema_bytes)", limit)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errorf(422, "Unprocessable Entity: %v", err)
	}
	return nil
}

func (r *Registry) schemaBody(req *http.Request) (SchemaInput, error) {
	var in SchemaInput
	err := decodeBody(req, 2*r.maxBytes+maxBodySlack, &in)
	return in, err
}

// schemaView is a schema as the API shows it: schemaType only when not
// Avro, references only when there are some.
type schemaView struct {
	Subject    string                       `json:"subject,omitempty"`
	ID         int32                        `json:"id,omitempty"`
	Version    int32                        `json:"version,omitempty"`
	SchemaType string                       `json:"schemaType,omitempty"`
	References []controller.SchemaReference `json:"references,omitempty"`
	Schema     string                       `json:"schema"`
}

func view(s *controller.StoredSchema) schemaView {
	v := schemaView{Schema: s.Schema, References: s.References}
	if s.Type != controller.SchemaAvro {
		v.SchemaType = s.Type
	}
	return v
}

// formatted applies ?format=: "serialized" gives a Protobuf schema as a
// base64 FileDescriptorProto, which Confluent's clients ask for.
func (r *Registry) formatted(ctx context.Context, req *http.Request, s *controller.StoredSchema) (string, error) {
	if req.URL.Query().Get("format") != "serialized" || s.Type != controller.SchemaProtobuf {
		return s.Schema, nil
	}
	p, err := r.parsed(ctx, s)
	if err != nil {
		return "", err
	}
	ps, ok := p.(*protoSchema)
	if !ok {
		return s.Schema, nil
	}
	return ps.serialized()
}

// Handlers.

func (r *Registry) listSubjects(ctx context.Context, req *http.Request) (any, error) {
	resp, err := r.read(ctx, controller.SchemaReadRequest{Op: controller.SchemaReadSubjects,
		Deleted: boolParam(req, "deleted"), Prefix: req.URL.Query().Get("subjectPrefix")})
	if err != nil {
		return nil, err
	}
	if resp.Subjects == nil {
		resp.Subjects = []string{}
	}
	return resp.Subjects, nil
}

func (r *Registry) register(ctx context.Context, req *http.Request) (any, error) {
	in, err := r.schemaBody(req)
	if err != nil {
		return nil, err
	}
	id, err := r.Register(ctx, req.PathValue("subject"), in, boolParam(req, "normalize"))
	if err != nil {
		return nil, err
	}
	return map[string]int32{"id": id}, nil
}

func (r *Registry) lookup(ctx context.Context, req *http.Request) (any, error) {
	in, err := r.schemaBody(req)
	if err != nil {
		return nil, err
	}
	ss, err := r.Lookup(ctx, req.PathValue("subject"), in, boolParam(req, "normalize"), boolParam(req, "deleted"))
	if err != nil {
		return nil, err
	}
	v := view(ss.Schema)
	v.Subject, v.ID, v.Version = ss.Subject, ss.Schema.ID, ss.Version
	return v, nil
}

func (r *Registry) listVersions(ctx context.Context, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	vs, err := r.versions(ctx, subject, boolParam(req, "deleted"))
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	out := make([]int32, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out, nil
}

func (r *Registry) subjectVersion(ctx context.Context, req *http.Request) (controller.SubjectVersion, error) {
	v, err := versionParam(req.PathValue("version"))
	if err != nil {
		return controller.SubjectVersion{}, err
	}
	return r.resolveVersion(ctx, req.PathValue("subject"), v, boolParam(req, "deleted"))
}

func (r *Registry) getVersion(ctx context.Context, req *http.Request) (any, error) {
	sv, err := r.subjectVersion(ctx, req)
	if err != nil {
		return nil, err
	}
	v := view(sv.Schema)
	v.Subject, v.ID, v.Version = req.PathValue("subject"), sv.ID, sv.Version
	if v.Schema, err = r.formatted(ctx, req, sv.Schema); err != nil {
		return nil, err
	}
	return v, nil
}

func (r *Registry) getVersionSchema(ctx context.Context, req *http.Request) (any, error) {
	sv, err := r.subjectVersion(ctx, req)
	if err != nil {
		return nil, err
	}
	text, err := r.formatted(ctx, req, sv.Schema)
	return rawBody(text), err
}

func (r *Registry) referencedBy(ctx context.Context, req *http.Request) (any, error) {
	sv, err := r.subjectVersion(ctx, req)
	if err != nil {
		return nil, err
	}
	subject := req.PathValue("subject")
	subs, err := r.read(ctx, controller.SchemaReadRequest{Op: controller.SchemaReadSubjects})
	if err != nil {
		return nil, err
	}
	ids := []int32{}
	for _, s := range subs.Subjects {
		vs, err := r.versions(ctx, s, false)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			for _, ref := range v.Schema.References {
				if ref.Subject == subject && ref.Version == sv.Version {
					ids = append(ids, v.ID)
				}
			}
		}
	}
	return sortedIDs(ids), nil
}

func (r *Registry) deleteSubject(ctx context.Context, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	if e := checkSubject(subject); e != nil {
		return nil, e
	}
	resp, err := r.write(ctx, controller.SchemaWriteRequest{Op: controller.SchemaDeleteSubject, Subject: subject, Permanent: boolParam(req, "permanent")})
	if err != nil {
		return nil, err
	}
	if resp.Versions == nil {
		resp.Versions = []int32{}
	}
	return resp.Versions, nil
}

func (r *Registry) deleteVersion(ctx context.Context, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	if e := checkSubject(subject); e != nil {
		return nil, e
	}
	v, err := versionParam(req.PathValue("version"))
	if err != nil {
		return nil, err
	}
	permanent := boolParam(req, "permanent")
	if v == -1 {
		// latest: the newest live version, or for a permanent delete the
		// newest of all (which must already be soft-deleted).
		sv, err := r.resolveVersion(ctx, subject, -1, permanent)
		if err != nil {
			return nil, err
		}
		v = sv.Version
	}
	resp, err := r.write(ctx, controller.SchemaWriteRequest{Op: controller.SchemaDeleteVersion, Subject: subject, Version: v, Permanent: permanent})
	if err != nil {
		return nil, err
	}
	return resp.Version, nil
}

func (r *Registry) getByID(ctx context.Context, req *http.Request) (any, error) {
	id, err := idParam(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	// ?subject= names a context in Confluent's registry; there is one
	// context here, so it changes nothing.
	s, _, err := r.SchemaByID(ctx, id, true, false)
	if err != nil {
		return nil, err
	}
	v := view(s)
	if v.Schema, err = r.formatted(ctx, req, s); err != nil {
		return nil, err
	}
	return v, nil
}

func (r *Registry) getRawByID(ctx context.Context, req *http.Request) (any, error) {
	id, err := idParam(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	s, _, err := r.SchemaByID(ctx, id, true, false)
	if err != nil {
		return nil, err
	}
	text, err := r.formatted(ctx, req, s)
	return rawBody(text), err
}

type subjectVersionView struct {
	Subject string `json:"subject"`
	Version int32  `json:"version"`
}

func (r *Registry) idVersions(ctx context.Context, req *http.Request) (any, error) {
	id, err := idParam(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	_, uses, err := r.SchemaByID(ctx, id, boolParam(req, "deleted"), true)
	if err != nil {
		return nil, err
	}
	out := []subjectVersionView{}
	for _, u := range uses {
		out = append(out, subjectVersionView{Subject: u.Subject, Version: u.Version})
	}
	return out, nil
}

func (r *Registry) idSubjects(ctx context.Context, req *http.Request) (any, error) {
	id, err := idParam(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	_, uses, err := r.SchemaByID(ctx, id, boolParam(req, "deleted"), true)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, u := range uses {
		if len(out) == 0 || out[len(out)-1] != u.Subject {
			out = append(out, u.Subject)
		}
	}
	return out, nil
}

// subjectParam is the subject of /config/{subject} and /mode/{subject},
// "" for the global ones.
func subjectParam(req *http.Request) (string, error) {
	s := req.PathValue("subject")
	if s == "" {
		return "", nil
	}
	if e := checkSubject(s); e != nil {
		return "", e
	}
	return s, nil
}

func (r *Registry) getConfig(ctx context.Context, req *http.Request) (any, error) {
	l, err := r.subjectSetting(ctx, req, func(res controller.SchemaReadResponse) map[string]string { return res.Config },
		controller.DefaultCompatibility, controller.SchemaErrSubjectConfigNotFound, "compatibility")
	if err != nil {
		return nil, err
	}
	return map[string]string{"compatibilityLevel": l}, nil
}

// subjectSetting reads the subject's entry of a per-subject setting (the
// compatibility levels or the modes), falling back to the global entry and
// then to def; without defaultToGlobal a subject with no entry of its own is
// an error, as in Confluent's API.
func (r *Registry) subjectSetting(ctx context.Context, req *http.Request, pick func(controller.SchemaReadResponse) map[string]string, def string, notFound int, what string) (string, error) {
	subject, err := subjectParam(req)
	if err != nil {
		return "", err
	}
	res, err := r.read(ctx, controller.SchemaReadRequest{Op: controller.SchemaReadConfig})
	if err != nil {
		return "", err
	}
	settings := pick(res)
	v, ok := settings[subject]
	if !ok && subject != "" && !boolParam(req, "defaultToGlobal") {
		return "", errorf(notFound, "Subject '%s' does not have subject-level %s configured", subject, what)
	}
	if !ok {
		if v, ok = settings[""]; !ok {
			v = def
		}
	}
	return v, nil
}

func (r *Registry) putConfig(ctx context.Context, req *http.Request) (any, error) {
	subject, err := subjectParam(req)
	if err != nil {
		return nil, err
	}
	var body struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decodeBody(req, maxBodySlack, &body); err != nil {
		return nil, err
	}
	level := strings.ToUpper(body.Compatibility)
	if level == "" {
		return nil, errorf(controller.SchemaErrInvalidCompatibility, "Invalid compatibility level: none given")
	}
	if _, err := r.write(ctx, controller.SchemaWriteRequest{Op: controller.SchemaSetConfig, Subject: subject, Level: level}); err != nil {
		return nil, err
	}
	return map[string]string{"compatibility": level}, nil
}

func (r *Registry) deleteConfig(ctx context.Context, req *http.Request) (any, error) {
	return r.deleteSetting(ctx, req, r.getConfig, controller.SchemaSetConfig)
}

// deleteSetting clears the subject's entry written by op and answers with
// the setting that applied before, as get reads it with defaultToGlobal.
func (r *Registry) deleteSetting(ctx context.Context, req *http.Request, get func(context.Context, *http.Request) (any, error), op string) (any, error) {
	subject, err := subjectParam(req)
	if err != nil {
		return nil, err
	}
	old, err := get(ctx, withQuery(req, "defaultToGlobal", "true"))
	if err != nil {
		return nil, err
	}
	if _, err := r.write(ctx, controller.SchemaWriteRequest{Op: op, Subject: subject}); err != nil {
		return nil, err
	}
	return old, nil
}

func (r *Registry) getMode(ctx context.Context, req *http.Request) (any, error) {
	m, err := r.subjectSetting(ctx, req, func(res controller.SchemaReadResponse) map[string]string { return res.Modes },
		controller.ModeReadWrite, controller.SchemaErrSubjectModeNotFound, "mode")
	if err != nil {
		return nil, err
	}
	return map[string]string{"mode": m}, nil
}

func (r *Registry) putMode(ctx context.Context, req *http.Request) (any, error) {
	subject, err := subjectParam(req)
	if err != nil {
		return nil, err
	}
	var body struct {
		Mode string `json:"mode"`
	}
	if err := decodeBody(req, maxBodySlack, &body); err != nil {
		return nil, err
	}
	mode := strings.ToUpper(body.Mode)
	if mode == "" {
		return nil, errorf(controller.SchemaErrInvalidMode, "Invalid mode: none given")
	}
	if _, err := r.write(ctx, controller.SchemaWriteRequest{Op: controller.SchemaSetMode, Subject: subject, Mode: mode, Force: boolParam(req, "force")}); err != nil {
		return nil, err
	}
	return map[string]string{"mode": mode}, nil
}

func (r *Registry) deleteMode(ctx context.Context, req *http.Request) (any, error) {
	return r.deleteSetting(ctx, req, r.getMode, controller.SchemaSetMode)
}

func (r *Registry) compatibility(ctx context.Context, req *http.Request) (any, error) {
	in, err := r.schemaBody(req)
	if err != nil {
		return nil, err
	}
	version, all := int32(-1), req.PathValue("version") == ""
	if !all {
		if version, err = versionParam(req.PathValue("version")); err != nil {
			return nil, err
		}
	}
	msgs, err := r.Compatibility(ctx, req.PathValue("subject"), version, all, in)
	if err != nil {
		return nil, err
	}
	out := struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages,omitempty"`
	}{IsCompatible: len(msgs) == 0}
	if boolParam(req, "verbose") {
		out.Messages = msgs
		if out.Messages == nil {
			out.Messages = []string{}
		}
	}
	return out, nil
}

func withQuery(req *http.Request, k, v string) *http.Request {
	r2 := req.Clone(req.Context())
	q := r2.URL.Query()
	q.Set(k, v)
	r2.URL.RawQuery = q.Encode()
	return r2
}

func sortedIDs(ids []int32) []int32 {
	slices.Sort(ids)
	return slices.Compact(ids)
}
