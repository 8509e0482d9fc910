//go:build crash

package crashtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

const (
	crashTopic      = "crash"
	crashPartitions = 3
	crashKills      = 24
)

// ackedBatch is a batch the store acknowledged: it must be readable, byte
// for byte, at Offset after any number of crashes.
type ackedBatch struct {
	offset int64
	bytes  []byte
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type node struct {
	bin, dir, sock string
	cmd            *exec.Cmd
	log            *os.File
}

func (n *node) start(t *testing.T) {
	t.Helper()
	n.cmd = exec.Command(n.bin, "store",
		"--data-dir", n.dir,
		"--ring-listen", "unix:"+n.sock,
		// No admin listener: the default :9001 may be taken on the
		// machine running the tests.
		"--http-listen", "",
		"--logstore.flush", "always",
		"--logstore.shards", "2",
		// Small segments so kills land during rolls too.
		"--topic_defaults.segment_bytes", "262144",
		"--log_level", "warn")
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (n *node) kill(t *testing.T) {
	t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = n.cmd.Process.Wait()
}

func (n *node) dial(t *testing.T) ring.Backend {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		b, err := ring.Dial(ctx, "unix:"+n.sock, ring.DialOptions{Logger: quiet})
		cancel()
		if err == nil {
			return b
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(n.log.Name())
			t.Fatalf("store did not come up: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCrashAckedRecordsSurvive produces with flush=always from several
// goroutines while killing the store with SIGKILL at random moments, at
// least 20 times. After each restart every acknowledged batch must read back
// byte-identical at its offset, and offsets must be dense: no gap, no
// duplicate.
func TestCrashAckedRecordsSurvive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "aerostream")
	build := exec.Command("go", "build", "-o", bin, "../aerostream")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	logf, err := os.Create(filepath.Join(dir, "store.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	n := &node{bin: bin, dir: filepath.Join(dir, "data"), sock: filepath.Join(dir, "ring.sock"), log: logf}
	n.start(t)
	b := n.dial(t)
	ctx := context.Background()
	for p := int32(0); p < crashPartitions; p++ {
		if err := b.CreatePartition(ctx, crashTopic, p, logstore.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	acked := make([][]ackedBatch, crashPartitions)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var totalAcked, totalFailed int
	for round := 0; round < crashKills; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		failed := 0
		for p := int32(0); p < crashPartitions; p++ {
			wg.Add(1)
			go func(p int32) {
				defer wg.Done()
				for seq := 0; ; seq++ {
					select {
					case <-stop:
						return
					default:
					}
					batch := makeBatch(round, int(p), seq)
					sent := append([]byte(nil), batch...)
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					res, err := b.Produce(cctx, &ring.ProduceRequest{Topic: crashTopic, Partition: p, Acks: -1, Records: batch})
					cancel()
					if err != nil {
						mu.Lock()
						failed++
						mu.Unlock()
						return // the store is gone; the round ends
					}
					binary.BigEndian.PutUint64(sent[0:], uint64(res.BaseOffset))
					mu.Lock()
					acked[p] = append(acked[p], ackedBatch{offset: res.BaseOffset, bytes: sent})
					mu.Unlock()
				}
			}(p)
		}
		// A random moment into the produce load: the delay picks the crash
		// point, it does not wait for anything.
		time.Sleep(time.Duration(20+rng.Intn(400)) * time.Millisecond)
		n.kill(t)
		close(stop)
		wg.Wait()
		b.Close()
		totalFailed += failed

		n.start(t)
		if round%4 == 3 {
			// Also kill during recovery, before the store serves anything.
			time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond) // a random point in recovery
			n.kill(t)
			n.start(t)
		}
		b = n.dial(t)
		for p := int32(0); p < crashPartitions; p++ {
			verifyPartition(t, b, round, p, acked[p])
		}
	}
	for p := range acked {
		totalAcked += len(acked[p])
	}
	t.Logf("%d kills, %d acknowledged batches verified after every restart, %d in-flight produces failed at kill time",
		crashKills, totalAcked, totalFailed)
	if totalAcked < crashKills {
		t.Fatalf("too few acknowledged batches (%d) for the test to mean anything", totalAcked)
	}
	b.Close()
	n.kill(t)
}

// makeBatch builds a batch whose content names its round, partition and
// sequence, with a size that varies so rolls and index intervals move.
func makeBatch(round, p, seq int) []byte {
	n := 1 + seq%4
	recs := make([]logtest.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte(seq + i)}, 100+seq%700)
		recs[i] = logtest.Record{Key: []byte(fmt.Sprintf("r%d-p%d-s%d-%d", round, p, seq, i)), Value: v}
	}
	return logtest.Batch(time.Now().UnixMilli(), recs...)
}

// verifyPartition reads the whole partition and checks density and that
// every acknowledged batch is present unchanged.
func verifyPartition(t *testing.T, b ring.Backend, round int, p int32, acked []ackedBatch) {
	t.Helper()
	ctx := context.Background()
	byOffset := map[int64][]byte{}
	next := int64(0)
	for {
		res, err := b.Fetch(ctx, &ring.FetchRequest{Partitions: []ring.FetchPartition{{Topic: crashTopic, Partition: p, Offset: next, MaxBytes: 1 << 20}}})
		if err != nil {
			t.Fatalf("round %d partition %d: fetch at %d: %v", round, p, next, err)
		}
		pr := res.Partitions[0]
		if pr.Err != nil {
			t.Fatalf("round %d partition %d: fetch at %d: %v", round, p, next, pr.Err)
		}
		data, err := pr.Records.ReadAll(nil)
		res.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			if next != pr.HighWatermark {
				t.Fatalf("round %d partition %d: empty fetch at %d below high watermark %d", round, p, next, pr.HighWatermark)
			}
			break
		}
		progressed := false
		for len(data) >= logstore.BatchHeaderSize {
			h, err := logstore.ParseBatchHeader(data)
			if err != nil {
				t.Fatalf("round %d partition %d: bad batch at %d: %v", round, p, next, err)
			}
			if int(h.Length) > len(data) {
				break
			}
			if _, err := logstore.ValidateBatch(data[:h.Length]); err != nil {
				t.Fatalf("round %d partition %d: batch at %d: %v", round, p, h.BaseOffset, err)
			}
			if h.BaseOffset != next {
				t.Fatalf("round %d partition %d: gap or overlap: batch at %d, expected %d", round, p, h.BaseOffset, next)
			}
			if _, dup := byOffset[h.BaseOffset]; dup {
				t.Fatalf("round %d partition %d: duplicate offset %d", round, p, h.BaseOffset)
			}
			byOffset[h.BaseOffset] = append([]byte(nil), data[:h.Length]...)
			next = h.NextOffset()
			data = data[h.Length:]
			progressed = true
		}
		if !progressed {
			t.Fatalf("round %d partition %d: fetch at %d made no progress", round, p, next)
		}
	}
	for _, a := range acked {
		got, ok := byOffset[a.offset]
		if !ok {
			t.Fatalf("round %d partition %d: acknowledged batch at offset %d is missing (log ends at %d)", round, p, a.offset, next)
		}
		if !bytes.Equal(got, a.bytes) {
			t.Fatalf("round %d partition %d: acknowledged batch at offset %d differs", round, p, a.offset)
		}
	}
}
