package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/hamba/avro/v2"

	"github.com/aerostream/aerostream/iceberg/valuecodec"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// fakeSchemas is a registry with one subject, for the schema modes' unit
// tests (the end-to-end test uses the real one).
type fakeSchemas struct {
	mu       sync.Mutex // the committer reads while a test registers (add)
	subject  string
	versions []valuecodec.Schema // in version order
	others   map[int32]valuecodec.Schema
}

// add registers s as the subject's newest version.
func (f *fakeSchemas) add(s valuecodec.Schema) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions = append(f.versions, s)
}

func (f *fakeSchemas) SchemaByID(_ context.Context, id int32) (valuecodec.Schema, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.versions {
		if s.ID == id {
			return s, nil
		}
	}
	if s, ok := f.others[id]; ok {
		return s, nil
	}
	return valuecodec.Schema{}, fmt.Errorf("%w: id %d", valuecodec.ErrUnknownSchema, id)
}

func (f *fakeSchemas) SubjectSchemas(_ context.Context, subject string) ([]valuecodec.Schema, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if subject != f.subject || len(f.versions) == 0 {
		return nil, fmt.Errorf("%w: subject %s", valuecodec.ErrUnknownSchema, subject)
	}
	return slices.Clone(f.versions), nil
}

func (f *fakeSchemas) SubjectHasID(_ context.Context, subject string, id int32) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.versions {
		if s.ID == id && subject == f.subject {
			return true, nil
		}
	}
	return false, nil
}

