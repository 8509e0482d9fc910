package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/aerostream/aerostream/logstore/ring"
)

// txnRequest sends req on cl and fails the test on a transport error.
func txnRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Request(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// txnV1Client is a client held to the request versions of transactions
// v1 (EndTxn v4, produce v11, TxnOffsetCommit v4), whatever the gateway
// advertises: kgo sends a request at the highest version both serve.
func txnV1Client(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	vs.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	vs.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	return newClient(t, addr, kgo.MaxVersions(vs))
}

func initTxnProducer(t *testing.T, cl *kgo.Client, id string, timeoutMs int32) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
	var resp *kmsg.InitProducerIDResponse
	for i := 0; i < 200; i++ { // the coordinator answers COORDINATOR_LOAD_IN_PROGRESS while it loads
		resp = txnRequest[*kmsg.InitProducerIDResponse](t, cl, req)
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId %q: %v", id, err)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func addPartitions(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, topic string, parts ...int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := txnRequest[*kmsg.AddPartitionsToTxnResponse](t, cl, req)
	var codes []int16
	for _, p := range resp.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

func endTxn(t *testing.T, cl *kgo.Client, version int16, id string, pid int64, epoch int16, commit bool) error {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return kerr.ErrorForCode(txnRequest[*kmsg.EndTxnResponse](t, cl, req).ErrorCode)
}

// txnBatch is an uncompressed transactional batch of values.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	recs := make([]record, len(values))
	for i, v := range values {
		recs[i] = record{value: []byte(v)}
	}
	b := appendBatch(nil, time.Now().UnixMilli(), recs)
	binary.BigEndian.PutUint16(b[21:], 0x10)
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32c))
	return b
}

