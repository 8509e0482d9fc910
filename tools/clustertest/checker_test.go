package clustertest

import (
	"fmt"
	"strings"
	"testing"
)

// synthHistory builds a synthetic run: producer "a" writes n values round robin
// over two partitions, all acknowledged, and the logs hold exactly them.
func synthHistory(n int) ([]Write, map[int32]Log) {
	var writes []Write
	logs := map[int32]Log{0: {}, 1: {}}
	for i := 0; i < n; i++ {
		p := int32(i % 2)
		l := logs[p]
		w := Write{Producer: "a", Seq: int64(i), Value: fmt.Sprintf("a-%d", i), Partition: p, Outcome: Acked, Offset: l.HW}
		writes = append(writes, w)
		l.Records = append(l.Records, Record{Partition: p, Offset: l.HW, Value: w.Value})
		l.HW++
		logs[p] = l
	}
	return writes, logs
}

func TestCheckClean(t *testing.T) {
	writes, logs := synthHistory(10)
	res := Check(writes, logs)
	if !res.OK() || res.Acked != 10 || res.Read != 10 {
		t.Fatalf("clean history judged %v %v", res, res.Problems)
	}
}

func TestCheckLost(t *testing.T) {
	writes, logs := synthHistory(10)
	// The last record of partition 1 is gone, and the HW went back with it.
	l := logs[1]
	l.Records = l.Records[:len(l.Records)-1]
	l.HW--
	logs[1] = l
	res := Check(writes, logs)
	if res.Lost != 1 || res.OK() {
		t.Fatalf("lost write not found: %v", res)
	}
}

func TestCheckGap(t *testing.T) {
	writes, logs := synthHistory(10)
	// A record in the middle is missing, the HW still above it.
	l := logs[0]
	l.Records = append(l.Records[:2:2], l.Records[3:]...)
	logs[0] = l
	res := Check(writes, logs)
	if res.Gaps != 1 || res.Lost != 1 {
		t.Fatalf("gap not found: %v %v", res, res.Problems)
	}
	// Records that stop short of the HW are a gap too.
	writes, logs = synthHistory(10)
	l = logs[0]
	l.HW += 2
	logs[0] = l
	if res := Check(writes, logs); res.Gaps != 2 {
		t.Fatalf("unread offsets below the HW not found: %v %v", res, res.Problems)
	}
}

func TestCheckDuplicate(t *testing.T) {
	writes, logs := synthHistory(10)
	// A retried batch written again at the end of the partition.
	l := logs[1]
	dup := l.Records[1]
	dup.Offset = l.HW
	l.Records = append(l.Records, dup)
	l.HW++
	logs[1] = l
	res := Check(writes, logs)
	if res.Duplicates != 1 || res.OK() {
		t.Fatalf("duplicate not found: %v %v", res, res.Problems)
	}
	// A failed write present twice is a duplicate as well.
	writes, logs = synthHistory(4)
	writes = append(writes, Write{Producer: "a", Seq: 4, Value: "a-4", Partition: 0, Outcome: FailedRetriable, Err: "NOT_ENOUGH_REPLICAS"})
	l = logs[0]
	for i := 0; i < 2; i++ {
		l.Records = append(l.Records, Record{Partition: 0, Offset: l.HW, Value: "a-4"})
		l.HW++
	}
	logs[0] = l
	if res := Check(writes, logs); res.Duplicates != 1 {
		t.Fatalf("failed write present twice: %v %v", res, res.Problems)
	}
}

func TestCheckFailedPresentOnce(t *testing.T) {
	writes, logs := synthHistory(4)
	writes = append(writes,
		Write{Producer: "a", Seq: 4, Value: "a-4", Partition: 0, Outcome: FailedRetriable, Err: "timeout"},
		Write{Producer: "a", Seq: 5, Value: "a-5", Partition: 0, Outcome: FailedOther, Err: "context canceled"})
	l := logs[0]
	l.Records = append(l.Records, Record{Partition: 0, Offset: l.HW, Value: "a-4"})
	l.HW++
	logs[0] = l
	res := Check(writes, logs)
	if !res.OK() || res.FailedPresent != 1 || res.FailedRetriable != 1 || res.FailedOther != 1 {
		t.Fatalf("failed writes, one present: %v %v", res, res.Problems)
	}
}

