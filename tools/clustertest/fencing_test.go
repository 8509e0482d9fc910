package clustertest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore/ring"
)

const (
	fencedTopic   = "fenced"
	fencedBefore  = 40 // records written while the paused store leads
	fencedAfter   = 40 // records written to its successor
	fencedReaders = 4  // readers of each kind aimed at the paused store
)

// TestClusterFencedLeaderServesNoStaleRead pauses the leader of a
// partition with SIGSTOP, lets its successor take writes, and has reads
// queued at the paused store's ring when it resumes: the store still
// believes it leads, with the old, shorter log, until the controller's
// view reaches it, so only its lease keeps it from answering as if that log
// were current. Every answer must be an error or show the successor's
// writes, and the store must rejoin as an in-sync follower with the full
// log.
func TestClusterFencedLeaderServesNoStaleRead(t *testing.T) {
	bin := gate(t)
	c := newCluster(t, bin, storeIDs, gatewayIDs)
	c.createTopic(fencedTopic, 1, 3, 2)

	cl := c.kgoClient(gatewayIDs[0], append(producerOpts(fencedTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	defer cl.Close()
	want := map[int64]string{} // offset -> value of every acknowledged record
	produce := func(prefix string, n int) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
			}
			want[r.Record.Offset] = string(r.Record.Value)
		}
	}
	produce("before", fencedBefore)

	md := c.mustMetadata()
	p0, ok := partition0(md, fencedTopic)
	if !ok {
		t.Fatalf("%s/0 not in the controller's metadata", fencedTopic)
	}
	old, oldEpoch := p0.Leader, p0.LeaderEpoch
	addr := ringAddr(md, old)
	if addr == "" || c.stores[old] == nil {
		t.Fatalf("leader %d of %s/0 is not one of our stores with a ring address (%q)", old, fencedTopic, addr)
	}
	t.Logf("%s/0: leader store %d at epoch %d, replicas %v, isr %v; its ring at %s", fencedTopic, old, oldEpoch, p0.Replicas, p0.ISR, addr)

	// Dial before the pause: Dial asks the store for its ring layout.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	rc, err := ring.Dial(dctx, addr, ring.DialOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	dcancel()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	// The store answers directly while it leads: the reads below are ones
	// it serves, not ones the ring refuses for another reason.
	{
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		o, err := rc.ListOffsets(ctx, fencedTopic, 0, ring.TimestampLatest)
		cancel()
		if err != nil || o.Offset != fencedBefore {
			t.Fatalf("ListOffsets latest on the leader store %d before the pause: offset %d, err %v; want %d", old, o.Offset, err, fencedBefore)
		}
	}

	s := c.stores[old]
	paused := time.Now()
	s.signal(syscall.SIGSTOP)
	var successor int32
	c.waitFor(fmt.Sprintf("another store to lead %s/0 at an epoch above %d", fencedTopic, oldEpoch), 20*time.Second, func() (bool, string) {
		md, err := c.metadata()
		if err != nil {
			return false, err.Error()
		}
		p, _ := partition0(md, fencedTopic)
		successor = p.Leader
		return p.Leader >= 0 && p.Leader != old && p.LeaderEpoch > oldEpoch,
			fmt.Sprintf("leader %d epoch %d isr %v", p.Leader, p.LeaderEpoch, p.ISR)
	})
	t.Logf("store %d leads %s/0 %v after the pause", successor, fencedTopic, time.Since(paused).Round(time.Millisecond))
	produce("after", fencedAfter)
	total := int64(fencedBefore + fencedAfter)
	for o := range total {
		if _, ok := want[o]; !ok {
			t.Fatalf("the acknowledged offsets are not 0..%d: %d is missing", total-1, o)
		}
	}

	// Readers send consumer fetches from offset 0 and ListOffsets latest
	// to the paused store, over and over, until it has rejoined; the first
	// ones are in flight when it resumes, so they are served before the
	// store can have heard from the controller.
	rctx, rstop := context.WithCancel(context.Background())
	defer rstop()
	var (
		started  atomic.Int32
		mu       sync.Mutex
		stale    []string
		notLead  int
		fresh    int
		otherErr = map[string]int{}
		wg       sync.WaitGroup
	)
	note := func(staleMsg string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case staleMsg != "":
			stale = append(stale, staleMsg)
		case err == nil:
			fresh++
		case errors.Is(err, ring.ErrNotLeader):
			notLead++
		default:
			otherErr[err.Error()]++
		}
	}
	read := func(kind string, once func(ctx context.Context) (string, error)) {
		defer wg.Done()
		for first := true; rctx.Err() == nil; first = false {
			if first {
				started.Add(1)
			}
			ctx, cancel := context.WithTimeout(rctx, 20*time.Second)
			msg, err := once(ctx)
			cancel()
			if rctx.Err() != nil {
				return
			}
			if msg != "" {
				msg = kind + ": " + msg
			}
			note(msg, err)
			// A little room between reads, so that a store answering
			// at once does not take the shared machine's CPU.
			select {
			case <-rctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	fetch := func(ctx context.Context) (string, error) {
		res, err := rc.Fetch(ctx, &ring.FetchRequest{
			Partitions: []ring.FetchPartition{{Topic: fencedTopic, Partition: 0, Offset: 0, MaxBytes: 1 << 20}},
			MaxBytes:   1 << 20, MaxWait: 100 * time.Millisecond,
		})
		if err != nil {
			return "", err
		}
		defer res.Release()
		pr := res.Partitions[0]
		if pr.Err != nil {
			return "", pr.Err
		}
		b, err := pr.Records.ReadAll(nil)
		if err != nil {
			return "", err
		}
		return checkFetched(b, pr.HighWatermark, total, want), nil
	}
	listLatest := func(ctx context.Context) (string, error) {
		o, err := rc.ListOffsets(ctx, fencedTopic, 0, ring.TimestampLatest)
		if err != nil {
			return "", err
		}
		if o.Offset < total {
			return fmt.Sprintf("latest offset %d, the successor's log ends at %d", o.Offset, total), nil
		}
		return "", nil
	}
	for range fencedReaders {
		wg.Add(2)
		go read("fetch", fetch)
		go read("list offsets", listLatest)
	}
	c.waitFor("every reader to have sent its first request", 10*time.Second, func() (bool, string) {
		n := started.Load()
		return n == 2*fencedReaders, fmt.Sprintf("%d of %d", n, 2*fencedReaders)
	})
	s.signal(syscall.SIGCONT)
	resumed := time.Now()

	// The store rejoins: in the ISR again, with the whole log.
	c.waitFor(fmt.Sprintf("store %d to rejoin %s/0's ISR with the whole log", old, fencedTopic), 30*time.Second, func() (bool, string) {
		md, err := c.metadata()
		if err != nil {
			return false, err.Error()
		}
		p, _ := partition0(md, fencedTopic)
		seen := fmt.Sprintf("leader %d epoch %d isr %v", p.Leader, p.LeaderEpoch, p.ISR)
		if !slices.Contains(p.ISR, old) || len(p.ISR) != 3 {
			return false, seen
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		info, err := rc.DescribePartition(ctx, fencedTopic, 0)
		if err != nil {
			return false, seen + "; describe: " + err.Error()
		}
		return info.LogEndOffset >= total, fmt.Sprintf("%s; store %d log end %d of %d", seen, old, info.LogEndOffset, total)
	})
	rstop()
	wg.Wait()
	t.Logf("store %d rejoined %v after SIGCONT; answers after it resumed: %d not leader, %d with the successor's log, other errors %v",
		old, time.Since(resumed).Round(time.Millisecond), notLead, fresh, otherErr)
	if len(stale) > 0 {
		t.Errorf("the fenced leader %d answered %d reads with its old log as if it were current; first ones:\n  %s",
			old, len(stale), joinLines(stale[:min(len(stale), 10)]))
	}
	if notLead+fresh+len(stale) == 0 {
		t.Errorf("store %d never answered a read after it resumed, so nothing was checked (other errors: %v)", old, otherErr)
	}
}

// partition0 is partition 0 of topic in md.
func partition0(md controller.MetadataResponse, topic string) (controller.PartitionInfo, bool) {
	ti, _ := findTopic(md, topic)
	for _, p := range ti.Partitions {
		if p.Partition == 0 {
			return p, true
		}
	}
	return controller.PartitionInfo{}, false
}

// ringAddr is a store's ring address in md.
func ringAddr(md controller.MetadataResponse, id int32) string {
	for _, n := range md.Nodes {
		if n.ID == id && n.Kind == controller.KindStore {
			if a := n.Addresses["ring"]; a != "" {
				return a
			}
			return n.Ring.Address
		}
	}
	return ""
}

// checkFetched judges a consumer fetch answer from offset 0: it describes
// what makes it stale or wrong ("" when it shows the whole log of total
// records with the acknowledged values).
func checkFetched(b []byte, hw, total int64, want map[int64]string) string {
	if hw < total {
		return fmt.Sprintf("high watermark %d, the successor's log ends at %d", hw, total)
	}
	recs, err := decodeBatches(b)
	if err != nil {
		return err.Error()
	}
	next := int64(0)
	for _, r := range recs {
		if w, ok := want[r.offset]; ok && w != r.value {
			return fmt.Sprintf("offset %d holds %q, %q was acknowledged there", r.offset, r.value, w)
		}
		next = max(next, r.offset+1)
	}
	if next < total {
		return fmt.Sprintf("records end at offset %d (high watermark %d), the successor's log ends at %d", next, hw, total)
	}
	return ""
}

type fetchedRecord struct {
	offset int64
	value  string
}

// decodeBatches reads uncompressed RecordBatch v2 bytes into records. A
// trailing partial batch (a fetch cut at MaxBytes) is ignored.
func decodeBatches(b []byte) ([]fetchedRecord, error) {
	var out []fetchedRecord
	for len(b) >= 61 {
		base := int64(binary.BigEndian.Uint64(b[0:]))
		size := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if size < 61 || size > len(b) {
			break
		}
		batch := b[:size]
		b = b[size:]
		if batch[16] != 2 {
			return nil, fmt.Errorf("batch at %d: magic %d", base, batch[16])
		}
		if attrs := binary.BigEndian.Uint16(batch[21:]); attrs&0x7 != 0 {
			return nil, fmt.Errorf("batch at %d is compressed (attributes %#x)", base, attrs)
		}
		n := int(binary.BigEndian.Uint32(batch[57:]))
		rs := batch[61:]
		for i := 0; i < n; i++ {
			l, k := binary.Varint(rs)
			if k <= 0 || int64(len(rs)-k) < l {
				return nil, fmt.Errorf("batch at %d: record %d is cut", base, i)
			}
			rec := rs[k : k+int(l)]
			rs = rs[k+int(l):]
			r, err := decodeRecord(rec)
			if err != nil {
				return nil, fmt.Errorf("batch at %d: record %d: %w", base, i, err)
			}
			r.offset += base
			out = append(out, r)
		}
	}
	return out, nil
}

// decodeRecord reads a record's offset delta and value.
func decodeRecord(rec []byte) (fetchedRecord, error) {
	var r fetchedRecord
	if len(rec) < 1 {
		return r, errors.New("empty")
	}
	rec = rec[1:] // attributes
	varint := func() (int64, error) {
		v, k := binary.Varint(rec)
		if k <= 0 {
			return 0, errors.New("bad varint")
		}
		rec = rec[k:]
		return v, nil
	}
	if _, err := varint(); err != nil { // timestamp delta
		return r, err
	}
	od, err := varint()
	if err != nil {
		return r, err
	}
	r.offset = od
	kl, err := varint()
	if err != nil {
		return r, err
	}
	if kl > 0 {
		if int64(len(rec)) < kl {
			return r, errors.New("key cut")
		}
		rec = rec[kl:]
	}
	vl, err := varint()
	if err != nil {
		return r, err
	}
	if vl > 0 {
		if int64(len(rec)) < vl {
			return r, errors.New("value cut")
		}
		r.value = string(rec[:vl])
	}
	return r, nil
}