// committedRead reads a partition under read_committed, as a consumer
// would, dropping aborted records, and returns the values and the LSO.
func committedRead(t *testing.T, b ring.Backend, topic string, iso int8) ([]string, int64) {
	t.Helper()
	res, err := b.Fetch(context.Background(), &ring.FetchRequest{IsolationLevel: iso,
		Partitions: []ring.FetchPartition{{Topic: topic, Partition: 0, Offset: 0, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	pr := res.Partitions[0]
	if pr.Err != nil {
		t.Fatal(pr.Err)
	}
	data, err := pr.Records.ReadAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	aborted := func(pid, off int64) bool {
		for _, a := range pr.AbortedTransactions {
			if a.ProducerID == pid && off >= a.FirstOffset && off <= a.LastOffset {
				return true
			}
		}
		return false
	}
	var out []string
	for len(data) >= 61 {
		n := 12 + int(binary.BigEndian.Uint32(data[8:]))
		if n > len(data) {
			break
		}
		batch := data[:n]
		data = data[n:]
		pid := int64(binary.BigEndian.Uint64(batch[43:]))
		base := int64(binary.BigEndian.Uint64(batch))
		if binary.BigEndian.Uint16(batch[21:])&0x20 != 0 || iso == ring.ReadCommitted && aborted(pid, base) {
			continue
		}
		if _, err := readBatches(batch, func(_ batchInfo, r record) error {
			out = append(out, string(r.value))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out, pr.LastStableOffset
}

func produceRaw(t *testing.T, b ring.Backend, topic string, batch []byte) error {
	t.Helper()
	_, err := b.Produce(context.Background(), &ring.ProduceRequest{Topic: topic, Partition: 0, Acks: -1, Records: batch})
	return err
}

// TestTxnCoordinatorStateMachine drives one transactional id through
// commit, abort, fencing and the bad inputs of issue 27, with raw
// requests, and checks what read_committed sees after each step.
func TestTxnCoordinatorStateMachine(t *testing.T) {
	e := newTestEnv(t)
	cl := txnV1Client(t, e.addr)
	createTopic(t, cl, "txn-sm", 1)
	const id = "sm"

	pid, epoch := initTxnProducer(t, cl, id, 60000)
	if codes := addPartitions(t, cl, id, pid, epoch, "txn-sm", 0); codes[0] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(codes[0]))
	}
	if err := produceRaw(t, e.backend, "txn-sm", txnBatch(pid, epoch, 0, "a1", "a2")); err != nil {
		t.Fatal(err)
	}
	if got, lso := committedRead(t, e.backend, "txn-sm", ring.ReadCommitted); len(got) != 0 || lso != 0 {
		t.Fatalf("open transaction visible to read_committed: %v, lso %d", got, lso)
	}
	if err := endTxn(t, cl, 3, id, pid, epoch, true); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got, _ := committedRead(t, e.backend, "txn-sm", ring.ReadCommitted); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("after commit read_committed sees %v", got)
	}
	// A retried commit succeeds; an abort of the committed one is refused.
	if err := endTxn(t, cl, 3, id, pid, epoch, true); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	if err := endTxn(t, cl, 3, id, pid, epoch, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}

	// An aborted transaction is dropped by read_committed, kept by
	// read_uncommitted.
	addPartitions(t, cl, id, pid, epoch, "txn-sm", 0)
	if err := produceRaw(t, e.backend, "txn-sm", txnBatch(pid, epoch, 2, "b1")); err != nil {
		t.Fatal(err)
	}
	if err := endTxn(t, cl, 3, id, pid, epoch, false); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if got, _ := committedRead(t, e.backend, "txn-sm", ring.ReadCommitted); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("after abort read_committed sees %v", got)
	}
	if got, _ := committedRead(t, e.backend, "txn-sm", ring.ReadUncommitted); !slices.Equal(got, []string{"a1", "a2", "b1"}) {
		t.Fatalf("after abort read_uncommitted sees %v", got)
	}

	// Bad input: another producer id, a control batch from a client, a
	// partition of an unknown topic, offsets for a group not in the
	// transaction, a commit with nothing open.
	addPartitions(t, cl, id, pid, epoch, "txn-sm", 0)
	if err := endTxn(t, cl, 3, id, pid+1, epoch, true); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("EndTxn with another producer id: %v", err)
	}
	codes := addPartitions(t, cl, id, pid, epoch, "no-such-topic", 0)
	if codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn unknown topic: %v", kerr.ErrorForCode(codes[0]))
	}
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.Version = 3
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = id, "g-not-added", pid, epoch, -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "txn-sm"
	tp0 := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp0.Offset = 1
	tt.Partitions = append(tt.Partitions, tp0)
	toc.Topics = append(toc.Topics, tt)
	tocResp := txnRequest[*kmsg.TxnOffsetCommitResponse](t, cl, toc)
	if c := tocResp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidTxnState.Code {
		t.Fatalf("TxnOffsetCommit for a group not in the transaction: %v", kerr.ErrorForCode(c))
	}
	if err := endTxn(t, cl, 3, id, pid, epoch, true); err != nil {
		t.Fatalf("commit of an empty but open transaction: %v", err)
	}
	if err := endTxn(t, cl, 3, id, pid, epoch, true); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	preq := kmsg.NewPtrProduceRequest()
	ctrl := txnBatch(pid, epoch, 3, "x")
	binary.BigEndian.PutUint16(ctrl[21:], 0x30)
	binary.BigEndian.PutUint32(ctrl[17:], crc32.Checksum(ctrl[21:], crc32c))
	preq.Version, preq.Acks, preq.TimeoutMillis = 12, -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "txn-sm"
	if tt, err := e.cluster.Topic(context.Background(), "txn-sm"); err == nil {
		pt.TopicID = tt.ID // kgo sends the newest version, which names topics by id
	}
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = ctrl
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	presp := txnRequest[*kmsg.ProduceResponse](t, cl, preq)
	if c := presp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRecord.Code {
		t.Fatalf("client control batch: %v", kerr.ErrorForCode(c))
	}

	// Fencing: a second InitProducerId bumps the epoch, aborting the open
	// transaction; the old producer is fenced at the coordinator and in
	// the partition.
	addPartitions(t, cl, id, pid, epoch, "txn-sm", 0)
	if err := produceRaw(t, e.backend, "txn-sm", txnBatch(pid, epoch, 3, "c1")); err != nil {
		t.Fatal(err)
	}
	pid2, epoch2 := initTxnProducer(t, cl, id, 60000)
	if pid2 != pid || epoch2 <= epoch {
		t.Fatalf("re-init: producer %d epoch %d, want %d and above %d", pid2, epoch2, pid, epoch)
	}
	if err := endTxn(t, cl, 3, id, pid, epoch, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("EndTxn v3 with the fenced epoch: %v", err)
	}
	// Before the versions that know PRODUCER_FENCED (kgo always sends the
	// newest, so checked here rather than over the wire).
	if err := fenced(1, 2, "old"); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("EndTxn v1 with the fenced epoch: %v", err)
	}
	if err := produceRaw(t, e.backend, "txn-sm", txnBatch(pid, epoch, 4, "zombie")); !errors.Is(err, ring.ErrInvalidProducerEpoch) {
		t.Fatalf("produce with the fenced epoch: %v", err)
	}
	if got, lso := committedRead(t, e.backend, "txn-sm", ring.ReadCommitted); !slices.Equal(got, []string{"a1", "a2"}) || lso < 0 {
		t.Fatalf("after fencing read_committed sees %v (lso %d)", got, lso)
	}

	// DescribeTransactions and ListTransactions see the id.
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{id, "never-seen"}
	dresp := txnRequest[*kmsg.DescribeTransactionsResponse](t, cl, dreq)
	if s := dresp.TransactionStates[0]; s.ErrorCode != 0 || s.State != "Empty" || s.ProducerEpoch != epoch2 {
		t.Fatalf("describe: %+v", s)
	}
	if c := dresp.TransactionStates[1].ErrorCode; c != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe unknown id: %v", kerr.ErrorForCode(c))
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lresp := txnRequest[*kmsg.ListTransactionsResponse](t, cl, lreq)
	if len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != id {
		t.Fatalf("list: %+v", lresp.TransactionStates)
	}
}

