package controller

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

func schemaWrite(t *testing.T, f *FSM, req SchemaWriteRequest) SchemaWriteResponse {
	t.Helper()
	r := applyCmd(t, f, &cmdSchema{req})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return *r.schema
}

func reg(subject, text string) SchemaWriteRequest {
	return SchemaWriteRequest{Op: SchemaRegister, Subject: subject, ExpectLatest: -1,
		Schema: &StoredSchema{Type: SchemaAvro, Schema: text, Fingerprint: text}}
}

func wantCode(t *testing.T, r SchemaWriteResponse, code int) {
	t.Helper()
	if r.ErrorCode != code {
		t.Fatalf("got %+v, want error code %d", r, code)
	}
}

func TestSchemaRegisterIDsAndVersions(t *testing.T) {
	f := NewFSM(nil)
	r := schemaWrite(t, f, reg("a-value", `"string"`))
	if r.ErrorCode != 0 || r.ID != 1 || r.Version != 1 {
		t.Fatalf("first register = %+v", r)
	}
	// The same schema again: same id and version, no new version.
	if r2 := schemaWrite(t, f, reg("a-value", `"string"`)); !reflect.DeepEqual(r2, r) {
		t.Fatalf("repeat = %+v, want %+v", r2, r)
	}
	// The same schema under another subject keeps its id.
	if r2 := schemaWrite(t, f, reg("b-value", `"string"`)); r2.ID != 1 || r2.Version != 1 {
		t.Fatalf("other subject = %+v", r2)
	}
	r3 := schemaWrite(t, f, reg("a-value", `"int"`))
	if r3.ID != 2 || r3.Version != 2 {
		t.Fatalf("second schema = %+v", r3)
	}
	// ExpectLatest guards against a register that raced ours.
	stale := reg("a-value", `"long"`)
	stale.ExpectLatest = 1
	wantCode(t, schemaWrite(t, f, stale), SchemaErrLatestMoved)

	// Permanently deleting id 2's only version frees the schema, not the id.
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteVersion, Subject: "a-value", Version: 2, Permanent: true}), SchemaErrVersionNotSoftDeleted)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteVersion, Subject: "a-value", Version: 2}), 0)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteVersion, Subject: "a-value", Version: 2}), SchemaErrVersionSoftDeleted)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteVersion, Subject: "a-value", Version: 2, Permanent: true}), 0)
	if got, _ := f.SchemaRead(SchemaReadRequest{Op: SchemaReadID, ID: 2}); got.Schema != nil {
		t.Fatalf("id 2 after permanent delete = %+v", got.Schema)
	}
	r4 := schemaWrite(t, f, reg("a-value", `"int"`))
	if r4.ID != 3 || r4.Version != 3 {
		t.Fatalf("re-register after permanent delete = %+v, want id 3 version 3", r4)
	}
}

func TestSchemaDeleteSubjectAndReferences(t *testing.T) {
	f := NewFSM(nil)
	schemaWrite(t, f, reg("base", `{"type":"record","name":"B","fields":[]}`))
	ref := reg("top", `{"type":"record","name":"T","fields":[{"name":"b","type":"B"}]}`)
	ref.Schema.References = []SchemaReference{{Name: "B", Subject: "base", Version: 1}}
	wantCode(t, schemaWrite(t, f, ref), 0)
	bad := reg("top2", `"x"`)
	bad.Schema.References = []SchemaReference{{Name: "B", Subject: "base", Version: 9}}
	wantCode(t, schemaWrite(t, f, bad), SchemaErrInvalidSchema)

	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "base"}), SchemaErrReferenceExists)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "nope"}), SchemaErrSubjectNotFound)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "top", Permanent: true}), SchemaErrSubjectNotSoftDeleted)
	if r := schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "top"}); !reflect.DeepEqual(r.Versions, []int32{1}) {
		t.Fatalf("soft delete = %+v", r)
	}
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "top"}), SchemaErrSubjectSoftDeleted)
	subs, _ := f.SchemaRead(SchemaReadRequest{Op: SchemaReadSubjects})
	if !reflect.DeepEqual(subs.Subjects, []string{"base"}) {
		t.Fatalf("subjects = %v", subs.Subjects)
	}
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "top", Permanent: true}), 0)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteSubject, Subject: "base"}), 0)
}

func TestSchemaConfigAndMode(t *testing.T) {
	f := NewFSM(nil)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetConfig, Level: "SIDEWAYS"}), SchemaErrInvalidCompatibility)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetConfig, Level: "FULL"}), 0)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetConfig, Subject: "s", Level: "NONE"}), 0)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetConfig, Subject: "t"}), SchemaErrSubjectConfigNotFound)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetMode, Mode: "SLEEPY"}), SchemaErrInvalidMode)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetMode, Mode: ModeReadOnly}), 0)
	wantCode(t, schemaWrite(t, f, reg("s", `"int"`)), SchemaErrOperationNotPermitted)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetMode, Mode: ModeImport}), 0)
	imp := reg("s", `"int"`)
	imp.Schema.ID, imp.Version = 100, 7
	if r := schemaWrite(t, f, imp); r.ID != 100 || r.Version != 7 {
		t.Fatalf("import = %+v", r)
	}
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetMode, Mode: ModeReadWrite}), 0)
	if r := schemaWrite(t, f, reg("s", `"long"`)); r.ID != 101 || r.Version != 8 {
		t.Fatalf("after import = %+v, want id 101 version 8", r)
	}
	cfg, _ := f.SchemaRead(SchemaReadRequest{Op: SchemaReadConfig})
	if cfg.Config[""] != "FULL" || cfg.Config["s"] != "NONE" || cfg.Modes[""] != ModeReadWrite {
		t.Fatalf("config = %+v", cfg)
	}
	// Import refused once schemas exist, unless forced.
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetMode, Mode: ModeImport}), SchemaErrOperationNotPermitted)
}

