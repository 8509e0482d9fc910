package native_test

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// TestProtocolExamples keeps PROTOCOL.md exact: every hex example is one
// whole frame that the codec decodes, request or response, with no byte
// left over.
func TestProtocolExamples(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```hex\n")[1:]
	if len(blocks) < 8 {
		t.Fatalf("%d hex examples, want at least 8", len(blocks))
	}
	for i, blk := range blocks {
		text := strings.Join(strings.Fields(blk[:strings.Index(blk, "```")]), "")
		b, err := hex.DecodeString(text)
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		op, payload, rest, err := wire.SplitFrame(b, 1<<20)
		if err != nil || len(rest) != 0 {
			t.Fatalf("example %d: %v, %d bytes left", i, err, len(rest))
		}
		// A response if its head parses to the end with a body of its
		// opcode; else a request.
		if decodes(op, payload, true) || decodes(op, payload, false) {
			continue
		}
		t.Errorf("example %d (%v) decodes as neither request nor response", i, op)
	}
}

func decodes(op wire.Opcode, payload []byte, response bool) bool {
	r := wire.NewReader(payload)
	var m interface{ Decode(*wire.Reader) error }
	if response {
		wire.ReadHead(&r)
		switch op {
		case wire.OpHandshake:
			m = &wire.HandshakeResponse{}
		case wire.OpLookup, wire.OpListTopics, wire.OpCreateTopic:
			m = &wire.Topics{}
		case wire.OpProduce:
			if r.Len() == 0 && r.Err() == nil {
				return true // an error answer: the head alone
			}
			m = &wire.ProduceResponse{}
		case wire.OpFetch:
			m = &wire.FetchResponse{}
		case wire.OpProduceMany:
			m = &wire.ProduceManyResponse{}
		case wire.OpError:
			return r.End("Error") == nil
		}
	} else {
		r.U32("corr")
		switch op {
		case wire.OpHandshake:
			m = &wire.Handshake{}
		case wire.OpLookup:
			m = &wire.Lookup{}
		case wire.OpProduce:
			m = &wire.Produce{}
		case wire.OpFetch:
			m = &wire.Fetch{}
		case wire.OpProduceMany:
			m = &wire.ProduceMany{}
		}
	}
	return m != nil && m.Decode(&r) == nil
}
