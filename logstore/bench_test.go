package logstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
	"golang.org/x/sys/unix"
)

var benchBatchSizes = []int{16 << 10, 64 << 10, 256 << 10, 1 << 20}

// benchBatch is one batch of 1 KiB records totalling about size bytes.
func benchBatch(size int) []byte {
	n := size / 1024
	if n < 1 {
		n = 1
	}
	return logtest.Filler(time.Now().UnixMilli(), n, 1024-8, 1)
}

// BenchmarkAppend measures Store.Produce end to end on the hot path:
// validation (CRC), the shard round trip, offset patching, the write and
// the flush policy. Compare with BenchmarkPlainAppend, which does only the
// write and the same fsync pattern on a plain file.
func BenchmarkAppend(b *testing.B) {
	for _, policy := range []FlushPolicy{FlushNone, FlushInterval, FlushAlways} {
		for _, size := range benchBatchSizes {
			b.Run(fmt.Sprintf("flush=%s/batch=%dKiB", policy, size>>10), func(b *testing.B) {
				ts := openTestStore(b, b.TempDir(), func(o *Options) { o.Flush = policy; o.Shards = 1 })
				defer ts.close(b)
				ctx := context.Background()
				if err := ts.CreatePartition(ctx, "bench", 0, PartitionConfig{MaxMessageBytes: 2 << 20, RetentionBytes: 1 << 30}); err != nil {
					b.Fatal(err)
				}
				batch := benchBatch(size)
				req := &ProduceRequest{Topic: "bench", Partition: 0, Acks: 1, Records: batch}
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := ts.Produce(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAppendParallel shows group commit: with several producers on one
// partition under flush=always, one fsync covers many batches.
func BenchmarkAppendParallel(b *testing.B) {
	for _, policy := range []FlushPolicy{FlushNone, FlushAlways} {
		b.Run(fmt.Sprintf("flush=%s/batch=64KiB", policy), func(b *testing.B) {
			ts := openTestStore(b, b.TempDir(), func(o *Options) { o.Flush = policy; o.Shards = 1 })
			defer ts.close(b)
			ctx := context.Background()
			if err := ts.CreatePartition(ctx, "bench", 0, PartitionConfig{RetentionBytes: 1 << 30}); err != nil {
				b.Fatal(err)
			}
			size := len(benchBatch(64 << 10))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				batch := benchBatch(64 << 10)
				req := &ProduceRequest{Topic: "bench", Partition: 0, Acks: 1, Records: batch}
				for pb.Next() {
					if _, err := ts.Produce(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPlainAppend is the baseline: pwrite of the same bytes appended to
// plain files rolled at 128 MiB, with the fsync pattern of each policy (none: never; interval: every
// 100ms; always: fdatasync after every write).
func BenchmarkPlainAppend(b *testing.B) {
	for _, policy := range []FlushPolicy{FlushNone, FlushInterval, FlushAlways} {
		for _, size := range benchBatchSizes {
			b.Run(fmt.Sprintf("flush=%s/batch=%dKiB", policy, size>>10), func(b *testing.B) {
				dir := b.TempDir()
				newFile := func(n int) *os.File {
					f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", n)))
					if err != nil {
						b.Fatal(err)
					}
					return f
				}
				files := 0
				f := newFile(files)
				defer func() { f.Close() }()
				batch := benchBatch(size)
				fd := int(f.Fd())
				var pos int64
				last := time.Now()
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if pos+int64(len(batch)) > 128<<20 {
						// Roll to a new file as the log does at segment.bytes.
						f.Close()
						files++
						f = newFile(files)
						fd, pos = int(f.Fd()), 0
					}
					if _, err := unix.Pwrite(fd, batch, pos); err != nil {
						b.Fatal(err)
					}
					pos += int64(len(batch))
					switch policy {
					case FlushAlways:
						_ = unix.Fdatasync(fd)
					case FlushInterval:
						if time.Since(last) >= 100*time.Millisecond {
							_ = unix.Fdatasync(fd)
							last = time.Now()
						}
					}
				}
			})
		}
	}
}

// BenchmarkSequentialRead fetches a 64 MiB log from offset 0 to the end in
// 1 MiB fetches and copies the bytes out, as the network ring does.
func BenchmarkSequentialRead(b *testing.B) {
	ts := openTestStore(b, b.TempDir(), func(o *Options) { o.Shards = 1 })
	defer ts.close(b)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "bench", 0, PartitionConfig{SegmentBytes: 16 << 20}); err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(64 << 10)
	var total int64
	for total < 64<<20 {
		if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "bench", Partition: 0, Records: batch}); err != nil {
			b.Fatal(err)
		}
		total += int64(len(batch))
	}
	buf := make([]byte, 0, 2<<20)
	req := &FetchRequest{Partitions: []FetchPartition{{Topic: "bench", Partition: 0, MaxBytes: 1 << 20}}}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(0)
		for {
			req.Partitions[0].Offset = off
			res, err := ts.Fetch(ctx, req)
			if err != nil || res.Partitions[0].Err != nil {
				b.Fatal(err, res.Partitions[0].Err)
			}
			var rerr error
			buf, rerr = res.Partitions[0].Records.ReadAll(buf[:0])
			res.Release()
			if rerr != nil {
				b.Fatal(rerr)
			}
			if len(buf) == 0 {
				break
			}
			// Advance past the last whole batch.
			p := 0
			for p+BatchHeaderSize <= len(buf) {
				h, _ := ParseBatchHeader(buf[p:])
				if p+int(h.Length) > len(buf) {
					break
				}
				off = h.NextOffset()
				p += int(h.Length)
			}
		}
	}
}

// BenchmarkRoll measures what a roll costs the shard goroutine: creating a
// segment (log, two preallocated, mapped indexes) and its first appends,
// which make the first stores into each mapping. A roll stalls every produce
// to the shard's partitions for this long.
func BenchmarkRoll(b *testing.B) {
	dir := b.TempDir()
	opts := Options{MaxIndexBytes: 10 << 20} // the default
	batch := benchBatch(16 << 10)
	for b.Loop() {
		s, err := createSegment(dir, 0, &opts)
		if err != nil {
			b.Fatal(err)
		}
		for range 2 { // the first batch of a segment needs no index entry
			if err := s.appendBatches(batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.remove(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplicatedAppend measures one acks=1 produce on a leader, then
// the follower's round: a follower fetch of the batch and AppendReplica
// on a second store, which tells the leader at the next fetch. Compare
// with BenchmarkAppend/flush=none for what a follower copy costs.
func BenchmarkReplicatedAppend(b *testing.B) {
	for _, size := range []int{16 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("batch=%dKiB", size>>10), func(b *testing.B) {
			ctx := context.Background()
			stores := make([]*testStore, 2)
			for i := range stores {
				stores[i] = openTestStore(b, b.TempDir(), func(o *Options) { o.Shards = 1 })
				defer stores[i].close(b)
				if err := stores[i].CreatePartition(ctx, "bench", 0, PartitionConfig{MaxMessageBytes: 2 << 20, RetentionBytes: 1 << 30}); err != nil {
					b.Fatal(err)
				}
			}
			leader, follower := stores[0], stores[1]
			st := ReplicaState{Role: RoleLeader, LeaderEpoch: 1, Leader: 1, LocalID: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1}
			if err := leader.SetReplicaState(ctx, "bench", 0, st); err != nil {
				b.Fatal(err)
			}
			st.Role, st.LocalID = RoleFollower, 2
			if err := follower.SetReplicaState(ctx, "bench", 0, st); err != nil {
				b.Fatal(err)
			}
			batch := benchBatch(size)
			req := &ProduceRequest{Topic: "bench", Partition: 0, Acks: 1, Records: batch}
			fetch := &FetchRequest{Partitions: []FetchPartition{{Topic: "bench", MaxBytes: 4 << 20, FollowerID: 2, LeaderEpoch: 1}}}
			buf := make([]byte, 0, 4<<20)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := leader.Produce(ctx, req); err != nil {
					b.Fatal(err)
				}
				res, err := leader.Fetch(ctx, fetch)
				if err != nil || res.Partitions[0].Err != nil {
					b.Fatal(err, res.Partitions[0].Err)
				}
				data, err := res.Partitions[0].Records.ReadAll(buf[:0])
				res.Release()
				if err != nil {
					b.Fatal(err)
				}
				end, err := follower.AppendReplica(ctx, "bench", 0, data, res.Partitions[0].HighWatermark)
				if err != nil {
					b.Fatal(err)
				}
				fetch.Partitions[0].Offset = end
			}
		})
	}
}