// TestTxnTimeoutAndRecovery: an open transaction past its timeout is
// aborted with the epoch bumped; a transaction left in PrepareCommit by a
// coordinator that stopped is completed when it starts again.
func TestTxnTimeoutAndRecovery(t *testing.T) {
	e := newTestEnv(t)
	cl := txnV1Client(t, e.addr)
	createTopic(t, cl, "txn-rec", 1)

	pid, epoch := initTxnProducer(t, cl, "slow", 1000)
	addPartitions(t, cl, "slow", pid, epoch, "txn-rec", 0)
	if err := produceRaw(t, e.backend, "txn-rec", txnBatch(pid, epoch, 0, "late")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the timed-out transaction to be aborted", func() bool {
		_, lso := committedRead(t, e.backend, "txn-rec", ring.ReadCommitted)
		return lso > 0
	})
	if got, _ := committedRead(t, e.backend, "txn-rec", ring.ReadCommitted); len(got) != 0 {
		t.Fatalf("timed-out transaction visible: %v", got)
	}
	if err := endTxn(t, cl, 3, "slow", pid, epoch, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("commit after the timeout: %v", err)
	}

	// A prepared commit whose markers were never written, as a crash
	// right after the decision leaves it.
	pid, epoch = initTxnProducer(t, cl, "crash", 60000)
	addPartitions(t, cl, "crash", pid, epoch, "txn-rec", 0)
	if err := produceRaw(t, e.backend, "txn-rec", txnBatch(pid, epoch, 0, "kept")); err != nil {
		t.Fatal(err)
	}
	e.stopGateway()
	v := txnView{pid: pid, epoch: epoch, timeout: time.Minute, state: txnPrepareCommit,
		parts: map[tp]struct{}{{"txn-rec", 0}: {}}, start: time.Now().UnixMilli(), updated: time.Now().UnixMilli()}
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = "crash"
	if _, err := e.backend.Produce(context.Background(), &ring.ProduceRequest{Topic: txnStateTopic, Partition: javaHashPartition("crash", 4), Acks: -1,
		Records: appendBatch(nil, time.Now().UnixMilli(), []record{{key: k.AppendTo(nil), value: txnValue(&v)}})}); err != nil {
		t.Fatal(err)
	}
	if got, _ := committedRead(t, e.backend, "txn-rec", ring.ReadCommitted); len(got) != 0 {
		t.Fatalf("prepared transaction visible before recovery: %v", got)
	}
	e.start()
	waitFor(t, "the prepared commit to complete after the restart", func() bool {
		got, _ := committedRead(t, e.backend, "txn-rec", ring.ReadCommitted)
		return slices.Equal(got, []string{"kept"})
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTxnFranzGoReadCommitted: franz-go's transactional producer (commit,
// abort, commit) and consumers at both isolation levels.
func TestTxnFranzGoReadCommitted(t *testing.T) {
	e := newTestEnv(t)
	admin := newClient(t, e.addr)
	createTopic(t, admin, "txn-kgo", 2)
	p := newClient(t, e.addr, kgo.TransactionalID("kgo-txn"), kgo.DefaultProduceTopic("txn-kgo"))
	ctx := context.Background()
	for i, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			if err := p.ProduceSync(ctx, kgo.StringRecord(string(rune('a'+i))+string(rune('0'+j)))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("EndTransaction(%v): %v", commit, err)
		}
	}
	count := func(iso kgo.IsolationLevel) int {
		c := newClient(t, e.addr, kgo.ConsumeTopics("txn-kgo"), kgo.FetchIsolationLevel(iso),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		n := 0
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := c.PollFetches(fctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				if iso == kgo.ReadCommitted() && r.Value[0] == 'b' {
					t.Errorf("read_committed got aborted record %s", r.Value)
				}
				n++
			})
			if n >= 30 || (iso == kgo.ReadCommitted() && n >= 20) {
				break
			}
		}
		return n
	}
	if n := count(kgo.ReadCommitted()); n != 20 {
		t.Fatalf("read_committed consumed %d records, want 20", n)
	}
	if n := count(kgo.ReadUncommitted()); n != 30 {
		t.Fatalf("read_uncommitted consumed %d records, want 30", n)
	}
}

