package kafka

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// seqGuard keeps a producer's sequence gap-free across a refused batch.
// An idempotent producer pipelines several batches to a partition; when
// one is refused for a retriable reason (its transaction could not be
// verified, or the store was not leading for a moment) and a later one of
// the same producer gets through, the store accepts the later one if it
// has no sequence to compare with yet (a producer new to the partition),
// and the retry of the refused one is then OUT_OF_ORDER_SEQUENCE_NUMBER:
// the producer fails. As Kafka's partition leader does with the lowest
// sequence waiting for verification (KIP-890's VerificationStateEntry),
// the gateway remembers, per producer and partition, the lowest sequence
// it answered with a retriable error, and refuses a later sequence of the
// same epoch with OUT_OF_ORDER_SEQUENCE_NUMBER until that batch is
// written; clients take that error on a batch that is not their next as
// "retry after the earlier one". A producer's batches for a partition all
// come to the gateway its metadata names, in order on one connection, so
// the memory is the gateway's own.
type seqGuard struct {
	shards [seqShards]seqShard // by producer id, so no lock is the gateway's
}

const seqShards = 16

type seqShard struct {
	n  atomic.Int32 // entries; 0 lets every batch pass without the lock
	mu struct {
		sync.Mutex
		m map[seqKey]seqHold
	}
}

func (g *seqGuard) shard(pid int64) *seqShard { return &g.shards[uint64(pid)%seqShards] }

type seqKey struct {
	pid int64
	tp  tp
}

type seqHold struct {
	epoch int16
	seq   int32     // the lowest sequence refused and not yet written
	at    time.Time // last refusal; an old hold is dropped (seqHoldTTL)
}

// seqHoldTTL bounds how long a refused sequence holds back the later
// ones: a producer that gives up a batch bumps its epoch, which ends the
// hold at once, so this only cleans up after producers that went away.
const seqHoldTTL = time.Minute

// maxSeqHolds bounds the memory of a shard; holds are rare (one per
// producer and partition refused for a moment).
const maxSeqHolds = 10000

// batchProducer reads the producer fields of a record batch: ok is false
// for a batch too short to have them or one without a producer id.
func batchProducer(b []byte) (pid int64, epoch int16, seq int32, ok bool) {
	if len(b) < 61 {
		return 0, 0, 0, false
	}
	pid = int64(binary.BigEndian.Uint64(b[43:]))
	epoch = int16(binary.BigEndian.Uint16(b[51:]))
	seq = int32(binary.BigEndian.Uint32(b[53:]))
	return pid, epoch, seq, pid >= 0
}

// check refuses a batch whose sequence follows one of the same producer
// and epoch that was refused and not written since.
func (g *seqGuard) check(p tp, batch []byte) error {
	pid, epoch, seq, ok := batchProducer(batch)
	if !ok {
		return nil
	}
	sh := g.shard(pid)
	if sh.n.Load() == 0 {
		return nil
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := seqKey{pid, p}
	h, ok := sh.mu.m[k]
	switch {
	case !ok || epoch < h.epoch:
		return nil // an older epoch is the store's to fence
	case epoch > h.epoch || time.Since(h.at) > seqHoldTTL:
		// A new epoch starts its sequences again.
		sh.dropLocked(k)
		return nil
	case seq > h.seq:
		return fmt.Errorf("%w: producer %d epoch %d sent sequence %d to %s-%d, but sequence %d was refused and is not written yet",
			kerr.OutOfOrderSequenceNumber, pid, epoch, seq, p.topic, p.partition, h.seq)
	}
	return nil
}

// refused notes a batch answered with err; only a retriable refusal
// holds back the later sequences, because only then does the producer
// send this one again.
func (g *seqGuard) refused(p tp, batch []byte, err error) {
	ke := ErrorFor(err)
	if ke == nil || ke == kerr.CorruptMessage || !kerr.IsRetriable(ke) && ke != kerr.ConcurrentTransactions {
		return
	}
	pid, epoch, seq, ok := batchProducer(batch)
	if !ok {
		return
	}
	now := time.Now()
	sh := g.shard(pid)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.mu.m == nil {
		sh.mu.m = map[seqKey]seqHold{}
	}
	k := seqKey{pid, p}
	if h, ok := sh.mu.m[k]; ok {
		if h.epoch > epoch {
			return
		}
		if h.epoch == epoch && h.seq < seq {
			seq = h.seq
		}
	}
	if len(sh.mu.m) >= maxSeqHolds {
		for k2, h := range sh.mu.m {
			if now.Sub(h.at) > seqHoldTTL {
				delete(sh.mu.m, k2)
			}
		}
		if len(sh.mu.m) >= maxSeqHolds {
			return // no room: the store's own checks remain
		}
	}
	sh.mu.m[k] = seqHold{epoch: epoch, seq: seq, at: now}
	sh.n.Store(int32(len(sh.mu.m)))
}

// written notes a batch the store appended (or acknowledged as a
// duplicate): it ends the hold it was the refused one of.
func (g *seqGuard) written(p tp, batch []byte) {
	pid, epoch, seq, ok := batchProducer(batch)
	if !ok {
		return
	}
	sh := g.shard(pid)
	if sh.n.Load() == 0 {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := seqKey{pid, p}
	if h, ok := sh.mu.m[k]; ok && (epoch > h.epoch || epoch == h.epoch && seq <= h.seq) {
		sh.dropLocked(k)
	}
}

func (sh *seqShard) dropLocked(k seqKey) {
	delete(sh.mu.m, k)
	sh.n.Store(int32(len(sh.mu.m)))
}
