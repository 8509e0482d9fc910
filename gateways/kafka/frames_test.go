package kafka

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"
)

// TestClaimedFrameSizeTakesNoMemory: connections that each send only a
// 4-byte length of 100 MB reserve that much of queued.max.request.bytes
// but allocate nothing for it; past the budget, the next claim waits.
func TestClaimedFrameSizeTakesNoMemory(t *testing.T) {
	const claim = 100 << 20
	e := newTestEnv(t, func(o *Options) { o.MaxQueuedRequestBytes = 3 * claim })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		c := dialRaw(t, e.addr)
		if _, err := c.nc.Write(binary.BigEndian.AppendUint32(nil, claim)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for st := e.gw.Stats(); st.QueuedBytes != 3*claim || st.QueueWaits != 1; st = e.gw.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("four claims of 100 MB with room for three: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > claim/2 {
		t.Errorf("four claimed 100 MB frames grew the heap by %d bytes", grew)
	}
}
