package client

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
)

// pollFake polls co once and checks that its messages are the next count
// records from *next, with their stamped values.
func pollFake(t *testing.T, co *Consumer, next *int64) []Message {
	t.Helper()
	msgs, err := co.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		t.Fatal("a poll with pushes queued returned nothing")
	}
	checkStamps(t, msgs, *next)
	*next += int64(len(msgs))
	return msgs
}

func checkStamps(t *testing.T, msgs []Message, first int64) {
	t.Helper()
	for i, m := range msgs {
		if m.Offset != first+int64(i) {
			t.Fatalf("message %d: offset %d, want %d", i, m.Offset, first+int64(i))
		}
		if got := int64(binary.BigEndian.Uint64(m.Value)); got != m.Offset {
			t.Fatalf("offset %d: value stamped %d", m.Offset, got)
		}
	}
}

// TestPushMessagesHoldUntilNextPoll checks that the buffers a subscription
// reuses are never filled while a Poll's messages alias them: after each
// Poll the reader fills the whole queue with later pushes, and the
// messages must still read as they did.
func TestPushMessagesHoldUntilNextPoll(t *testing.T) {
	co, fp := newFakePushConsumer(t, 4, 64, 1<<20)
	fp.stamp = true
	go fp.serve()
	defer func() {
		_ = co.Close()
		_ = fp.nc.Close()
		<-fp.done
	}()
	var next int64
	for range 3 * pushQueue {
		msgs := pollFake(t, co, &next)
		first := msgs[0].Offset
		// Observable state, not a sleep: a full queue means the reader
		// took every free buffer it could and blocked.
		for len(co.pushes.ch) < cap(co.pushes.ch) {
			runtime.Gosched()
		}
		checkStamps(t, msgs, first)
	}
	if co.pushes.pooled.Load() > co.pushes.limit {
		t.Fatalf("%d bytes of free buffers, over the bound %d", co.pushes.pooled.Load(), co.pushes.limit)
	}
}

// TestPushPollAllocatesNothing: once its buffers have grown, following a
// subscription allocates nothing per push (the reader, the decoder, the
// messages, the timer and the credit all reuse what they had).
func TestPushPollAllocatesNothing(t *testing.T) {
	co, fp := newFakePushConsumer(t, 16, 1024, 1<<20)
	fp.stamp = true
	go fp.serve()
	defer func() {
		_ = co.Close()
		_ = fp.nc.Close()
		<-fp.done
	}()
	var next int64
	for range 4 * pushQueue {
		pollFake(t, co, &next)
	}
	// 200 polls give back credit (a quarter of the 1 MiB window per 16
	// pushes of 16 KiB) a dozen times.
	allocs := testing.AllocsPerRun(200, func() {
		msgs, err := co.Poll(context.Background())
		if err != nil || len(msgs) == 0 {
			t.Fatalf("poll: %d messages, %v", len(msgs), err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per push, want 0", allocs)
	}
}

func TestPushStreamKeepsFreeBuffersWithinItsLimit(t *testing.T) {
	s := newPushStream(3 << 10)
	s.put(make([]byte, 0, 2<<10))
	s.put(make([]byte, 0, 2<<10)) // over the limit: dropped
	s.put(make([]byte, 0, 1<<10))
	if got := s.pooled.Load(); got != 3<<10 || len(s.free) != 2 {
		t.Fatalf("pooled %d bytes in %d buffers, want 3072 in 2", got, len(s.free))
	}
	if b := s.buffer(1500); cap(b) != 2<<10 || len(b) != 1500 {
		t.Fatalf("buffer(1500): len %d cap %d, want the freed 2 KiB one", len(b), cap(b))
	}
	if b := s.buffer(1500); cap(b) < 1500 {
		t.Fatalf("buffer(1500) has cap %d", cap(b))
	}
	if got := s.pooled.Load(); got != 0 || len(s.free) != 0 {
		t.Fatalf("after taking both: pooled %d in %d buffers", got, len(s.free))
	}
}
