package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetFetchRequireStable: while a transaction that committed a
// group's offsets is open or prepared, OffsetFetch with RequireStable
// answers UNSTABLE_OFFSET_COMMIT for those partitions (KIP-447), so a
// member taking a partition over never resumes from before that commit;
// once the transaction ends the offset is answered, committed or not.
func TestOffsetFetchRequireStable(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "stable", 2)
	const id, group = "stable-txn", "stable-group"

	commit := func(pid int64, epoch int16, off int64) {
		t.Helper()
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = id, group, pid, epoch, -1
		ot := kmsg.NewTxnOffsetCommitRequestTopic()
		ot.Topic = "stable"
		op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = 0, off
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		if err := kerr.ErrorForCode(txnRequest[*kmsg.TxnOffsetCommitResponse](t, cl, oc).Topics[0].Partitions[0].ErrorCode); err != nil {
			t.Fatalf("TxnOffsetCommit %d: %v", off, err)
		}
	}
	// fetch answers partitions 0 and 1 of the group.
	fetch := func(stable bool) (offs [2]int64, errs [2]error) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = group, stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "stable", []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		resp := txnRequest[*kmsg.OffsetFetchResponse](t, cl, req)
		if resp.Version < 8 {
			t.Fatalf("OffsetFetch at v%d, want v8+", resp.Version)
		}
		for _, p := range resp.Groups[0].Topics[0].Partitions {
			offs[p.Partition], errs[p.Partition] = p.Offset, kerr.ErrorForCode(p.ErrorCode)
		}
		return offs, errs
	}
	wantStable := func(what string, want int64) {
		t.Helper()
		offs, errs := fetch(true)
		if errs[0] != nil || offs[0] != want || errs[1] != nil || offs[1] != -1 {
			t.Fatalf("%s: RequireStable answers %v %v, want [%d -1] and no errors", what, offs, errs, want)
		}
	}
	wantUnstable := func(what string, was int64) {
		t.Helper()
		offs, errs := fetch(true)
		if !errors.Is(errs[0], kerr.UnstableOffsetCommit) || errs[1] != nil || offs[1] != -1 {
			t.Fatalf("%s: RequireStable answers %v %v, want UNSTABLE_OFFSET_COMMIT for partition 0 only", what, offs, errs)
		}
		if offs, errs := fetch(false); errs[0] != nil || offs[0] != was {
			t.Fatalf("%s: without RequireStable %d %v, want %d", what, offs[0], errs[0], was)
		}
	}

	pid, e0 := initTxnProducer(t, cl, id, 60000)
	commit(pid, e0, 42)
	wantUnstable("open transaction", -1)
	if err := endTxn(t, cl, 5, id, pid, e0, true); err != nil {
		t.Fatal(err)
	}
	wantStable("committed", 42)

	e1 := e0 + 1 // EndTxn v5 bumped it
	commit(pid, e1, 50)
	wantUnstable("second transaction", 42)
	if err := endTxn(t, cl, 5, id, pid, e1, false); err != nil {
		t.Fatal(err)
	}
	wantStable("aborted", 42)
}
