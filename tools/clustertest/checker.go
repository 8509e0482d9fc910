package clustertest

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The checker: given what the producers were told (the history of writes)
// and what the log holds (every partition read from its start to its high
// watermark), it decides whether the cluster kept its promises. It knows
// nothing of how the cluster works, so it judges a correct and a broken
// implementation alike.

// Outcome is what a producer was told about one write.
type Outcome int

const (
	// Acked: the write was acknowledged at Partition/Offset. It must be in
	// the log, there, exactly once.
	Acked Outcome = iota
	// FailedRetriable: the write failed with an error a client may retry
	// (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER, a delivery timeout).
	// It may or may not be in the log, but at most once.
	FailedRetriable
	// FailedOther: any other failure, the writes cancelled at the end of
	// the run included. Same rule as FailedRetriable.
	FailedOther
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case FailedRetriable:
		return "failed-retriable"
	default:
		return "failed-other"
	}
}

// Write is one record a producer sent. Value is unique in the history: it
// names the producer and the sequence number.
type Write struct {
	Producer  string
	Seq       int64
	Value     string
	Partition int32
	Outcome   Outcome
	// Offset is the acknowledged offset (Acked only).
	Offset int64
	// Err is the error text of a failed write.
	Err string
	// Sent and Done are when the write was handed to the client and when
	// its outcome came back, for the report.
	Sent, Done time.Time
}

// Record is one record read back from the log.
type Record struct {
	Partition int32
	Offset    int64
	Value     string
	// Epoch is the leader epoch its batch was written under (-1 unknown).
	Epoch int32
}

// Log is what a partition holds: the records read from Start (the log
// start offset) up to HW (exclusive).
type Log struct {
	Start, HW int64
	Records   []Record
}

// Result counts what the checker found. Lost, Duplicates, Misplaced, Gaps,
// Reordered and Unknown must all be 0.
type Result struct {
	Acked, FailedRetriable, FailedOther int
	// FailedPresent counts failed writes that are in the log anyway, once:
	// allowed (the write may have landed before the error came back).
	FailedPresent int
	// Read counts the records read.
	Read int
	// Lost: acknowledged writes not in the log.
	Lost int
	// Duplicates: extra copies of a value (any write, acked or not).
	Duplicates int
	// Misplaced: acknowledged writes found, but not at the acknowledged
	// partition and offset.
	Misplaced int
	// Gaps: offsets between a partition's start and HW with no record,
	// records at an offset already seen, or outside [start, HW).
	Gaps int
	// Reordered: a producer's writes to a partition whose offsets do not
	// grow with their sequence numbers.
	Reordered int
	// Unknown: records in the log that no producer wrote.
	Unknown int
	// Problems describes the first few violations, for the failure message.
	Problems []string
}

// maxProblems bounds Problems so that a badly broken run prints a readable
// failure.
const maxProblems = 20

func (r *Result) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// OK reports a run with no violation.
func (r Result) OK() bool {
	return r.Lost == 0 && r.Duplicates == 0 && r.Misplaced == 0 && r.Gaps == 0 && r.Reordered == 0 && r.Unknown == 0
}

// String is the one-line summary the tests log.
func (r Result) String() string {
	return fmt.Sprintf("acked=%d failed-retriable=%d failed-other=%d failed-but-present=%d read=%d lost=%d duplicates=%d misplaced=%d gaps=%d reordered=%d unknown=%d",
		r.Acked, r.FailedRetriable, r.FailedOther, r.FailedPresent, r.Read, r.Lost, r.Duplicates, r.Misplaced, r.Gaps, r.Reordered, r.Unknown)
}

type location struct {
	partition int32
	offset    int64
}

