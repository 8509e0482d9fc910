package controller

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The schema registry's state: subjects, their versions, the schemas they
// name by global id, and the compatibility levels and modes. The registry
// package serves Confluent's REST API over it; this file only keeps the
// state, so that every controller replica holds the same subjects and ids.
//
// One command (opSchema) carries every registry write, its kind in Op, so
// the registry's changes touch the shared command table once. Apply decides
// the outcome of a write the same way on every replica and reports it as
// one of Confluent's error codes (SchemaWriteResponse.ErrorCode), not as a
// controller error: an unknown subject is an answer of the registry, not a
// failure of the controller. Ids come from a counter in the state that only
// grows, so an id names one schema for the life of the cluster, even after
// the schema is permanently deleted.
//
// Schema writes do not bump the metadata version: no store or gateway acts
// on them through heartbeats, so they wake no long poll.

// Schema registry limits the state machine enforces whatever the registry
// asks, so that no command can bloat the replicated state.
const (
	// MaxSchemaBytes bounds one schema's text in the state. The registry's
	// own, configurable bound (schema_registry.max_schema_bytes) is lower.
	MaxSchemaBytes = 8 << 20
	// MaxSubjectLen bounds a subject name, in bytes.
	MaxSubjectLen = 1024
	// MaxSchemaReferences bounds the references of one schema.
	MaxSchemaReferences = 1000
)

// Schema types as the registry names them.
const (
	SchemaAvro     = "AVRO"
	SchemaProtobuf = "PROTOBUF"
	SchemaJSON     = "JSON"
)

// Registry modes and the default compatibility level.
const (
	ModeReadWrite = "READWRITE"
	ModeReadOnly  = "READONLY"
	ModeImport    = "IMPORT"

	DefaultCompatibility = "BACKWARD"
)

// CompatibilityLevels are the levels a config may hold.
var CompatibilityLevels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
	"FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}

// Confluent's error codes, as SchemaWriteResponse.ErrorCode carries them.
const (
	SchemaErrSubjectNotFound       = 40401
	SchemaErrVersionNotFound       = 40402
	SchemaErrSchemaNotFound        = 40403
	SchemaErrSubjectSoftDeleted    = 40404
	SchemaErrSubjectNotSoftDeleted = 40405
	SchemaErrVersionSoftDeleted    = 40406
	SchemaErrVersionNotSoftDeleted = 40407
	SchemaErrSubjectConfigNotFound = 40408
	SchemaErrSubjectModeNotFound   = 40409
	SchemaErrIncompatible          = 409
	SchemaErrInvalidSchema         = 42201
	SchemaErrInvalidVersion        = 42202
	SchemaErrInvalidCompatibility  = 42203
	SchemaErrInvalidMode           = 42204
	SchemaErrOperationNotPermitted = 42205
	SchemaErrReferenceExists       = 42206
	SchemaErrStore                 = 50001
	// SchemaErrLatestMoved is ours, never sent to a client: a register
	// whose ExpectLatest no longer holds; the registry checks again.
	SchemaErrLatestMoved = 40900
)

const (
	schemaMaxErrMessage            = 1024
	schemaWriteRegister            = "register"
	schemaWriteDeleteVersion       = "delete_version"
	schemaWriteDeleteSubject       = "delete_subject"
	schemaWriteSetConfig           = "set_config"
	schemaWriteSetMode             = "set_mode"
	schemaReadSubjects             = "subjects"
	schemaReadSubject              = "subject"
	schemaReadID                   = "id"
	schemaReadConfig               = "config"
	pathSchemaWrite                = "/v1/schemas/write"
	pathSchemaRead                 = "/v1/schemas/read"
	schemaStateFormat              = 1
	schemaFirstID            int32 = 1
)

// Schema write kinds (SchemaWriteRequest.Op).
const (
	SchemaRegister      = schemaWriteRegister
	SchemaDeleteVersion = schemaWriteDeleteVersion
	SchemaDeleteSubject = schemaWriteDeleteSubject
	SchemaSetConfig     = schemaWriteSetConfig
	SchemaSetMode       = schemaWriteSetMode
)

// Schema read kinds (SchemaReadRequest.Op).
const (
	SchemaReadSubjects = schemaReadSubjects
	SchemaReadSubject  = schemaReadSubject
	SchemaReadID       = schemaReadID
	SchemaReadConfig   = schemaReadConfig
)