func FuzzTxnStateRecords(f *testing.F) {
	v := txnView{pid: 5, epoch: 2, timeout: time.Second, state: txnOngoing, parts: map[tp]struct{}{{"t", 1}: {}}}
	f.Add([]byte{0, 100}, txnValue(&v))
	r := encodeTxnOffsets("id", &txnPending{group: "g", pid: 1, epoch: 0, offs: map[tp]committed{{"t", 0}: {offset: 9, metadata: "m"}}})
	f.Add(r.key, r.value)
	r = encodeTxnAdd("id", txnAdd{pid: 3, epoch: 1, p: tp{"t", 2}, ts: 1700000000000})
	f.Add(r.key, r.value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if id, a, err := decodeTxnAdd(key, value); err == nil {
			again := encodeTxnAdd(id, a)
			if id2, b, err := decodeTxnAdd(again.key, again.value); err != nil || id2 != id || b != a {
				t.Fatalf("re-encoded add: %q %+v, was %q %+v (%v)", id2, b, id, a, err)
			}
		}
		if v, err := decodeTxnValue(value); err == nil {
			if _, err := decodeTxnValue(txnValue(&v)); err != nil {
				t.Fatalf("re-encoded state does not decode: %v", err)
			}
		}
		if p, err := decodeTxnOffsets(key, value); err == nil {
			again := encodeTxnOffsets(p.id, &p.txnPending)
			if q, err := decodeTxnOffsets(again.key, again.value); err != nil || len(q.offs) != len(p.offs) {
				t.Fatalf("re-encoded offsets: %v", err)
			}
		}
	})
}