// Check judges a history against the partitions' logs.
func Check(writes []Write, logs map[int32]Log) Result {
	var res Result
	byValue := make(map[string]*Write, len(writes))
	for i := range writes {
		w := &writes[i]
		switch w.Outcome {
		case Acked:
			res.Acked++
		case FailedRetriable:
			res.FailedRetriable++
		default:
			res.FailedOther++
		}
		if _, dup := byValue[w.Value]; dup {
			// The workload's own bug, not the cluster's: say so loudly.
			res.Duplicates++
			res.problem("history: value %q written twice", w.Value)
			continue
		}
		byValue[w.Value] = w
	}

	found := make(map[string][]location, len(writes))
	partitions := make([]int32, 0, len(logs))
	for p := range logs {
		partitions = append(partitions, p)
	}
	sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
	for _, p := range partitions {
		l := logs[p]
		next := l.Start
		// Per producer, the sequence number of its last write seen in this
		// partition: an idempotent producer's writes land in the order it
		// sent them.
		lastSeq := map[string]int64{}
		for _, r := range l.Records {
			res.Read++
			switch {
			case r.Offset < next || r.Offset >= l.HW:
				res.Gaps++
				res.problem("partition %d: record at offset %d out of order or outside [%d, %d) (expected %d)", p, r.Offset, l.Start, l.HW, next)
				continue
			case r.Offset > next:
				res.Gaps += int(r.Offset - next)
				res.problem("partition %d: offsets %d..%d missing", p, next, r.Offset-1)
			}
			next = r.Offset + 1
			found[r.Value] = append(found[r.Value], location{r.Partition, r.Offset})
			w, ok := byValue[r.Value]
			if !ok {
				res.Unknown++
				res.problem("partition %d offset %d: value %q written by no producer", p, r.Offset, r.Value)
				continue
			}
			if last, seen := lastSeq[w.Producer]; seen && w.Seq <= last {
				res.Reordered++
				res.problem("partition %d offset %d: %s seq %d after seq %d", p, r.Offset, w.Producer, w.Seq, last)
			}
			lastSeq[w.Producer] = w.Seq
		}
		if next < l.HW {
			res.Gaps += int(l.HW - next)
			res.problem("partition %d: offsets %d..%d below the high watermark not read", p, next, l.HW-1)
		}
	}

	for i := range writes {
		w := &writes[i]
		if byValue[w.Value] != w {
			continue // a value written twice, counted above
		}
		locs := found[w.Value]
		if len(locs) > 1 {
			res.Duplicates += len(locs) - 1
			res.problem("%s seq %d (%s) is in the log %d times: %v", w.Producer, w.Seq, w.Outcome, len(locs), locs)
		}
		if w.Outcome != Acked {
			if len(locs) > 0 {
				res.FailedPresent++
			}
			continue
		}
		switch {
		case len(locs) == 0:
			res.Lost++
			res.problem("%s seq %d acked at partition %d offset %d is lost", w.Producer, w.Seq, w.Partition, w.Offset)
		case !contains(locs, location{w.Partition, w.Offset}):
			res.Misplaced++
			res.problem("%s seq %d acked at partition %d offset %d is at partition %d offset %d", w.Producer, w.Seq, w.Partition, w.Offset, locs[0].partition, locs[0].offset)
		}
	}
	return res
}

func contains(locs []location, l location) bool {
	for _, x := range locs {
		if x == l {
			return true
		}
	}
	return false
}

// SameLogs compares two reads of the same partitions (through two
// gateways) and describes the first difference, or returns "".
func SameLogs(a, b map[int32]Log) string {
	for p, la := range a {
		lb, ok := b[p]
		if !ok {
			return fmt.Sprintf("partition %d read through one gateway only", p)
		}
		if la.Start != lb.Start || la.HW != lb.HW {
			return fmt.Sprintf("partition %d: start/HW %d/%d against %d/%d", p, la.Start, la.HW, lb.Start, lb.HW)
		}
		if len(la.Records) != len(lb.Records) {
			return fmt.Sprintf("partition %d: %d records against %d", p, len(la.Records), len(lb.Records))
		}
		for i := range la.Records {
			if la.Records[i] != lb.Records[i] {
				return fmt.Sprintf("partition %d: record %d is %+v against %+v", p, i, la.Records[i], lb.Records[i])
			}
		}
	}
	if len(b) != len(a) {
		return fmt.Sprintf("%d partitions against %d", len(a), len(b))
	}
	return ""
}

// ErrorSummary counts the failed writes by error text, most common first,
// for the report.
func ErrorSummary(writes []Write, limit int) string {
	counts := map[string]int{}
	for _, w := range writes {
		if w.Outcome != Acked {
			counts[w.Outcome.String()+": "+w.Err]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > limit {
		keys = keys[:limit]
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", counts[k], k)
	}
	return strings.Join(parts, "; ")
}
