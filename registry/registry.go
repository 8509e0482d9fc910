package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/aerostream/aerostream/controller"
)

// DefaultMaxSchemaBytes bounds a schema's text unless Options say
// otherwise (schema_registry.max_schema_bytes).
const DefaultMaxSchemaBytes = 1 << 20

// maxReferenceDepth bounds how deep references may import each other.
const maxReferenceDepth = 64

// registerAttempts bounds how often a register checks compatibility
// again because another version was registered meanwhile.
const registerAttempts = 64

// parsedCacheSize bounds the parsed schemas kept by id.
const parsedCacheSize = 1024

// Options configure a Registry.
type Options struct {
	// Store is the controller holding the registry's state: the
	// in-process *controller.Controller in serve, a *controller.Client
	// elsewhere.
	Store controller.SchemaStore
	// MaxSchemaBytes bounds one schema's text; 0 is
	// DefaultMaxSchemaBytes. It cannot exceed controller.MaxSchemaBytes.
	MaxSchemaBytes int
	Logger         *slog.Logger
}

// Registry serves the schema registry over a SchemaStore.
type Registry struct {
	store    controller.SchemaStore
	maxBytes int
	log      *slog.Logger

	// parsed caches parsed schemas by id: ids never change meaning, so an
	// entry never goes stale.
	mu struct {
		sync.Mutex
		parsed map[int32]parsedSchema
	}
}