const (
	userV1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"}]}`
	userV2 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"email","type":["null","string"],"default":null}]}`
	userV3 = `{"type":"record","name":"User","fields":[{"name":"id","type":"string"}]}`
)

func framed(t *testing.T, id int32, text string, v map[string]any) []byte {
	t.Helper()
	p, err := avro.Marshal(avro.MustParse(text), v)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, p...)
}

func newTestMode(t *testing.T, mode string, src *fakeSchemas) Mode {
	t.Helper()
	m, err := NewMode(ModeContext{Topic: "users", Configs: map[string]string{ConfigMode: mode}, Registry: src})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func builderFor(t *testing.T, m Mode) (RowBuilder, *iceberg.Schema) {
	t.Helper()
	sc, err := m.Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewBuilder(sc, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	return b, sc
}

func TestSchemaModeIDPrefix(t *testing.T) {
	src := &fakeSchemas{subject: "users-value", versions: []valuecodec.Schema{{ID: 11, Type: valuecodec.TypeAvro, Text: userV1}},
		others: map[int32]valuecodec.Schema{99: {ID: 99, Type: valuecodec.TypeAvro, Text: userV1}}}
	m := newTestMode(t, ModeValueSchemaIDPrefix, src)
	b, sc := builderFor(t, m)
	if _, ok := sc.FindFieldByName("name"); !ok {
		t.Fatalf("schema %s lacks v1's columns", sc)
	}
	rec := func(off int64, v []byte) *Record {
		return &Record{Partition: 0, Offset: off, Timestamp: 1000, Value: v}
	}
	if err := b.Append(rec(0, framed(t, 11, userV1, map[string]any{"id": 1, "name": "ann"}))); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string][]byte{
		"unframed":       []byte("plain text"),
		"other subject":  framed(t, 99, userV1, map[string]any{"id": 1, "name": "x"}),
		"unknown id":     framed(t, 1234, userV1, map[string]any{"id": 1, "name": "x"}),
		"truncated body": framed(t, 11, userV1, map[string]any{"id": 1, "name": "ann"})[:7],
	} {
		if err := b.Append(rec(1, v)); !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: err %v, want ErrUndecodable", name, err)
		}
	}
	if b.Rows() != 1 {
		t.Fatalf("rows %d after bad records, want 1", b.Rows())
	}

	// v2 is registered: its first record asks for the table to evolve.
	src.versions = append(src.versions, valuecodec.Schema{ID: 12, Type: valuecodec.TypeAvro, Text: userV2})
	v2 := framed(t, 12, userV2, map[string]any{"id": int64(1) << 40, "email": "b@x"})
	if err := b.Append(rec(2, v2)); !errors.Is(err, ErrSchemaChanged) {
		t.Fatalf("v2 record: err %v, want ErrSchemaChanged", err)
	}
	b2, sc2 := builderFor(t, m)
	for _, col := range []string{"name", "email", "aerostream.offset"} {
		if _, ok := sc2.FindFieldByName(col); !ok {
			t.Errorf("evolved schema lacks %s: %s", col, sc2)
		}
	}
	if f, _ := sc2.FindFieldByName("id"); !f.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Errorf("id is %s, want long", f.Type)
	}
	for i, v := range [][]byte{framed(t, 11, userV1, map[string]any{"id": 7, "name": "old"}), v2, nil} {
		if err := b2.Append(rec(int64(3+i), v)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	// v3 changes id's type: its records go to the DLQ table.
	src.versions = append(src.versions, valuecodec.Schema{ID: 13, Type: valuecodec.TypeAvro, Text: userV3})
	if err := b2.Append(rec(6, framed(t, 13, userV3, map[string]any{"id": "x"}))); !errors.Is(err, ErrUndecodable) {
		t.Errorf("v3 record: err %v, want ErrUndecodable", err)
	}
	batch := b2.Build()
	defer batch.Release()
	if batch.NumRows() != 3 {
		t.Fatalf("rows %d, want 3", batch.NumRows())
	}
	col := func(name string) arrow.Array {
		return batch.Column(batch.Schema().FieldIndices(name)[0])
	}
	ids, emails, names := col("id").(*array.Int64), col("email"), col("name")
	if ids.Value(0) != 7 || ids.Value(1) != 1<<40 || !ids.IsNull(2) {
		t.Errorf("id %v", ids)
	}
	if !emails.IsNull(0) || emails.(*array.String).Value(1) != "b@x" {
		t.Errorf("email %v", emails)
	}
	if names.(*array.String).Value(0) != "old" || !names.IsNull(1) {
		t.Errorf("name %v", names)
	}
	offs := col("aerostream").(*array.Struct).Field(1).(*array.Int64)
	if offs.Value(0) != 3 || offs.Value(2) != 5 {
		t.Errorf("offsets %v", offs)
	}
}

func TestSchemaModeLatest(t *testing.T) {
	src := &fakeSchemas{subject: "users-value", versions: []valuecodec.Schema{
		{ID: 11, Type: valuecodec.TypeAvro, Text: userV1}, {ID: 12, Type: valuecodec.TypeAvro, Text: userV2}}}
	m := newTestMode(t, ModeValueSchemaLatest, src)
	b, _ := builderFor(t, m)
	bare, err := avro.Marshal(avro.MustParse(userV2), map[string]any{"id": int64(5), "email": "c@x"})
	if err != nil {
		t.Fatal(err)
	}
	// The table covers every version: a framed value of version 1
	// decodes with version 1 (its writer's schema) into the same table.
	v1 := framed(t, 11, userV1, map[string]any{"id": 1, "name": "ann"})
	for i, v := range [][]byte{bare, v1} {
		if err := b.Append(&Record{Offset: int64(i), Value: v}); err != nil {
			t.Errorf("value %d: %v", i, err)
		}
	}
	if err := b.Append(&Record{Offset: 2, Value: []byte{0xff}}); !errors.Is(err, ErrUndecodable) {
		t.Errorf("bad bare value: err %v, want ErrUndecodable", err)
	}
	if b.Rows() != 2 {
		t.Errorf("rows %d, want 2", b.Rows())
	}

	// A version registered during the session: its framed values stop
	// the session, and the next session's mode (a new one, as the
	// committer makes) covers and decodes bare values with it.
	const userV4 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"city","type":["null","string"],"default":null}]}`
	src.versions = append(src.versions, valuecodec.Schema{ID: 14, Type: valuecodec.TypeAvro, Text: userV4})
	v4 := framed(t, 14, userV4, map[string]any{"id": int64(9), "city": "Oslo"})
	if err := b.Append(&Record{Offset: 3, Value: v4}); !errors.Is(err, ErrSchemaChanged) {
		t.Fatalf("v4 value: err %v, want ErrSchemaChanged", err)
	}
	b, _ = builderFor(t, newTestMode(t, ModeValueSchemaLatest, src))
	bare4, _ := avro.Marshal(avro.MustParse(userV4), map[string]any{"id": int64(10), "city": "Rome"})
	for i, v := range [][]byte{v4, bare4, v1} {
		if err := b.Append(&Record{Offset: int64(3 + i), Value: v}); err != nil {
			t.Errorf("after v4, value %d: %v", i, err)
		}
	}

	// Without a version the latest mode cannot work: an error, retried.
	empty := newTestMode(t, ModeValueSchemaLatest, &fakeSchemas{subject: "users-value"})
	if _, err := empty.Schema(context.Background()); err == nil {
		t.Errorf("latest mode with no version: no error")
	}
}