func TestCheckMisplaced(t *testing.T) {
	writes, logs := synthHistory(6)
	// The store acknowledged offset 1 but the record sits at 2: swap two
	// records' values in partition 0.
	l := logs[0]
	l.Records[1].Value, l.Records[2].Value = l.Records[2].Value, l.Records[1].Value
	logs[0] = l
	res := Check(writes, logs)
	if res.Misplaced != 2 || res.Reordered != 1 {
		t.Fatalf("misplaced writes not found: %v %v", res, res.Problems)
	}
}

func TestCheckReorderedUnacked(t *testing.T) {
	// Two unacknowledged writes of one producer, in the log in the wrong
	// order: idempotence promises the order even of writes not acked.
	writes := []Write{
		{Producer: "b", Seq: 0, Value: "b-0", Outcome: FailedRetriable},
		{Producer: "b", Seq: 1, Value: "b-1", Outcome: FailedRetriable},
	}
	logs := map[int32]Log{0: {HW: 2, Records: []Record{{0, 0, "b-1", 0}, {0, 1, "b-0", 0}}}}
	if res := Check(writes, logs); res.Reordered != 1 {
		t.Fatalf("reordering not found: %v %v", res, res.Problems)
	}
}

func TestCheckUnknownAndOutOfRange(t *testing.T) {
	writes, logs := synthHistory(4)
	l := logs[0]
	l.Records = append(l.Records, Record{Partition: 0, Offset: l.HW, Value: "zz"})
	l.HW++
	// And one record read past the HW.
	l.Records = append(l.Records, Record{Partition: 0, Offset: l.HW + 5, Value: "a-0"})
	logs[0] = l
	res := Check(writes, logs)
	if res.Unknown != 1 || res.Gaps != 1 {
		t.Fatalf("unknown value / out of range record: %v %v", res, res.Problems)
	}
}

func TestCheckLogStart(t *testing.T) {
	// A log whose start moved (retention) is read from there: no gap below.
	writes := []Write{{Producer: "a", Seq: 0, Value: "a-0", Partition: 0, Outcome: Acked, Offset: 7}}
	logs := map[int32]Log{0: {Start: 7, HW: 8, Records: []Record{{0, 7, "a-0", 0}}}}
	if res := Check(writes, logs); !res.OK() {
		t.Fatalf("log starting at 7: %v %v", res, res.Problems)
	}
}

func TestCheckProblemsBounded(t *testing.T) {
	writes, _ := synthHistory(1000)
	res := Check(writes, map[int32]Log{0: {}, 1: {}})
	if res.Lost != 1000 || len(res.Problems) != maxProblems {
		t.Fatalf("lost %d, %d problems listed", res.Lost, len(res.Problems))
	}
	if !strings.Contains(res.String(), "lost=1000") {
		t.Fatalf("summary %q", res.String())
	}
}

func TestSameLogs(t *testing.T) {
	_, a := synthHistory(6)
	_, b := synthHistory(6)
	if d := SameLogs(a, b); d != "" {
		t.Fatalf("equal reads differ: %s", d)
	}
	l := b[1]
	l.Records[2].Value = "x"
	b[1] = l
	if d := SameLogs(a, b); !strings.Contains(d, "partition 1") {
		t.Fatalf("difference not found: %q", d)
	}
}

func TestErrorSummary(t *testing.T) {
	writes := []Write{
		{Outcome: FailedRetriable, Err: "NOT_ENOUGH_REPLICAS"},
		{Outcome: FailedRetriable, Err: "NOT_ENOUGH_REPLICAS"},
		{Outcome: FailedOther, Err: "context canceled"},
		{Outcome: Acked},
	}
	got := ErrorSummary(writes, 5)
	want := "2× failed-retriable: NOT_ENOUGH_REPLICAS; 1× failed-other: context canceled"
	if got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
}
