package wire

import "testing"

type decoder interface{ Decode(*Reader) error }

// FuzzDecode drives every decoder of the protocol, and the frame and batch
// parsers, with arbitrary bytes: none may panic or read past its input,
// whatever lengths and counts the bytes claim.
func FuzzDecode(f *testing.F) {
	seed := func(op Opcode, m interface{ Append([]byte) []byte }) {
		b := AppendHeader(nil, op, 0)
		b = AppendU32(b, 1)
		b = m.Append(b)
		PutLength(b)
		f.Add(b)
	}
	seed(OpHandshake, &Handshake{Version: 1, ClientID: "c"})
	seed(OpLookup, &Lookup{Names: []string{"orders"}})
	seed(OpProduce, &Produce{Partition: 1, Acks: 1, Records: []byte{1, 2, 3}})
	seed(OpFetch, &Fetch{MaxWaitMs: 10, Partitions: []FetchPartition{{Partition: 2}}})
	seed(OpListOffsets, &ListOffsets{Timestamp: -1})
	seed(OpCreateTopic, &CreateTopic{Name: "t", Partitions: 3, Configs: []Config{{"a", "b"}}})
	seed(OpDeleteTopic, &TopicName{Name: "t"})
	seed(OpOffsetCommit, &OffsetCommit{Group: "g", Generation: -1, Offsets: []PartitionOffset{{1, 2}}})
	seed(OpJoinGroup, &JoinGroup{Group: "g", SessionTimeoutMs: 10000})
	seed(OpHeartbeat, &GroupMember{Group: "g", MemberID: "m"})
	seed(OpSubscribe, &Subscribe{MaxBytes: 1 << 20, CreditBytes: 4 << 20, Partitions: []SubscribePartition{{Partition: 1, Offset: 5}}})
	seed(OpCredit, &Credit{Subscription: 3, Bytes: 100})
	seed(OpAlterConfigs, &AlterConfigs{Name: "t", Set: []Config{{"retention.ms", "1"}}, Deleted: []string{"segment.ms"}})
	seed(OpProduceMany, &ProduceMany{Acks: 1, Partitions: []ManyPart{{Partition: 1, Records: []byte{1}}, {Partition: 2}}})
	seed(OpDescribeGroup, &GroupName{Group: "g"})
	seed(OpGroupLag, &GroupLag{Group: "g"})
	seed(OpSaslAuthenticate, &SaslAuthenticate{Auth: []byte("n,,n=alice,r=abc")})
	seed(OpFetch, &Fetch{Partitions: []FetchPartition{{Partition: 2}}, Commit: &FetchCommit{Group: "g", Offsets: []TopicOffset{{Partition: 1, Offset: 3}}}})
	var bb BatchBuilder
	bb.Add(1, []byte("k"), []byte("v"), nil)
	batch, _ := bb.AppendBatch(nil)
	f.Add(batch)
	f.Add([]byte{0xAE, 1, 0x04, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, b []byte) {
		if op, payload, _, err := SplitFrame(b, 1<<20); err == nil {
			r := NewReader(payload)
			r.U32("corr")
			var m decoder
			switch op {
			case OpHandshake:
				m = &Handshake{}
			case OpSaslAuthenticate:
				m = &SaslAuthenticate{}
			case OpLookup:
				m = &Lookup{}
			case OpProduce:
				m = &Produce{}
			case OpFetch:
				m = &Fetch{}
			case OpListOffsets:
				m = &ListOffsets{}
			case OpCreateTopic:
				m = &CreateTopic{}
			case OpDeleteTopic, OpDescribe:
				m = &TopicName{}
			case OpOffsetCommit:
				m = &OffsetCommit{}
			case OpOffsetFetch:
				m = &OffsetFetch{}
			case OpJoinGroup:
				m = &JoinGroup{}
			case OpHeartbeat, OpLeaveGroup:
				m = &GroupMember{}
			case OpSubscribe:
				m = &Subscribe{}
			case OpCredit, OpUnsubscribe:
				m = &Credit{}
			case OpAlterConfigs:
				m = &AlterConfigs{}
			case OpProduceMany:
				m = &ProduceMany{}
			case OpDescribeGroup:
				m = &GroupName{}
			case OpGroupLag:
				m = &GroupLag{}
			case OpInitProducerID, OpListGroups:
				m = &Empty{}
			}
			if m != nil {
				_ = m.Decode(&r)
			}
		}
		// The response side, as the SDK decodes what a server sends.
		for _, m := range []decoder{&HandshakeResponse{}, &Topics{}, &ProduceResponse{}, &FetchResponse{}, &OffsetAt{}, &Description{}, &Offsets{}, &Assignment{},
			&ProduceManyResponse{}, &ProducerID{}, &GroupDescription{}, &Groups{}, &LagResponse{}} {
			r := NewReader(b)
			ReadHead(&r)
			_ = m.Decode(&r)
		}
		var d Decoder
		rest := b
		for {
			info, one, next, ok, err := NextBatch(rest)
			if err != nil || !ok {
				break
			}
			_, _ = d.Records(nil, &info, one)
			rest = next
		}
	})
}