// New returns a registry over opts.Store.
func New(opts Options) (*Registry, error) {
	if opts.Store == nil {
		return nil, ErrNoStore
	}
	if opts.MaxSchemaBytes <= 0 {
		opts.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	if opts.MaxSchemaBytes > controller.MaxSchemaBytes {
		return nil, fmt.Errorf("registry: max schema bytes %d above the controller's bound %d", opts.MaxSchemaBytes, controller.MaxSchemaBytes)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Registry{store: opts.Store, maxBytes: opts.MaxSchemaBytes, log: opts.Logger}
	r.mu.parsed = map[int32]parsedSchema{}
	return r, nil
}

// SchemaInput is a schema as a client sends it.
type SchemaInput struct {
	Schema     string                       `json:"schema"`
	SchemaType string                       `json:"schemaType,omitempty"`
	References []controller.SchemaReference `json:"references,omitempty"`
	// ID and Version are honoured in IMPORT mode only.
	ID      int32 `json:"id,omitempty"`
	Version int32 `json:"version,omitempty"`
}

func (in *SchemaInput) typ() string {
	if in.SchemaType == "" {
		return controller.SchemaAvro
	}
	return strings.ToUpper(in.SchemaType)
}

// SubjectSchema is a subject's version with its schema.
type SubjectSchema struct {
	Subject string
	Version int32
	Schema  *controller.StoredSchema
	Deleted bool
}

func checkSubject(s string) *Error {
	if err := controller.ValidSubject(s); err != nil {
		return wrapf(controller.SchemaErrInvalidSchema, err, "Invalid subject: %v", err)
	}
	return nil
}

// read is SchemaRead with failures as answers.
func (r *Registry) read(ctx context.Context, req controller.SchemaReadRequest) (controller.SchemaReadResponse, error) {
	resp, err := r.store.SchemaRead(ctx, req)
	if err != nil {
		return resp, storeError(err)
	}
	return resp, nil
}

// write is SchemaWrite with failures and refusals as answers.
func (r *Registry) write(ctx context.Context, req controller.SchemaWriteRequest) (controller.SchemaWriteResponse, error) {
	resp, err := r.store.SchemaWrite(ctx, req)
	if err != nil {
		return resp, storeError(err)
	}
	if resp.ErrorCode != 0 {
		return resp, &Error{Code: resp.ErrorCode, Message: resp.Message}
	}
	return resp, nil
}

// versions returns a subject's versions, oldest first.
func (r *Registry) versions(ctx context.Context, subject string, deleted bool) ([]controller.SubjectVersion, error) {
	resp, err := r.read(ctx, controller.SchemaReadRequest{Op: controller.SchemaReadSubject, Subject: subject, Deleted: deleted})
	return resp.Versions, err
}

// resolveVersion finds version v ("latest" is -1) among a subject's
// versions, soft-deleted ones only if deleted.
func (r *Registry) resolveVersion(ctx context.Context, subject string, v int32, deleted bool) (controller.SubjectVersion, error) {
	vs, err := r.versions(ctx, subject, true)
	if err != nil {
		return controller.SubjectVersion{}, err
	}
	if len(vs) == 0 {
		return controller.SubjectVersion{}, subjectNotFound(subject)
	}
	if !deleted {
		vs = slices.DeleteFunc(vs, func(x controller.SubjectVersion) bool { return x.Deleted })
		if len(vs) == 0 {
			return controller.SubjectVersion{}, subjectNotFound(subject)
		}
	}
	if v == -1 {
		return vs[len(vs)-1], nil
	}
	for _, x := range vs {
		if x.Version == v {
			return x, nil
		}
	}
	return controller.SubjectVersion{}, versionNotFound(v)
}

// resolveRefs returns the schemas refs import, transitively, dependencies
// first, or an error for one that is missing or leads back to itself.
func (r *Registry) resolveRefs(ctx context.Context, refs []controller.SchemaReference) ([]refSchema, []controller.SchemaReference, error) {
	var out []refSchema
	var top []controller.SchemaReference
	done := map[controller.SchemaReference]bool{}
	onPath := map[[2]string]bool{}
	var visit func(refs []controller.SchemaReference, depth int) error
	visit = func(refs []controller.SchemaReference, depth int) error {
		if depth > maxReferenceDepth {
			return wrapf(controller.SchemaErrInvalidSchema, ErrCircularReference, "Invalid schema: references nest deeper than %d", maxReferenceDepth)
		}
		for _, ref := range refs {
			if ref.Name == "" || ref.Subject == "" {
				return errorf(controller.SchemaErrInvalidSchema, "Invalid schema: a reference needs a name and a subject")
			}
			v, err := r.resolveVersion(ctx, ref.Subject, refVersion(ref.Version), false)
			if err != nil {
				var e *Error
				if errors.As(err, &e) && e.Code/100 == 404 {
					return errorf(controller.SchemaErrInvalidSchema, "Invalid schema: reference %q: subject %q version %d not found", ref.Name, ref.Subject, ref.Version)
				}
				return err
			}
			key := [2]string{ref.Subject, fmt.Sprint(v.Version)}
			if onPath[key] {
				return wrapf(controller.SchemaErrInvalidSchema, ErrCircularReference, "Invalid schema: circular reference through subject %q version %d", ref.Subject, v.Version)
			}
			resolved := controller.SchemaReference{Name: ref.Name, Subject: ref.Subject, Version: v.Version}
			if depth == 0 {
				top = append(top, resolved)
			}
			if done[resolved] {
				continue
			}
			onPath[key] = true
			if err := visit(v.Schema.References, depth+1); err != nil {
				return err
			}
			delete(onPath, key)
			done[resolved] = true
			out = append(out, refSchema{name: ref.Name, schema: v.Schema})
		}
		return nil
	}
	if err := visit(refs, 0); err != nil {
		return nil, nil, err
	}
	return out, top, nil
}

// refVersion maps a reference's version: -1 (or 0) means the latest.
func refVersion(v int32) int32 {
	if v <= 0 {
		return -1
	}
	return v
}

// parseInput checks and parses what a client sent, with its references.
func (r *Registry) parseInput(ctx context.Context, in *SchemaInput) (parsedSchema, []controller.SchemaReference, error) {
	if len(in.Schema) > r.maxBytes {
		return nil, nil, wrapf(controller.SchemaErrInvalidSchema, ErrSchemaTooLarge,
			"Invalid schema: %d bytes, above the registry's limit of %d (schema_registry.max_schema_bytes)", len(in.Schema), r.maxBytes)
	}
	if strings.TrimSpace(in.Schema) == "" {
		return nil, nil, errorf(controller.SchemaErrInvalidSchema, "Invalid schema: empty schema")
	}
	if len(in.References) > controller.MaxSchemaReferences {
		return nil, nil, errorf(controller.SchemaErrInvalidSchema, "Invalid schema: %d references, at most %d", len(in.References), controller.MaxSchemaReferences)
	}
	// References are stored at the versions they resolved to, so that
	// "latest" keeps meaning the version it meant at registration.
	refs, resolved, err := r.resolveRefs(ctx, in.References)
	if err != nil {
		return nil, nil, err
	}
	p, err := parseSchema(in.typ(), in.Schema, refs)
	if err != nil {
		return nil, nil, wrapf(controller.SchemaErrInvalidSchema, err, "%s", strings.TrimPrefix(err.Error(), ErrInvalidSchema.Error()+": "))
	}
	return p, resolved, nil
}

// parsed parses a stored schema, from the cache when it can.
func (r *Registry) parsed(ctx context.Context, s *controller.StoredSchema) (parsedSchema, error) {
	r.mu.Lock()
	p, ok := r.mu.parsed[s.ID]
	r.mu.Unlock()
	if ok {
		return p, nil
	}
	refs, _, err := r.resolveRefs(ctx, s.References)
	if err != nil {
		return nil, err
	}
	p, err = parseSchema(s.Type, s.Schema, refs)
	if err != nil {
		return nil, wrapf(codeStore, err, "stored schema %d no longer parses: %v", s.ID, err)
	}
	r.mu.Lock()
	if len(r.mu.parsed) >= parsedCacheSize {
		clear(r.mu.parsed)
	}
	r.mu.parsed[s.ID] = p
	r.mu.Unlock()
	return p, nil
}

// Level returns the compatibility level in force for subject ("" for the
// global one).
func (r *Registry) level(ctx context.Context, subject string) (string, error) {
	cfg, err := r.read(ctx, controller.SchemaReadRequest{Op: controller.SchemaReadConfig})
	if err != nil {
		return "", err
	}
	if l, ok := cfg.Config[subject]; ok {
		return l, nil
	}
	if l, ok := cfg.Config[""]; ok {
		return l, nil
	}
	return controller.DefaultCompatibility, nil
}

// compatErrors checks p against the given versions under level, newest
// first, and lists what breaks.
func (r *Registry) compatErrors(ctx context.Context, p parsedSchema, typ, level string, against []controller.SubjectVersion) ([]string, error) {
	if level == "NONE" || len(against) == 0 {
		return nil, nil
	}
	if !strings.HasSuffix(level, "_TRANSITIVE") {
		against = against[len(against)-1:]
	}
	base := strings.TrimSuffix(level, "_TRANSITIVE")
	var msgs []string
	for i := len(against) - 1; i >= 0; i-- {
		v := against[i]
		if v.Schema.Type != typ {
			msgs = append(msgs, fmt.Sprintf("version %d: schema type %s is not %s", v.Version, v.Schema.Type, typ))
			continue
		}
		old, err := r.parsed(ctx, v.Schema)
		if err != nil {
			return nil, err
		}
		var errs []string
		if base == "BACKWARD" || base == "FULL" {
			errs = append(errs, p.readErrors(old)...)
		}
		if base == "FORWARD" || base == "FULL" {
			errs = append(errs, old.readErrors(p)...)
		}
		for _, e := range errs {
			msgs = append(msgs, fmt.Sprintf("%s compatibility with version %d: %s", base, v.Version, e))
		}
	}
	return msgs, nil
}

// Register registers a schema under subject and returns its id. A schema
// the subject already has gets its id back without a check.
func (r *Registry) Register(ctx context.Context, subject string, in SchemaInput, normalize bool) (int32, error) {
	if e := checkSubject(subject); e != nil {
		return 0, e
	}
	p, refs, err := r.parseInput(ctx, &in)
	if err != nil {
		return 0, err
	}
	text := in.Schema
	if normalize {
		text = p.normalized()
	}
	stored := &controller.StoredSchema{ID: in.ID, Type: in.typ(), Schema: text, References: refs, Fingerprint: p.fingerprint()}
	for range registerAttempts {
		vs, err := r.versions(ctx, subject, false)
		if err != nil {
			return 0, err
		}
		if in.ID == 0 {
			if v, ok := findSchema(vs, stored); ok {
				return v.ID, nil
			}
		}
		level, err := r.level(ctx, subject)
		if err != nil {
			return 0, err
		}
		msgs, err := r.compatErrors(ctx, p, stored.Type, level, vs)
		if err != nil {
			return 0, err
		}
		if len(msgs) > 0 {
			return 0, &Error{Code: controller.SchemaErrIncompatible, Message: fmt.Sprintf(
				"Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]", subject, strings.Join(msgs, "; "))}
		}
		expect := int32(0)
		if len(vs) > 0 {
			expect = vs[len(vs)-1].Version
		}
		resp, err := r.write(ctx, controller.SchemaWriteRequest{Op: controller.SchemaRegister, Subject: subject,
			Schema: stored, ExpectLatest: expect, Version: in.Version})
		var e *Error
		if errors.As(err, &e) && e.Code == controller.SchemaErrLatestMoved {
			continue
		}
		if err != nil {
			return 0, err
		}
		r.log.Debug("schema registered", "subject", subject, "id", resp.ID, "version", resp.Version)
		return resp.ID, nil
	}
	return 0, errorf(codeStore, "subject %s kept changing while registering; try again", subject)
}

// findSchema finds a version holding the same schema.
func findSchema(vs []controller.SubjectVersion, s *controller.StoredSchema) (controller.SubjectVersion, bool) {
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		if v.Schema != nil && v.Schema.Type == s.Type && v.Schema.Fingerprint == s.Fingerprint &&
			slices.Equal(v.Schema.References, s.References) {
			return v, true
		}
	}
	return controller.SubjectVersion{}, false
}

// Lookup finds the version of subject that holds the schema.
func (r *Registry) Lookup(ctx context.Context, subject string, in SchemaInput, normalize, deleted bool) (SubjectSchema, error) {
	if e := checkSubject(subject); e != nil {
		return SubjectSchema{}, e
	}
	vs, err := r.versions(ctx, subject, deleted)
	if err != nil {
		return SubjectSchema{}, err
	}
	if len(vs) == 0 {
		return SubjectSchema{}, subjectNotFound(subject)
	}
	p, refs, err := r.parseInput(ctx, &in)
	if err != nil {
		return SubjectSchema{}, err
	}
	v, ok := findSchema(vs, &controller.StoredSchema{Type: in.typ(), Fingerprint: p.fingerprint(), References: refs})
	if !ok {
		return SubjectSchema{}, errorf(controller.SchemaErrSchemaNotFound, "Schema not found")
	}
	_ = normalize // the fingerprint already ignores what normalizing would change
	return SubjectSchema{Subject: subject, Version: v.Version, Schema: v.Schema, Deleted: v.Deleted}, nil
}

// Compatibility checks a schema against a subject's version (-1 latest)
// or, with all, against the versions its level names.
func (r *Registry) Compatibility(ctx context.Context, subject string, version int32, all bool, in SchemaInput) ([]string, error) {
	if e := checkSubject(subject); e != nil {
		return nil, e
	}
	p, _, err := r.parseInput(ctx, &in)
	if err != nil {
		return nil, err
	}
	level, err := r.level(ctx, subject)
	if err != nil {
		return nil, err
	}
	vs, err := r.versions(ctx, subject, false)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		if version == -1 || all {
			return nil, nil
		}
		return nil, subjectNotFound(subject)
	}
	against := vs
	if !all {
		v, err := r.resolveVersion(ctx, subject, version, false)
		if err != nil {
			return nil, err
		}
		against = []controller.SubjectVersion{v}
		level = strings.TrimSuffix(level, "_TRANSITIVE")
	}
	return r.compatErrors(ctx, p, in.typ(), level, against)
}

// SchemaByID returns a schema by its id and, with uses, the versions
// that name it.
func (r *Registry) SchemaByID(ctx context.Context, id int32, deleted, uses bool) (*controller.StoredSchema, []controller.SubjectVersionRef, error) {
	resp, err := r.read(ctx, controller.SchemaReadRequest{Op: controller.SchemaReadID, ID: id, Deleted: deleted, Uses: uses})
	if err != nil {
		return nil, nil, err
	}
	if resp.Schema == nil {
		return nil, nil, schemaNotFound(id)
	}
	return resp.Schema, resp.Uses, nil
}

// SubjectHasID says whether id is a live version of subject: what
// broker-side validation asks of each record's schema id.
func (r *Registry) SubjectHasID(ctx context.Context, subject string, id int32) (bool, error) {
	vs, err := r.versions(ctx, subject, false)
	if err != nil {
		return false, err
	}
	for _, v := range vs {
		if v.ID == id {
			return true, nil
		}
	}
	return false, nil
}
