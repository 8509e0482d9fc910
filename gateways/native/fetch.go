package native

import (
	"context"
	"fmt"
	"time"

	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Fetch (0x04): stored bytes from offsets, hot or tiered alike. The
// response's records are the segment file's bytes: in-process they go to
// the socket with sendfile(2) straight from the page cache (the writer
// copies small ranges through its buffer instead, see gateways), and cold
// ones are the fetch cache's chunks, written as they are. It waits up to
// max_wait (capped by Options.MaxWait) for min_bytes over all partitions,
// and returns at most max_bytes in all and a partition's max_bytes each,
// always at least one whole batch so a large one cannot stall a reader.
// A commit in the request's trailer is stored first; its outcome follows
// the partitions in the response.

func (s *session) handleFetch(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	m := &s.fetch
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	var trailer []byte
	if m.HasCommit {
		// Committed before the fetch, so a follower's commit of what it
		// has handled rides on the fetch for what comes next.
		var code int16
		var msg string
		if err := s.fetchCommit(ctx, m.Commit); err != nil {
			code, msg = codeFor(err), err.Error()
		}
		trailer = wire.AppendCommitResult(nil, code, msg)
	}
	codes := make([]int16, len(m.Partitions))
	s.ringParts = s.ringParts[:0]
	for i, p := range m.Partitions {
		t, err := s.topicByID(ctx, p.TopicID)
		if err == nil {
			err = s.topicErr(t, opRead) // authz.go
		}
		if err == nil && (p.Partition < 0 || p.Partition >= t.Partitions) {
			err = fmt.Errorf("%w: partition %d of %s", ring.ErrUnknownPartition, p.Partition, t.Name)
		}
		if err != nil {
			codes[i] = codeFor(err)
			continue
		}
		s.ringParts = append(s.ringParts, ring.FetchPartition{Topic: t.Name, Partition: p.Partition, Offset: p.Offset, MaxBytes: p.MaxBytes})
	}
	var res ring.FetchResult
	if len(s.ringParts) > 0 {
		wait := min(time.Duration(max(m.MaxWaitMs, 0))*time.Millisecond, s.g.opts.MaxWait)
		var err error
		res, err = s.g.opts.Backend.Fetch(ctx, &ring.FetchRequest{Partitions: s.ringParts, MinBytes: m.MinBytes, MaxBytes: m.MaxBytes, MaxWait: wait})
		if err != nil {
			return s.fail(wire.OpFetch, corr, err, -1), nil
		}
	}

	// One buffer holds the frame's header, the head and every
	// partition's head; the records sit between those heads as file
	// ranges or the cache's own chunks.
	bp := s.buf()
	b := wire.AppendHeader(*bp, wire.OpFetch, 0)
	b = wire.AppendHead(b, ok(corr))
	b = wire.AppendU16(b, uint16(len(m.Partitions)))
	cuts := make([]int, 0, len(m.Partitions)+1)
	payload := 0
	ri := 0
	recs := make([]*ring.Records, len(m.Partitions))
	for i, p := range m.Partitions {
		fp := wire.FetchedPartition{TopicID: p.TopicID, Partition: p.Partition, Code: codes[i], HighWatermark: -1, LogStartOffset: -1}
		n := 0
		if codes[i] == 0 {
			pr := &res.Partitions[ri]
			ri++
			fp.Code, fp.HighWatermark, fp.LogStartOffset = codeFor(pr.Err), pr.HighWatermark, pr.LogStartOffset
			if pr.Err == nil {
				n = pr.Records.Size()
				recs[i] = &pr.Records
			}
		}
		b = wire.AppendFetchedHead(b, &fp, n)
		cuts = append(cuts, len(b))
		payload += n
	}
	wire.PutLength(b)
	// The header's length counts the records too.
	total := len(b) - wire.HeaderSize + payload + len(trailer)
	b[3], b[4], b[5], b[6] = byte(total>>24), byte(total>>16), byte(total>>8), byte(total)
	*bp = b

	resp := &gateways.Response{}
	prev := 0
	for i := range m.Partitions {
		resp.AddBytes(b[prev:cuts[i]])
		prev = cuts[i]
		if rc := recs[i]; rc != nil {
			if rc.File != nil {
				resp.AddFile(rc.File, rc.Pos, rc.Len)
			} else {
				resp.AddBytes(rc.Bytes)
				for _, more := range rc.More {
					resp.AddBytes(more)
				}
			}
		}
	}
	if len(m.Partitions) == 0 {
		resp.AddBytes(b)
	}
	resp.AddBytes(trailer)
	resp.OnRelease(func() {
		res.Release()
		s.g.bufs.Put(bp)
	})
	return resp, nil
}
