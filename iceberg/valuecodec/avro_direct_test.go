package valuecodec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/hamba/avro/v2"
)

// avroFlat has a field of every type the direct path reads.
const avroFlat = `{"type":"record","name":"Flat","namespace":"shop","fields":[
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"s","type":"string"},
 {"name":"raw","type":"bytes"},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
 {"name":"again","type":"Status"},
 {"name":"sku","type":{"type":"fixed","name":"Sku","size":4}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"atu","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"nothing","type":"null","default":null},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"qty","type":["long","null"]},
 {"name":"ratio","type":["null","float"]},
 {"name":"when","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
 {"name":"gone","type":["null"]}
]}`

// flatValue is a random value of avroFlat, with nulls in its unions.
func flatValue(rng *rand.Rand) map[string]any {
	pick := func(v any) any {
		if rng.IntN(3) == 0 {
			return nil
		}
		return v
	}
	sku := [4]byte{}
	for i := range sku {
		sku[i] = byte(rng.Uint32())
	}
	return map[string]any{
		"b": rng.IntN(2) == 1, "i": int(rng.Int32() - rng.Int32()), "l": rng.Int64() - rng.Int64(),
		"f": rng.Float32(), "d": rng.NormFloat64() * 1e9, "s": fmt.Sprintf("s-%d", rng.IntN(1000)),
		"raw": []byte(fmt.Sprintf("raw-%x", rng.Uint64())), "status": []string{"NEW", "PAID", "SHIPPED"}[rng.IntN(3)],
		"again": "PAID", "sku": sku,
		"day":  time.Unix(int64(rng.IntN(40000)-20000)*86400, 0).UTC(),
		"tm":   time.Duration(rng.IntN(86400000)) * time.Millisecond,
		"tu":   time.Duration(rng.Int64N(86400000000)) * time.Microsecond,
		"at":   time.UnixMilli(rng.Int64N(4e12) - 1e12).UTC(),
		"atu":  time.UnixMicro(rng.Int64N(4e15) - 1e15).UTC(),
		"id":   "5f8e2c3a-1b2d-4c5e-8f90-0a1b2c3d4e5f",
		"note": pick("a note"), "qty": pick(rng.Int64()), "ratio": pick(rng.Float32()),
		"when": pick(time.UnixMicro(rng.Int64N(4e15)).UTC()), "gone": nil,
	}
}

// appendBoth appends payload through the direct path to direct and
// through the generic one (Decode, then Append) to generic, and says
// whether each took it.
func appendBoth(c *Codec, direct, generic *testBatch, payload []byte) (errDirect, errGeneric error) {
	errDirect = direct.cols.AppendValue(c, payload, false)
	row, errGeneric := c.Decode(payload)
	if errGeneric == nil {
		errGeneric = generic.cols.Append(row)
	}
	return errDirect, errGeneric
}

// equalBatches fails unless the two batches hold the same rows. A NaN
// equals a NaN here: both paths keep it, and == never holds for it.
func equalBatches(t testing.TB, direct, generic *testBatch) {
	t.Helper()
	a, b := direct.record(), generic.record()
	defer a.Release()
	defer b.Release()
	same := []array.EqualOption{array.WithNaNsEqual(true), array.WithAbsTolerance(0)}
	if !array.RecordApproxEqual(a, b, same...) {
		for i := range a.NumCols() {
			if !array.ApproxEqual(a.Column(int(i)), b.Column(int(i)), same...) {
				t.Errorf("column %s: direct %v, generic %v", a.ColumnName(int(i)), a.Column(int(i)), b.Column(int(i)))
			}
		}
		t.Fatalf("the direct path's rows differ from the generic path's")
	}
}