// SchemaReference names another subject's version that a schema imports
// under Name.
type SchemaReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int32  `json:"version"`
}

// StoredSchema is one schema under its global id. Values are never
// modified once stored.
type StoredSchema struct {
	ID         int32             `json:"id"`
	Type       string            `json:"type"`
	Schema     string            `json:"schema"`
	References []SchemaReference `json:"references,omitempty"`
	// Fingerprint is the registry's identity of the schema (its text with
	// insignificant differences removed): the same type, fingerprint and
	// references get the same id.
	Fingerprint string `json:"fingerprint"`
}

// SubjectVersion is one version of a subject.
type SubjectVersion struct {
	Version int32 `json:"version"`
	ID      int32 `json:"id"`
	Deleted bool  `json:"deleted,omitempty"`
	// Schema is filled in read answers only.
	Schema *StoredSchema `json:"schema,omitempty"`
}

// SubjectVersionRef names a subject's version, for the uses of an id.
type SubjectVersionRef struct {
	Subject string `json:"subject"`
	Version int32  `json:"version"`
	Deleted bool   `json:"deleted,omitempty"`
}

// SchemaWriteRequest is one registry write; Op says which.
type SchemaWriteRequest struct {
	Op      string `json:"op"`
	Subject string `json:"subject,omitempty"`
	// Register: the schema (ID set only in IMPORT mode), and ExpectLatest,
	// the latest live version the caller checked compatibility against (0
	// for none, -1 for no check): the write is refused with
	// SchemaErrLatestMoved when another registered first. Version is set
	// only in IMPORT mode.
	Schema       *StoredSchema `json:"schema,omitempty"`
	ExpectLatest int32         `json:"expect_latest,omitempty"`
	// DeleteVersion: the version; DeleteSubject and DeleteVersion:
	// Permanent.
	Version   int32 `json:"version,omitempty"`
	Permanent bool  `json:"permanent,omitempty"`
	// SetConfig: Level ("" removes the subject's own level). SetMode: Mode
	// ("" removes the subject's own mode), Force to enter IMPORT with
	// schemas present.
	Level string `json:"level,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Force bool   `json:"force,omitempty"`
}

// SchemaWriteResponse is a write's outcome; ErrorCode is 0 on success.
type SchemaWriteResponse struct {
	ID        int32   `json:"id,omitempty"`
	Version   int32   `json:"version,omitempty"`
	Versions  []int32 `json:"versions,omitempty"`
	ErrorCode int     `json:"error_code,omitempty"`
	Message   string  `json:"message,omitempty"`
}

// SchemaReadRequest is one registry read.
type SchemaReadRequest struct {
	Op      string `json:"op"`
	Subject string `json:"subject,omitempty"`
	ID      int32  `json:"id,omitempty"`
	// Deleted includes soft-deleted subjects and versions.
	Deleted bool `json:"deleted,omitempty"`
	// Prefix filters SchemaReadSubjects.
	Prefix string `json:"prefix,omitempty"`
	// Uses asks SchemaReadID for the versions naming the id, a walk over
	// every subject that a plain lookup by id does not need.
	Uses bool `json:"uses,omitempty"`
}

// SchemaReadResponse answers a read: Subjects for SchemaReadSubjects;
// Versions (with their schemas) for SchemaReadSubject, empty for an
// unknown subject; Schema and Uses for SchemaReadID, Schema nil for an
// unknown id; the levels and modes (by subject, "" for the global ones)
// for SchemaReadConfig.
type SchemaReadResponse struct {
	Subjects []string            `json:"subjects,omitempty"`
	Versions []SubjectVersion    `json:"versions,omitempty"`
	Schema   *StoredSchema       `json:"schema,omitempty"`
	Uses     []SubjectVersionRef `json:"uses,omitempty"`
	Config   map[string]string   `json:"config,omitempty"`
	Modes    map[string]string   `json:"modes,omitempty"`
}

// SchemaStore is the registry's view of the controller, implemented by
// *Controller (in process) and *Client (over the network).
type SchemaStore interface {
	SchemaWrite(ctx context.Context, req SchemaWriteRequest) (SchemaWriteResponse, error)
	SchemaRead(ctx context.Context, req SchemaReadRequest) (SchemaReadResponse, error)
}

var (
	_ SchemaStore = (*Controller)(nil)
	_ SchemaStore = (*Client)(nil)
)

// cmdSchema is a registry write in the log.
type cmdSchema struct {
	SchemaWriteRequest
}

// subjectInfo is one subject's versions, ascending. Replaced, never
// modified, on change.
type subjectInfo struct {
	Versions []SubjectVersion `json:"versions"`
	// Next is the next version number: versions are not reused while the
	// subject exists, even after a permanent delete of the latest.
	Next int32 `json:"next"`
}

func (s *subjectInfo) live() []SubjectVersion {
	var out []SubjectVersion
	for _, v := range s.Versions {
		if !v.Deleted {
			out = append(out, v)
		}
	}
	return out
}

func (s *subjectInfo) find(version int32) int {
	for i, v := range s.Versions {
		if v.Version == version {
			return i
		}
	}
	return -1
}

// schemaState is the registry part of the FSM state. The zero value is
// empty; maps are made on first write.
type schemaState struct {
	nextID   int32
	schemas  map[int32]*StoredSchema
	subjects map[string]*subjectInfo
	config   map[string]string // "" is the global level
	modes    map[string]string // "" is the global mode
	// byKey finds the id of a schema already stored (derived).
	byKey map[string]int32
}

func schemaKey(s *StoredSchema) string {
	var b strings.Builder
	b.WriteString(s.Type)
	b.WriteByte(0)
	b.WriteString(s.Fingerprint)
	for _, r := range s.References {
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%d", r.Name, r.Subject, r.Version)
	}
	return b.String()
}

func (s *schemaState) init() {
	if s.schemas == nil {
		s.schemas = map[int32]*StoredSchema{}
		s.subjects = map[string]*subjectInfo{}
		s.config = map[string]string{}
		s.modes = map[string]string{}
		s.byKey = map[string]int32{}
	}
	if s.nextID < schemaFirstID {
		s.nextID = schemaFirstID
	}
}

func (s *schemaState) mode(subject string) string {
	if m, ok := s.modes[subject]; ok {
		return m
	}
	if m, ok := s.modes[""]; ok {
		return m
	}
	return ModeReadWrite
}

func schemaFail(code int, format string, args ...any) *SchemaWriteResponse {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > schemaMaxErrMessage {
		msg = msg[:schemaMaxErrMessage]
	}
	return &SchemaWriteResponse{ErrorCode: code, Message: msg}
}

// ValidSubject checks a subject name.
func ValidSubject(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty subject", ErrInvalidRequest)
	case len(s) > MaxSubjectLen:
		return fmt.Errorf("%w: subject longer than %d bytes", ErrInvalidRequest, MaxSubjectLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: subject is not UTF-8", ErrInvalidRequest)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: subject holds a control character", ErrInvalidRequest)
	}
	return nil
}

// schema applies a registry write.
func (a *applier) schema(c *cmdSchema) *applyResult {
	s := &a.st.schemas
	s.init()
	req := &c.SchemaWriteRequest
	if req.Op != schemaWriteSetConfig && req.Op != schemaWriteSetMode || req.Subject != "" {
		if err := ValidSubject(req.Subject); err != nil {
			return &applyResult{err: err}
		}
	}
	var r *SchemaWriteResponse
	switch req.Op {
	case schemaWriteRegister:
		r = s.register(req)
	case schemaWriteDeleteVersion:
		r = s.deleteVersion(req)
	case schemaWriteDeleteSubject:
		r = s.deleteSubject(req)
	case schemaWriteSetConfig:
		r = s.setConfig(req)
	case schemaWriteSetMode:
		r = s.setMode(req)
	default:
		return &applyResult{err: fmt.Errorf("%w: unknown schema write %q", ErrInvalidRequest, req.Op)}
	}
	return &applyResult{schema: r}
}

func (s *schemaState) register(req *SchemaWriteRequest) *SchemaWriteResponse {
	in := req.Schema
	mode := s.mode(req.Subject)
	switch {
	case in == nil:
		return schemaFail(SchemaErrInvalidSchema, "no schema")
	case in.Type != SchemaAvro && in.Type != SchemaProtobuf && in.Type != SchemaJSON:
		return schemaFail(SchemaErrInvalidSchema, "unknown schema type %q", in.Type)
	case in.Schema == "" || len(in.Schema) > MaxSchemaBytes:
		return schemaFail(SchemaErrInvalidSchema, "schema of %d bytes; want 1 to %d", len(in.Schema), MaxSchemaBytes)
	case len(in.Fingerprint) > MaxSchemaBytes:
		return schemaFail(SchemaErrInvalidSchema, "fingerprint longer than %d bytes", MaxSchemaBytes)
	case len(in.References) > MaxSchemaReferences:
		return schemaFail(SchemaErrInvalidSchema, "%d references; at most %d", len(in.References), MaxSchemaReferences)
	case mode == ModeReadOnly:
		return schemaFail(SchemaErrOperationNotPermitted, "Subject %s is in read-only mode", req.Subject)
	case mode != ModeImport && (in.ID != 0 || req.Version != 0):
		return schemaFail(SchemaErrOperationNotPermitted, "an id or version can be given only in IMPORT mode")
	case in.ID < 0 || req.Version < 0:
		return schemaFail(SchemaErrInvalidSchema, "negative id or version")
	}
	for _, ref := range in.References {
		if ref.Name == "" {
			return schemaFail(SchemaErrInvalidSchema, "a reference without a name")
		}
		if _, ok := s.liveVersion(ref.Subject, ref.Version); !ok {
			return schemaFail(SchemaErrInvalidSchema, "reference %q: subject %q has no version %d", ref.Name, ref.Subject, ref.Version)
		}
	}
	st := &StoredSchema{Type: in.Type, Schema: in.Schema, References: slices.Clone(in.References), Fingerprint: in.Fingerprint}
	key := schemaKey(st)
	id, known := s.byKey[key]
	if in.ID != 0 {
		if known && id != in.ID {
			return schemaFail(SchemaErrOperationNotPermitted, "the schema already has id %d, not %d", id, in.ID)
		}
		if other, ok := s.schemas[in.ID]; ok && schemaKey(other) != key {
			return schemaFail(SchemaErrOperationNotPermitted, "id %d is already another schema", in.ID)
		}
		id, known = in.ID, true
	}
	sub := s.subjects[req.Subject]
	if sub == nil {
		sub = &subjectInfo{Next: 1}
	}
	if known && req.Version == 0 {
		for _, v := range sub.Versions {
			if v.ID == id && !v.Deleted {
				return &SchemaWriteResponse{ID: id, Version: v.Version}
			}
		}
	}
	if req.ExpectLatest >= 0 {
		latest := int32(0)
		if live := sub.live(); len(live) > 0 {
			latest = live[len(live)-1].Version
		}
		if latest != req.ExpectLatest {
			return schemaFail(SchemaErrLatestMoved, "subject %s moved on to version %d", req.Subject, latest)
		}
	}
	version := sub.Next
	if req.Version != 0 {
		if sub.find(req.Version) >= 0 {
			return schemaFail(SchemaErrInvalidVersion, "subject %s already has version %d", req.Subject, req.Version)
		}
		version = req.Version
	}
	if !known {
		id = s.nextID
	}
	if id == int32(^uint32(0)>>1) {
		return schemaFail(SchemaErrStore, "schema ids exhausted")
	}
	s.nextID = max(s.nextID, id+1)
	if _, ok := s.schemas[id]; !ok {
		st.ID = id
		s.schemas[id] = st
		s.byKey[key] = id
	}
	ns := &subjectInfo{Versions: append(slices.Clone(sub.Versions), SubjectVersion{Version: version, ID: id}),
		Next: max(sub.Next, version+1)}
	slices.SortFunc(ns.Versions, func(a, b SubjectVersion) int { return cmp.Compare(a.Version, b.Version) })
	s.subjects[req.Subject] = ns
	return &SchemaWriteResponse{ID: id, Version: version}
}

// liveVersion finds a subject's version that is not deleted.
func (s *schemaState) liveVersion(subject string, version int32) (SubjectVersion, bool) {
	sub := s.subjects[subject]
	if sub == nil {
		return SubjectVersion{}, false
	}
	if i := sub.find(version); i >= 0 && !sub.Versions[i].Deleted {
		return sub.Versions[i], true
	}
	return SubjectVersion{}, false
}

// referrers lists the live versions whose schemas reference subject's
// version.
func (s *schemaState) referrers(subject string, version int32) []string {
	var out []string
	for name, sub := range s.subjects {
		for _, v := range sub.Versions {
			if v.Deleted {
				continue
			}
			for _, r := range s.schemas[v.ID].References {
				if r.Subject == subject && r.Version == version {
					out = append(out, fmt.Sprintf("%s version %d", name, v.Version))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func (s *schemaState) writable(subject string) *SchemaWriteResponse {
	if s.mode(subject) == ModeReadOnly {
		return schemaFail(SchemaErrOperationNotPermitted, "Subject %s is in read-only mode", subject)
	}
	return nil
}

func (s *schemaState) deleteVersion(req *SchemaWriteRequest) *SchemaWriteResponse {
	if r := s.writable(req.Subject); r != nil {
		return r
	}
	sub := s.subjects[req.Subject]
	if sub == nil {
		return schemaFail(SchemaErrSubjectNotFound, "Subject '%s' not found.", req.Subject)
	}
	i := sub.find(req.Version)
	if i < 0 {
		return schemaFail(SchemaErrVersionNotFound, "Version %d not found.", req.Version)
	}
	v := sub.Versions[i]
	if refs := s.referrers(req.Subject, v.Version); len(refs) > 0 && !v.Deleted {
		return schemaFail(SchemaErrReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}: %s",
			req.Subject, v.Version, strings.Join(refs, ", "))
	}
	ns := &subjectInfo{Versions: slices.Clone(sub.Versions), Next: sub.Next}
	switch {
	case !req.Permanent && v.Deleted:
		return schemaFail(SchemaErrVersionSoftDeleted, "Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", req.Subject, v.Version)
	case !req.Permanent:
		ns.Versions[i].Deleted = true
	case !v.Deleted:
		return schemaFail(SchemaErrVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", req.Subject, v.Version)
	default:
		ns.Versions = slices.Delete(ns.Versions, i, i+1)
	}
	s.putSubject(req.Subject, ns)
	if req.Permanent {
		s.dropUnused(v.ID)
	}
	return &SchemaWriteResponse{Version: v.Version}
}

func (s *schemaState) deleteSubject(req *SchemaWriteRequest) *SchemaWriteResponse {
	if r := s.writable(req.Subject); r != nil {
		return r
	}
	sub := s.subjects[req.Subject]
	if sub == nil || len(sub.Versions) == 0 {
		return schemaFail(SchemaErrSubjectNotFound, "Subject '%s' not found.", req.Subject)
	}
	live := sub.live()
	switch {
	case !req.Permanent && len(live) == 0:
		return schemaFail(SchemaErrSubjectSoftDeleted, "Subject '%s' was soft deleted. Set permanent=true to delete permanently", req.Subject)
	case req.Permanent && len(live) > 0:
		return schemaFail(SchemaErrSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", req.Subject)
	}
	for _, v := range live {
		if refs := s.referrers(req.Subject, v.Version); len(refs) > 0 {
			return schemaFail(SchemaErrReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}: %s",
				req.Subject, v.Version, strings.Join(refs, ", "))
		}
	}
	r := &SchemaWriteResponse{Versions: []int32{}}
	if !req.Permanent {
		ns := &subjectInfo{Versions: slices.Clone(sub.Versions), Next: sub.Next}
		for i := range ns.Versions {
			ns.Versions[i].Deleted = true
			r.Versions = append(r.Versions, ns.Versions[i].Version)
		}
		s.subjects[req.Subject] = ns
		return r
	}
	delete(s.subjects, req.Subject)
	delete(s.config, req.Subject)
	delete(s.modes, req.Subject)
	for _, v := range sub.Versions {
		r.Versions = append(r.Versions, v.Version)
		s.dropUnused(v.ID)
	}
	return r
}

func (s *schemaState) putSubject(name string, sub *subjectInfo) {
	if len(sub.Versions) == 0 {
		delete(s.subjects, name)
		return
	}
	s.subjects[name] = sub
}

// dropUnused forgets schema id once no version (deleted or not) names it.
// Its id stays spent: nextID never goes back.
func (s *schemaState) dropUnused(id int32) {
	for _, sub := range s.subjects {
		for _, v := range sub.Versions {
			if v.ID == id {
				return
			}
		}
	}
	if st, ok := s.schemas[id]; ok {
		delete(s.byKey, schemaKey(st))
		delete(s.schemas, id)
	}
}

// clearSetting deletes subject's entry of a per-subject setting (the
// compatibility levels or the modes); clearing the global entry always
// succeeds, a subject's only when it has one, as in Confluent's API.
func clearSetting(settings map[string]string, subject string, notFound int, what string) *SchemaWriteResponse {
	if _, ok := settings[subject]; !ok && subject != "" {
		return schemaFail(notFound, "Subject '%s' does not have subject-level %s configured", subject, what)
	}
	delete(settings, subject)
	return &SchemaWriteResponse{}
}

func (s *schemaState) setConfig(req *SchemaWriteRequest) *SchemaWriteResponse {
	if req.Level == "" {
		return clearSetting(s.config, req.Subject, SchemaErrSubjectConfigNotFound, "compatibility")
	}
	if !slices.Contains(CompatibilityLevels, req.Level) {
		return schemaFail(SchemaErrInvalidCompatibility, "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	s.config[req.Subject] = req.Level
	return &SchemaWriteResponse{}
}

func (s *schemaState) setMode(req *SchemaWriteRequest) *SchemaWriteResponse {
	switch req.Mode {
	case "":
		return clearSetting(s.modes, req.Subject, SchemaErrSubjectModeNotFound, "mode")
	case ModeReadWrite, ModeReadOnly:
	case ModeImport:
		// Imported ids must not clash with ids allocated here, hence
		// Confluent's rule: IMPORT only on an empty registry or subject.
		empty := len(s.subjects) == 0
		if req.Subject != "" {
			empty = s.subjects[req.Subject] == nil
		}
		if !empty && !req.Force {
			return schemaFail(SchemaErrOperationNotPermitted, "Cannot import since found existing subjects")
		}
	default:
		return schemaFail(SchemaErrInvalidMode, "Invalid mode. Valid values are READWRITE, READONLY and IMPORT")
	}
	s.modes[req.Subject] = req.Mode
	return &SchemaWriteResponse{}
}

// Reads.

// SchemaRead answers a registry read from this node's state.
func (f *FSM) SchemaRead(req SchemaReadRequest) (SchemaReadResponse, error) {
	var r SchemaReadResponse
	var err error
	f.read(func(st *state) {
		s := &st.schemas
		switch req.Op {
		case schemaReadSubjects:
			r.Subjects = []string{}
			for name, sub := range s.subjects {
				if strings.HasPrefix(name, req.Prefix) && (req.Deleted || len(sub.live()) > 0) {
					r.Subjects = append(r.Subjects, name)
				}
			}
			slices.Sort(r.Subjects)
		case schemaReadSubject:
			if sub := s.subjects[req.Subject]; sub != nil {
				for _, v := range sub.Versions {
					if req.Deleted || !v.Deleted {
						v.Schema = s.schemas[v.ID]
						r.Versions = append(r.Versions, v)
					}
				}
			}
		case schemaReadID:
			r.Schema = s.schemas[req.ID]
			if r.Schema == nil || !req.Uses {
				return
			}
			for name, sub := range s.subjects {
				for _, v := range sub.Versions {
					if v.ID == req.ID && (req.Deleted || !v.Deleted) {
						r.Uses = append(r.Uses, SubjectVersionRef{Subject: name, Version: v.Version, Deleted: v.Deleted})
					}
				}
			}
			slices.SortFunc(r.Uses, func(a, b SubjectVersionRef) int {
				return cmp.Or(cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Version, b.Version))
			})
		case schemaReadConfig:
			r.Config, r.Modes = maps.Clone(s.config), maps.Clone(s.modes)
			if r.Config == nil {
				r.Config = map[string]string{}
			}
			if r.Modes == nil {
				r.Modes = map[string]string{}
			}
		default:
			err = fmt.Errorf("%w: unknown schema read %q", ErrInvalidRequest, req.Op)
		}
	})
	return r, err
}

// SchemaRead answers a registry read from this node's state.
func (c *Controller) SchemaRead(_ context.Context, req SchemaReadRequest) (SchemaReadResponse, error) {
	return c.fsm.SchemaRead(req)
}

// SchemaWrite applies a registry write through Raft.
func (c *Controller) SchemaWrite(ctx context.Context, req SchemaWriteRequest) (SchemaWriteResponse, error) {
	r, err := c.propose(ctx, &cmdSchema{req})
	if err != nil {
		return SchemaWriteResponse{}, err
	}
	if r.schema == nil {
		return SchemaWriteResponse{}, fmt.Errorf("%w: no schema result", ErrInvalidRequest)
	}
	return *r.schema, nil
}

// SchemaRead reads the registry state from the leader.
func (c *Client) SchemaRead(ctx context.Context, req SchemaReadRequest) (resp SchemaReadResponse, err error) {
	return resp, c.call(ctx, pathSchemaRead, read, req, &resp)
}

// SchemaWrite applies a registry write. A register is safe to repeat (the
// same schema gets the same id and version back), a delete is not.
func (c *Client) SchemaWrite(ctx context.Context, req SchemaWriteRequest) (resp SchemaWriteResponse, err error) {
	kind := write
	if req.Op == schemaWriteRegister || req.Op == schemaWriteSetConfig || req.Op == schemaWriteSetMode {
		kind = idempotent
	}
	return resp, c.call(ctx, pathSchemaWrite, kind, req, &resp)
}

// schemaRoutes adds the registry paths to the client API.
func (c *Controller) schemaRoutes(route func(string, bool, func(context.Context, []byte) (any, error)), decode func([]byte, any) error) {
	route(pathSchemaWrite, false, decoded(decode, c.SchemaWrite))
	route(pathSchemaRead, true, decoded(decode, c.SchemaRead))
}

// Snapshots.

// schemaSnapshot is the registry state in a snapshot.
type schemaSnapshot struct {
	Format   int                     `json:"format"`
	NextID   int32                   `json:"next_id"`
	Schemas  []*StoredSchema         `json:"schemas"`
	Subjects map[string]*subjectInfo `json:"subjects"`
	Config   map[string]string       `json:"config,omitempty"`
	Modes    map[string]string       `json:"modes,omitempty"`
}

// snapshot copies the state; the values are immutable, so the maps of
// pointers are a point-in-time copy. Nil when the registry was never
// written, so snapshots of clusters without it stay as they were.
func (s *schemaState) snapshot() *schemaSnapshot {
	if s.schemas == nil {
		return nil
	}
	d := &schemaSnapshot{Format: schemaStateFormat, NextID: s.nextID, Subjects: maps.Clone(s.subjects),
		Config: maps.Clone(s.config), Modes: maps.Clone(s.modes), Schemas: make([]*StoredSchema, 0, len(s.schemas))}
	for _, st := range s.schemas {
		d.Schemas = append(d.Schemas, st)
	}
	slices.SortFunc(d.Schemas, func(a, b *StoredSchema) int { return cmp.Compare(a.ID, b.ID) })
	return d
}

// restore rebuilds the state from a snapshot, checking that every version
// names a stored schema and no id is at or above the next one.
func (s *schemaState) restore(d *schemaSnapshot) error {
	*s = schemaState{}
	if d == nil {
		return nil
	}
	if d.Format != schemaStateFormat {
		return fmt.Errorf("schema state format %d, want %d", d.Format, schemaStateFormat)
	}
	s.init()
	s.nextID = max(d.NextID, schemaFirstID)
	for _, st := range d.Schemas {
		if st == nil || st.ID < schemaFirstID || st.ID >= s.nextID {
			return fmt.Errorf("schema id out of range in snapshot")
		}
		if _, dup := s.schemas[st.ID]; dup {
			return fmt.Errorf("schema id %d twice", st.ID)
		}
		s.schemas[st.ID] = st
		s.byKey[schemaKey(st)] = st.ID
	}
	for name, sub := range d.Subjects {
		if sub == nil {
			return fmt.Errorf("subject %q is null", name)
		}
		for _, v := range sub.Versions {
			if s.schemas[v.ID] == nil {
				return fmt.Errorf("subject %q version %d names unknown id %d", name, v.Version, v.ID)
			}
		}
		s.subjects[name] = sub
	}
	maps.Copy(s.config, d.Config)
	maps.Copy(s.modes, d.Modes)
	return nil
}
