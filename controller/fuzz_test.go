package controller

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/aerostream/aerostream/auth"
)

// FuzzDecodeCommand feeds arbitrary log entries to the decoder and to
// Apply on a populated FSM: neither may panic, and whatever decodes must
// encode back to something that decodes the same.
func FuzzDecodeCommand(f *testing.F) {
	for _, p := range []any{
		&cmdSetClusterID{ClusterID: "c"},
		&cmdCreateTopics{Topics: []cmdNewTopic{{Name: "t", ID: TopicID{1, 2, 3}, Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}}}},
		&cmdDeleteTopics{Topics: []TopicRef{{Name: "t"}, {ID: TopicID{1}}}},
		&cmdCreatePartitions{Topics: []PartitionCount{{"t", 4}}},
		&cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "cleanup.policy", Op: OpAppend, Value: "delete"}}}}},
		&cmdRegisterNode{ID: 1, Kind: KindStore, Shards: 2, RingAddr: "h:1", NowMs: 1},
		&cmdSetLiveness{Down: []int32{1}, Up: []int32{2}, NowMs: 2},
		&cmdAlterPartition{Topic: "t", Partition: 0, LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: 0, ISR: []int32{1}},
		&cmdAlterPartition{Topic: "t", Partition: 1, LeaderID: 1, ISR: []int32{1, 2, 2}},
		&cmdReassign{Reassignments: []Reassignment{{Topic: "t", Partition: 0, Replicas: []int32{2, 1}}, {Topic: "t", Partition: 1}}},
		&cmdDrainStore{ID: 1},
		&cmdElectPreferred{},
		&cmdShutdownStore{ID: 1},
		&cmdSecurity{Op: secCreateACLs, ACLs: []auth.ACL{{ResourceType: auth.ResourceTopic, ResourceName: "t", PatternType: auth.PatternPrefixed, Principal: "User:a", Host: "*", Operation: auth.OpRead, Permission: auth.Allow}}},
		&cmdSecurity{Op: secDeleteACLs, Filters: []auth.ACLFilter{{PatternType: auth.Match, ResourceName: "t"}}},
		&cmdSecurity{Op: secAlterUsers, Upserts: []ScramUpsert{{User: "a", Mechanism: auth.ScramSHA256}}, Deletions: []ScramDeletion{{User: "a", Mechanism: auth.ScramSHA512}}},
		&cmdSecurity{Op: secPutRoles, Roles: []auth.Role{{Name: "r", Permissions: []auth.RolePermission{{ResourceType: auth.ResourceTopic, Operations: []string{auth.OpRead}}}}}},
		&cmdSecurity{Op: secBindRoles, Bindings: []auth.RoleBinding{{Role: "r", Principal: "Group:g", ResourceType: auth.ResourceTopic, PatternType: auth.PatternPrefixed, ResourceName: "t"}}},
		&cmdSecurity{Op: secUnbindRoles, Bindings: []auth.RoleBinding{{Role: auth.RoleReader, Principal: "User:a"}}},
		&cmdSecurity{Op: secDeleteRoles, RoleNames: []string{"r"}},
		&cmdSecurity{Op: secSetGroups, Groups: []UserGroups{{User: "a", Groups: []string{"g"}}}},
	} {
		b, err := encodeCommand(newCommand(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 2, 'n', 'u', 'l', 'l'})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCommand(data)
		fsm := NewFSM(nil)
		registerStore(t, fsm, 1)
		registerStore(t, fsm, 2)
		if err := createTopic(t, fsm, "t", 2, nil); err != nil {
			t.Fatal(err)
		}
		r := fsm.Apply(&raft.Log{Type: raft.LogCommand, Data: data}).(*applyResult)
		if err != nil {
			if r.err == nil {
				t.Fatalf("Apply accepted what decodeCommand refused (%v)", err)
			}
			return
		}
		b, err := encodeCommand(c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		c2, err := decodeCommand(b)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		b2, _ := encodeCommand(c2)
		if !bytes.Equal(b, b2) {
			t.Fatalf("not stable:\n%q\n%q", b, b2)
		}
		// Snapshots of whatever state the command left restore.
		data2 := snapshotBytes(t, fsm)
		if err := NewFSM(nil).Restore(nopCloser{bytes.NewReader(data2)}); err != nil {
			t.Fatalf("restore after %q: %v", data, err)
		}
	})
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