// TestAvroDirectMatchesGeneric: values of a flat record, into its own
// columns and into wider ones, give the same rows by the direct path as
// by the generic one, and the same errors for bytes that do not decode.
func TestAvroDirectMatchesGeneric(t *testing.T) {
	c, err := Compile(Schema{ID: 5, Type: TypeAvro, Text: avroFlat})
	if err != nil {
		t.Fatal(err)
	}
	sch := avro.MustParse(avroFlat)
	wider := make([]iceberg.NestedField, 0, len(c.Fields()))
	for _, f := range c.Fields() {
		switch f.Name {
		case "i":
			f.Type = iceberg.PrimitiveTypes.Int64
		case "f":
			f.Type = iceberg.PrimitiveTypes.Float64
		}
		wider = append(wider, f)
	}
	for name, fields := range map[string][]iceberg.NestedField{"own": c.Fields(), "wider": wider} {
		t.Run(name, func(t *testing.T) {
			direct, generic := newBatch(t, fields), newBatch(t, fields)
			if newAvroDirect(c, direct.cols) == nil {
				t.Fatal("no direct path for a flat record")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for n := range 500 {
				p, err := avro.Marshal(sch, flatValue(rng))
				if err != nil {
					t.Fatal(err)
				}
				if errD, errG := appendBoth(c, direct, generic, p); errD != nil || errG != nil {
					t.Fatalf("value %d: direct %v, generic %v", n, errD, errG)
				}
				// Cut short, and with a bad union branch or enum
				// symbol: both refuse it, and the batch is intact.
				bad := [][]byte{p[:rng.IntN(len(p))], append([]byte{0x02, 0x7f}, p[2:]...)}
				for _, b := range bad {
					errD, errG := appendBoth(c, direct, generic, b)
					if (errD == nil) != (errG == nil) {
						t.Fatalf("value %d cut: direct %v, generic %v", n, errD, errG)
					}
				}
			}
			equalBatches(t, direct, generic)
		})
	}
}

// Nested records, arrays, maps, unions of several types and decimals take
// the generic path.
func TestAvroDirectDeclines(t *testing.T) {
	for _, field := range []string{
		`{"name":"x","type":{"type":"record","name":"In","fields":[{"name":"a","type":"int"}]}}`,
		`{"name":"x","type":{"type":"array","items":"int"}}`,
		`{"name":"x","type":{"type":"map","values":"int"}}`,
		`{"name":"x","type":["null","int","string"]}`,
		`{"name":"x","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}`,
		`{"name":"x","type":["null",{"type":"enum","name":"E","symbols":["A"]}]}`,
		`{"name":"x","type":{"type":"long","logicalType":"local-timestamp-millis"}}`,
	} {
		c, err := Compile(Schema{ID: 1, Type: TypeAvro, Text: `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},` + field + `]}`})
		if err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		if newAvroDirect(c, newBatch(t, c.Fields()).cols) != nil {
			t.Errorf("%s: a direct path", field)
		}
	}
}

// FuzzAvroDirect: for any bytes, the direct path and the generic one
// agree on whether the value decodes and, when it does, on its row.
func FuzzAvroDirect(f *testing.F) {
	c, err := Compile(Schema{ID: 5, Type: TypeAvro, Text: avroFlat})
	if err != nil {
		f.Fatal(err)
	}
	p, err := avro.Marshal(avro.MustParse(avroFlat), flatValue(rand.New(rand.NewPCG(3, 4))))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p)
	f.Add(p[:len(p)/2])
	nan := flatValue(rand.New(rand.NewPCG(5, 6)))
	nan["f"], nan["d"] = float32(math.NaN()), math.NaN()
	if p, err = avro.Marshal(avro.MustParse(avroFlat), nan); err != nil {
		f.Fatal(err)
	}
	f.Add(p)
	f.Fuzz(func(t *testing.T, b []byte) {
		recoverPanics = false
		defer func() { recoverPanics = true }()
		direct, generic := newBatch(t, c.Fields()), newBatch(t, c.Fields())
		errD, errG := appendBoth(c, direct, generic, b)
		if (errD == nil) != (errG == nil) {
			t.Fatalf("direct %v, generic %v", errD, errG)
		}
		equalBatches(t, direct, generic)
	})
}