func TestSchemaModeNeedsRegistry(t *testing.T) {
	_, err := NewMode(ModeContext{Topic: "t", Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}})
	if !errors.Is(err, ErrModeUnavailable) {
		t.Errorf("err %v, want ErrModeUnavailable", err)
	}
}

// TestLatestModeFollowsNewVersion: in value_schema_latest, a version
// registered while the committer runs decodes the bare values produced
// after it, with its new column, without the committer being restarted
// from outside.
func TestLatestModeFollowsNewVersion(t *testing.T) {
	const topic = "users"
	const userV1b = `{"type":"record","name":"User","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
	src := &fakeSchemas{subject: topic + "-value", versions: []valuecodec.Schema{{ID: 11, Type: valuecodec.TypeAvro, Text: userV1}}}
	l := newTestLog(t, topic, 1)
	cfg := testConfig(t.TempDir())
	cat := openTestCatalog(t, cfg)
	bare := func(text string, v map[string]any) []byte {
		b, err := avro.Marshal(avro.MustParse(text), v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	produce := func(vals ...[]byte) {
		var recs []logtest.Record
		for _, v := range vals {
			recs = append(recs, logtest.Record{Value: v})
		}
		if _, err := l.backend.Produce(context.Background(), &ring.ProduceRequest{Topic: topic, Acks: -1,
			Records: logtest.Batch(time.Now().UnixMilli(), recs...)}); err != nil {
			t.Fatal(err)
		}
	}
	m := NewManager(ManagerOptions{Config: cfg, Catalog: cat, Logger: quiet(), Registry: src})
	m.Update([]TopicState{{Name: topic, Partitions: 1, Commit: true,
		Configs: map[string]string{ConfigEnabled: "true", ConfigMode: ModeValueSchemaLatest}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx, l.backend) }()
	t.Cleanup(func() { cancel(); <-done })

	produce(bare(userV1, map[string]any{"id": 1, "name": "ann"}))
	waitOffsets(t, cat, topic, Offsets{0: 1})
	// Registered while the committer runs.
	src.add(valuecodec.Schema{ID: 12, Type: valuecodec.TypeAvro, Text: userV1b})
	produce(bare(userV1b, map[string]any{"id": 2, "name": "bob", "email": "b@x"}))
	tbl := waitOffsets(t, cat, topic, Offsets{0: 2})

	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices("email")
	if len(idx) != 1 {
		t.Fatalf("table has no email column: %s", at.Schema())
	}
	emails := map[int32]string{}
	ids := at.Column(at.Schema().FieldIndices("id")[0]).Data().Chunks()
	for i, ch := range at.Column(idx[0]).Data().Chunks() {
		for r := 0; r < ch.Len(); r++ {
			if !ch.IsNull(r) {
				emails[ids[i].(*array.Int32).Value(r)] = ch.(*array.String).Value(r)
			}
		}
	}
	if emails[2] != "b@x" || len(emails) != 1 {
		t.Errorf("emails by id %v, want only 2: b@x", emails)
	}
	if n := at.NumRows(); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}