func TestSchemaBadWrites(t *testing.T) {
	f := NewFSM(nil)
	if r := applyCmd(t, f, &cmdSchema{SchemaWriteRequest{Op: SchemaRegister, Subject: "", Schema: &StoredSchema{Type: SchemaAvro, Schema: "x"}}}); r.err == nil {
		t.Fatal("empty subject accepted")
	}
	if r := applyCmd(t, f, &cmdSchema{SchemaWriteRequest{Op: "explode", Subject: "s"}}); r.err == nil {
		t.Fatal("unknown op accepted")
	}
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaRegister, Subject: "s"}), SchemaErrInvalidSchema)
	wantCode(t, schemaWrite(t, f, SchemaWriteRequest{Op: SchemaRegister, Subject: "s", Schema: &StoredSchema{Type: "XML", Schema: "<a/>"}}), SchemaErrInvalidSchema)
	withID := reg("s", `"int"`)
	withID.Schema.ID = 5
	wantCode(t, schemaWrite(t, f, withID), SchemaErrOperationNotPermitted)
}

func TestSchemaSnapshotRoundTrip(t *testing.T) {
	f := NewFSM(nil)
	schemaWrite(t, f, reg("a", `"int"`))
	schemaWrite(t, f, reg("a", `"long"`))
	schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteVersion, Subject: "a", Version: 2})
	schemaWrite(t, f, SchemaWriteRequest{Op: SchemaDeleteVersion, Subject: "a", Version: 2, Permanent: true})
	schemaWrite(t, f, SchemaWriteRequest{Op: SchemaSetConfig, Subject: "a", Level: "FULL"})
	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	for _, req := range []SchemaReadRequest{{Op: SchemaReadSubject, Subject: "a", Deleted: true}, {Op: SchemaReadConfig}, {Op: SchemaReadID, ID: 1, Uses: true}} {
		a, _ := f.SchemaRead(req)
		b, _ := g.SchemaRead(req)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: restored %+v, want %+v", req.Op, b, a)
		}
	}
	// The id counter survives: id 2 stays spent.
	if r := schemaWrite(t, g, reg("a", `"float"`)); r.ID != 3 {
		t.Fatalf("after restore: %+v, want id 3", r)
	}
}

// FuzzSchemaCommands applies arbitrary registry writes: Apply never
// panics, ids stay unique and below the counter, and the state survives a
// snapshot and restore unchanged.
func FuzzSchemaCommands(f *testing.F) {
	f.Add([]byte(`{"op":"register","subject":"s","expect_latest":-1,"schema":{"type":"AVRO","schema":"\"int\"","fingerprint":"i"}}`),
		[]byte(`{"op":"delete_version","subject":"s","version":1}`))
	f.Add([]byte(`{"op":"set_mode","mode":"IMPORT"}`),
		[]byte(`{"op":"register","subject":"s","version":3,"schema":{"id":9,"type":"JSON","schema":"{}","fingerprint":"{}"}}`))
	f.Add([]byte(`{"op":"delete_subject","subject":"s","permanent":true}`), []byte(`{"op":"set_config","subject":"s","level":"FULL"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fsm := NewFSM(nil)
		for _, payload := range [][]byte{a, b, a} {
			data := append([]byte{commandVersion, byte(opSchema)}, payload...)
			_ = fsm.Apply(&raft.Log{Type: raft.LogCommand, Data: data})
		}
		fsm.read(func(st *state) {
			s := &st.schemas
			for id, sc := range s.schemas {
				if sc.ID != id || id >= s.nextID {
					t.Fatalf("schema %d stored as %d, next id %d", id, sc.ID, s.nextID)
				}
			}
		})
		g := NewFSM(nil)
		if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, fsm)))); err != nil {
			t.Fatalf("restore of a snapshot taken after valid applies: %v", err)
		}
		want, _ := fsm.SchemaRead(SchemaReadRequest{Op: SchemaReadConfig})
		got, _ := g.SchemaRead(SchemaReadRequest{Op: SchemaReadConfig})
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("config after restore %+v, want %+v", got, want)
		}
		ws, _ := fsm.SchemaRead(SchemaReadRequest{Op: SchemaReadSubject, Subject: "s", Deleted: true})
		gs, _ := g.SchemaRead(SchemaReadRequest{Op: SchemaReadSubject, Subject: "s", Deleted: true})
		if !reflect.DeepEqual(ws, gs) {
			t.Fatalf("subject after restore %+v, want %+v", gs, ws)
		}
	})
}