// TestProduceVerifiesTxnPartition: KIP-890's verification, as Kafka 4's
// partition leader applies it. A transactional batch for a partition not
// added to the producer's open transaction is refused
// (TRANSACTION_ABORTABLE, INVALID_TXN_STATE before produce v11) and not
// written; so is a late batch after the transaction ended, the case that
// left hanging transactions before KIP-890. A fenced epoch is
// INVALID_PRODUCER_EPOCH and an unknown id INVALID_PRODUCER_ID_MAPPING;
// AddPartitionsToTxn's VerifyOnly answers as the coordinator does.
func TestProduceVerifiesTxnPartition(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := txnV1Client(t, e.addr)
	createTopic(t, cl, "txn-verify", 2)
	const id = "verify"
	pid, epoch := initTxnProducer(t, cl, id, 60000)
	topic, err := e.cluster.Topic(ctx, "txn-verify")
	if err != nil {
		t.Fatal(err)
	}
	produce := func(cl *kgo.Client, txnID string, part int32, batch []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &txnID, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "txn-verify", topic.ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	want := func(what string, sp kmsg.ProduceResponseTopicPartition, code *kerr.Error) {
		t.Helper()
		if got := kerr.ErrorForCode(sp.ErrorCode); got != code && (code != nil || got != nil) {
			t.Fatalf("%s: %v, want %v", what, got, code)
		}
	}
	logEnd := func(part int32) int64 {
		t.Helper()
		info, err := e.store.DescribePartition(ctx, "txn-verify", part)
		if err != nil {
			t.Fatal(err)
		}
		return info.LogEndOffset
	}

	want("partition never added", produce(cl, id, 0, txnBatch(pid, epoch, 0, "x")), kerr.TransactionAbortable)
	vs := kversion.V4_0_0()
	vs.SetMaxKeyVersion(0, 10)
	v10 := newClient(t, e.addr, kgo.MaxVersions(vs))
	want("partition never added, produce v10", produce(v10, id, 0, txnBatch(pid, epoch, 0, "x")), kerr.InvalidTxnState)
	if n := logEnd(0); n != 0 {
		t.Fatalf("refused batches wrote %d records", n)
	}

	if codes := addPartitions(t, cl, id, pid, epoch, "txn-verify", 0); codes[0] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(codes[0]))
	}
	want("added partition", produce(cl, id, 0, txnBatch(pid, epoch, 0, "a")), nil)
	want("the other partition", produce(cl, id, 1, txnBatch(pid, epoch, 0, "b")), kerr.TransactionAbortable)
	want("fenced epoch", produce(cl, id, 0, txnBatch(pid, epoch+1, 0, "c")), kerr.InvalidProducerEpoch)
	want("unknown transactional id", produce(cl, "no-such-id", 0, txnBatch(pid, epoch, 1, "d")), kerr.InvalidProducerIDMapping)

	vreq := kmsg.NewPtrAddPartitionsToTxnRequest()
	vtx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vtx.TransactionalID, vtx.ProducerID, vtx.ProducerEpoch, vtx.VerifyOnly = id, pid, epoch, true
	vt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	vt.Topic, vt.Partitions = "txn-verify", []int32{0, 1}
	vtx.Topics = append(vtx.Topics, vt)
	vreq.Transactions = append(vreq.Transactions, vtx)
	vresp := txnRequest[*kmsg.AddPartitionsToTxnResponse](t, cl, vreq)
	if ps := vresp.Transactions[0].Topics[0].Partitions; ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("VerifyOnly answered %+v", ps)
	}

	if err := endTxn(t, cl, 3, id, pid, epoch, true); err != nil {
		t.Fatalf("commit: %v", err)
	}
	before := logEnd(0)
	want("late batch after the commit", produce(cl, id, 0, txnBatch(pid, epoch, 1, "late")), kerr.TransactionAbortable)
	if n := logEnd(0); n != before {
		t.Fatalf("late batch written: log end %d, was %d", n, before)
	}
	if got, lso := committedRead(t, e.backend, "txn-verify", ring.ReadCommitted); !slices.Equal(got, []string{"a"}) || lso != before {
		t.Fatalf("read_committed sees %v, lso %d (log end %d)", got, lso, before)
	}
}

// TestTxnIDExpiration: an id at rest for transactional.id.expiration.ms
// is removed with a tombstone in __transaction_state: DescribeTransactions
// no longer finds it, a restarted coordinator does not bring it back, and
// InitProducerId starts it afresh with a new producer id. An id idle for
// less stays, and so does one in the middle of a transaction.
func TestTxnIDExpiration(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "txn-exp", 1)

	pid, epoch := initTxnProducer(t, cl, "idle", 60000)
	addPartitions(t, cl, "idle", pid, epoch, "txn-exp", 0)
	if err := endTxn(t, cl, 3, "idle", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	describe := func(id string) int16 {
		t.Helper()
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		return txnRequest[*kmsg.DescribeTransactionsResponse](t, cl, req).TransactionStates[0].ErrorCode
	}

	e.gw.txns.tick(ctx, time.Now().Add(defaultTxnIDExpiration-time.Hour))
	if c := describe("idle"); c != 0 {
		t.Fatalf("id idle for less than the expiration: %v", kerr.ErrorForCode(c))
	}
	e.gw.txns.tick(ctx, time.Now().Add(defaultTxnIDExpiration+time.Minute))
	if c := describe("idle"); c != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("expired id described: %v", kerr.ErrorForCode(c))
	}
	// Only an id at rest expires (an open transaction times out first).
	for _, st := range []txnStatus{txnOngoing, txnPrepareCommit, txnPrepareAbort, txnPrepareEpochFence} {
		if expired(&txnView{pid: 1, state: st}, time.Now(), time.Millisecond) {
			t.Fatalf("an id in %v expired", st)
		}
	}

	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	waitFor(t, "the restarted coordinator to load", func() bool {
		return describe("idle") != kerr.CoordinatorLoadInProgress.Code
	})
	if c := describe("idle"); c != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("expired id back after a restart: %v", kerr.ErrorForCode(c))
	}
	if newPid, _ := initTxnProducer(t, cl, "idle", 60000); newPid == pid {
		t.Fatalf("expired id kept producer id %d", pid)
	}
}

// TestTxnIDExpirationConfigured: Options.TransactionalIDExpiration
// (transactional.id.expiration.ms) replaces the 7-day default, on the
// coordinator's clock as the background loop passes it.
func TestTxnIDExpirationConfigured(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.TransactionalIDExpiration = time.Minute })
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "txn-exp-cfg", 1)

	pid, epoch := initTxnProducer(t, cl, "short", 60000)
	addPartitions(t, cl, "short", pid, epoch, "txn-exp-cfg", 0)
	if err := endTxn(t, cl, 3, "short", pid, epoch, false); err != nil {
		t.Fatal(err)
	}
	describe := func() int16 {
		t.Helper()
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"short"}
		return txnRequest[*kmsg.DescribeTransactionsResponse](t, cl, req).TransactionStates[0].ErrorCode
	}
	e.gw.txns.tick(ctx, time.Now().Add(30*time.Second))
	if c := describe(); c != 0 {
		t.Fatalf("id idle for half the expiration: %v", kerr.ErrorForCode(c))
	}
	e.gw.txns.tick(ctx, time.Now().Add(2*time.Minute))
	if c := describe(); c != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("id idle for twice the configured expiration still described: %v", kerr.ErrorForCode(c))
	}
}

// TestTxnV2ImplicitAdd: transactions v2 (KIP-890 part 2) as a Kafka 4
// client runs them. ApiVersions finalizes transaction.version 2; a
// produce v12+ adds its partition to the transaction with no
// AddPartitionsToTxn and TxnOffsetCommit v5 its group with no
// AddOffsetsToTxn; every EndTxn v5 bumps the epoch and answers it, a retry
// at the epoch below is answered the same, the old epoch is fenced in the
// partitions, and an abort with nothing open bumps the epoch too.
func TestTxnV2ImplicitAdd(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "txn-v2", 1)
	const id = "v2"

	av := txnRequest[*kmsg.ApiVersionsResponse](t, cl, kmsg.NewPtrApiVersionsRequest())
	finalized := int16(-1)
	for _, f := range av.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = f.MaxVersionLevel
		}
	}
	if finalized != 2 || av.FinalizedFeaturesEpoch < 0 {
		t.Fatalf("transaction.version finalized at %d (epoch %d), want 2", finalized, av.FinalizedFeaturesEpoch)
	}

	topic, err := e.cluster.Topic(ctx, "txn-v2")
	if err != nil {
		t.Fatal(err)
	}
	produce := func(batch []byte) error {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version = 12
		txnID := id
		req.TransactionID, req.Acks, req.TimeoutMillis = &txnID, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "txn-v2", topic.ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	end := func(pid int64, epoch int16, commit bool) (int64, int16, error) {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		resp := txnRequest[*kmsg.EndTxnResponse](t, cl, req)
		if resp.Version < 5 {
			t.Fatalf("EndTxn at v%d, want v5", resp.Version)
		}
		return resp.ProducerID, resp.ProducerEpoch, kerr.ErrorForCode(resp.ErrorCode)
	}
	state := func() kmsg.DescribeTransactionsResponseTransactionState {
		t.Helper()
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		return txnRequest[*kmsg.DescribeTransactionsResponse](t, cl, req).TransactionStates[0]
	}

	pid, e0 := initTxnProducer(t, cl, id, 60000)
	if err := produce(txnBatch(pid, e0, 0, "a1", "a2")); err != nil {
		t.Fatalf("produce with no AddPartitionsToTxn: %v", err)
	}
	if st := state(); st.State != "Ongoing" || len(st.Topics) != 1 || st.Topics[0].Topic != "txn-v2" {
		t.Fatalf("after an implicit add: %s %+v", st.State, st.Topics)
	}
	if got, lso := committedRead(t, e.backend, "txn-v2", ring.ReadCommitted); len(got) != 0 || lso != 0 {
		t.Fatalf("open transaction visible to read_committed: %v, lso %d", got, lso)
	}
	gotPid, e1, err := end(pid, e0, true)
	if err != nil || gotPid != pid || e1 != e0+1 {
		t.Fatalf("commit: pid %d epoch %d, %v; want pid %d epoch %d", gotPid, e1, err, pid, e0+1)
	}
	if got, _ := committedRead(t, e.backend, "txn-v2", ring.ReadCommitted); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("after commit read_committed sees %v", got)
	}
	if _, again, err := end(pid, e0, true); err != nil || again != e1 {
		t.Fatalf("retried commit: epoch %d, %v", again, err)
	}
	if _, _, err := end(pid, e0, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort after the commit, at the old epoch: %v", err)
	}

	// The next transaction runs at the bumped epoch, its sequences from 0;
	// the old epoch is fenced in the partition.
	if err := produce(txnBatch(pid, e0, 2, "late")); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("produce at the old epoch: %v", err)
	}
	if err := produce(txnBatch(pid, e1, 0, "b1")); err != nil {
		t.Fatalf("produce at the bumped epoch: %v", err)
	}
	// Offsets without AddOffsetsToTxn (TxnOffsetCommit v5).
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch = id, "v2-group", pid, e1
	oc.Generation = -1
	ot := kmsg.NewTxnOffsetCommitRequestTopic()
	ot.Topic = "txn-v2"
	op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset = 0, 42
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	ocResp := txnRequest[*kmsg.TxnOffsetCommitResponse](t, cl, oc)
	if ocResp.Version < 5 {
		t.Fatalf("TxnOffsetCommit at v%d, want v5", ocResp.Version)
	}
	if err := kerr.ErrorForCode(ocResp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("TxnOffsetCommit v5 with no AddOffsetsToTxn: %v", err)
	}
	_, e2, err := end(pid, e1, false)
	if err != nil || e2 != e1+1 {
		t.Fatalf("abort: epoch %d, %v; want %d", e2, err, e1+1)
	}
	if got, _ := committedRead(t, e.backend, "txn-v2", ring.ReadCommitted); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("after the abort read_committed sees %v", got)
	}
	fetchOffset := func() int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "v2-group"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "txn-v2", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := txnRequest[*kmsg.OffsetFetchResponse](t, cl, req)
		if len(resp.Groups) > 0 {
			return resp.Groups[0].Topics[0].Partitions[0].Offset
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	if off := fetchOffset(); off != -1 {
		t.Fatalf("aborted transaction's offset committed: %d", off)
	}

	// An abort with nothing open moves to a fresh epoch; then a
	// transaction of offsets only commits them.
	_, e3, err := end(pid, e2, false)
	if err != nil || e3 != e2+1 {
		t.Fatalf("empty abort: epoch %d, %v; want %d", e3, err, e2+1)
	}
	oc.ProducerEpoch = e3
	if err := kerr.ErrorForCode(txnRequest[*kmsg.TxnOffsetCommitResponse](t, cl, oc).Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	if _, _, err := end(pid, e3, true); err != nil {
		t.Fatalf("commit of offsets only: %v", err)
	}
	if off := fetchOffset(); off != 42 {
		t.Fatalf("committed offset %d, want 42", off)
	}
}

// TestTxnV2ImplicitAddTimesOut: a transaction opened only by a produce's
// implicit add is aborted once transaction.timeout.ms has passed, with
// the epoch bumped, like one opened with AddPartitionsToTxn.
func TestTxnV2ImplicitAddTimesOut(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "txn-v2-timeout", 1)
	pid, epoch := initTxnProducer(t, cl, "v2-timeout", 1000)
	if err := e.gw.txns.addImplicit(ctx, "v2-timeout", pid, epoch, tp{"txn-v2-timeout", 0}); err != nil {
		t.Fatal(err)
	}
	if err := produceRaw(t, e.backend, "txn-v2-timeout", txnBatch(pid, epoch, 0, "x")); err != nil {
		t.Fatal(err)
	}
	e.gw.txns.tick(ctx, time.Now().Add(time.Minute))
	v, ok, err := e.gw.txns.describe(ctx, "v2-timeout")
	if err != nil || !ok || v.state != txnCompleteAbort || v.epoch != epoch+1 {
		t.Fatalf("after the timeout: %v epoch %d (%v, %v), want CompleteAbort at epoch %d", v.state, v.epoch, ok, err, epoch+1)
	}
	if got, lso := committedRead(t, e.backend, "txn-v2-timeout", ring.ReadCommitted); len(got) != 0 || lso != 2 {
		t.Fatalf("timed-out transaction: read_committed sees %v, lso %d", got, lso)
	}
}
