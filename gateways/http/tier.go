package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// The tier catalog API behind `aerostream tier`: it runs in the store
// process, because the catalog (pebble) belongs to one process. Mount it
// at /v1/tier.

// TierOps is what the tier API asks of the store it runs in. Progress, when
// an operation reports it, is called with the units done and the total.
// Errors wrapping ErrTierDisabled or ErrUnknown* get 409 and 404.
type TierOps interface {
	// Segments lists the segments of topic ("" = every topic) and
	// partition (negative = every partition). A named topic or partition
	// the store does not hold is ErrUnknownTopic / ErrUnknownPartition.
	Segments(ctx context.Context, topic string, partition int32) ([]SegmentView, error)
	// Segment is the segment of topic/partition whose base offset is base.
	Segment(ctx context.Context, topic string, partition int32, base int64) (SegmentView, error)
	// Verify re-reads the remote objects of topic ("" = all) against the
	// catalog's checksums.
	Verify(ctx context.Context, topic string, progress Progress) ([]VerifyResult, error)
	// Offload seals the active segment of every partition of topic ("" =
	// all) and waits until everything sealed is uploaded.
	Offload(ctx context.Context, topic string, progress Progress) (OffloadResult, error)
	// Rehydrate brings the remote segments of a partition from offset
	// from on back to local disk.
	Rehydrate(ctx context.Context, topic string, partition int32, from int64, progress Progress) (RehydrateResult, error)
	// GC finds objects no catalog record references, older than minAge,
	// and deletes them unless dryRun.
	GC(ctx context.Context, dryRun bool, minAge time.Duration) (GCResult, error)
	// Restore rebuilds a topic's partitions on this node from the bucket.
	Restore(ctx context.Context, topic string, progress Progress) (RestoreResult, error)
}

// Progress reports how far a long operation is.
type Progress func(done, total int)

// SegmentView is a catalog record as `tier ls` and `tier describe` show it.
type SegmentView struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	BaseOffset   int64  `json:"base_offset"`
	EndOffset    int64  `json:"end_offset"`
	Bytes        int64  `json:"bytes"`
	MinTimestamp int64  `json:"min_timestamp"`
	MaxTimestamp int64  `json:"max_timestamp"`
	State        string `json:"state"`
	// Location is local, remote or local+remote.
	Location   string `json:"location"`
	LocalPath  string `json:"local_path,omitempty"`
	SegmentID  string `json:"segment_id,omitempty"`
	ObjectKey  string `json:"object_key,omitempty"`
	ObjectSize int64  `json:"object_size,omitempty"`
	Checksum   string `json:"checksum,omitempty"`
	ETag       string `json:"etag,omitempty"`
	Epoch      int32  `json:"epoch"`
	UploadedAt string `json:"uploaded_at,omitempty"` // RFC 3339
}

// VerifyResult is the check of one remote segment.
type VerifyResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int64  `json:"base_offset"`
	ObjectKey string `json:"object_key"`
	OK        bool   `json:"ok"`
	Problem   string `json:"problem,omitempty"`
}

// OffloadResult counts what an offload did.
type OffloadResult struct {
	PartitionsRolled int `json:"partitions_rolled"`
	Jobs             int `json:"jobs"`
}

// RehydrateResult counts the segments brought back.
type RehydrateResult struct {
	Segments int `json:"segments"`
}

// Orphan is an object in the bucket that no catalog record references.
type Orphan struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"last_modified"`
	Deleted      bool      `json:"deleted"`
}

// GCResult lists the orphans found (and deleted unless DryRun).
type GCResult struct {
	DryRun  bool     `json:"dry_run"`
	Orphans []Orphan `json:"orphans"`
}

// RestoreResult counts what a restore rebuilt.
type RestoreResult struct {
	Partitions       int `json:"partitions"`
	Segments         int `json:"segments"`
	UnlistedSegments int `json:"unlisted_segments"`
	Gaps             int `json:"gaps"`
}

// TierAPI is the tier catalog API over ops.
func TierAPI(ops TierOps, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	t := &tierAPI{ops: ops, logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /segments", t.segments)
	mux.HandleFunc("GET /segment", t.segment)
	mux.HandleFunc("POST /verify", t.verify)
	mux.HandleFunc("POST /offload", t.offload)
	mux.HandleFunc("POST /rehydrate", t.rehydrate)
	mux.HandleFunc("POST /gc", t.gc)
	mux.HandleFunc("POST /restore", t.restore)
	return mux
}

type tierAPI struct {
	ops    TierOps
	logger *slog.Logger
}

func (t *tierAPI) segments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	partition := int32(-1)
	if ps := q.Get("partition"); ps != "" {
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || p < 0 {
			httpError(w, http.StatusBadRequest, fmt.Errorf("partition %q is not a partition number", ps))
			return
		}
		partition = int32(p)
	}
	segs, err := t.ops.Segments(r.Context(), q.Get("topic"), partition)
	if err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	if segs == nil {
		segs = []SegmentView{}
	}
	writeJSON(w, http.StatusOK, segs)
}

// partitionArgs reads the topic and partition an operation on one
// partition needs; neither has a default.
func partitionArgs(r *http.Request) (string, int32, error) {
	q := r.URL.Query()
	topic := q.Get("topic")
	if topic == "" {
		return "", 0, errors.New("topic is required")
	}
	p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
	if err != nil || p < 0 {
		return "", 0, errors.New("partition (a partition number) is required")
	}
	return topic, int32(p), nil
}

func (t *tierAPI) segment(w http.ResponseWriter, r *http.Request) {
	topic, p, err := partitionArgs(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	base, err := strconv.ParseInt(r.URL.Query().Get("base"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, errors.New("base (a segment's base offset) is required"))
		return
	}
	v, err := t.ops.Segment(r.Context(), topic, p, base)
	if err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (t *tierAPI) verify(w http.ResponseWriter, r *http.Request) {
	s := newStream(w)
	res, err := t.ops.Verify(r.Context(), r.URL.Query().Get("topic"), s.progress)
	if res == nil {
		res = []VerifyResult{}
	}
	s.finish(res, err)
}

func (t *tierAPI) offload(w http.ResponseWriter, r *http.Request) {
	s := newStream(w)
	res, err := t.ops.Offload(r.Context(), r.URL.Query().Get("topic"), s.progress)
	s.finish(res, err)
}

func (t *tierAPI) rehydrate(w http.ResponseWriter, r *http.Request) {
	topic, p, err := partitionArgs(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	from, err := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, errors.New("from (the first offset to bring back) is required"))
		return
	}
	s := newStream(w)
	res, err := t.ops.Rehydrate(r.Context(), topic, p, from, s.progress)
	s.finish(res, err)
}

func (t *tierAPI) gc(w http.ResponseWriter, r *http.Request) {
	dry := r.URL.Query().Get("dry_run") != "false"
	minAge := time.Hour
	if s := r.URL.Query().Get("min_age_ms"); s != "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			httpError(w, http.StatusBadRequest, errors.New("min_age_ms must be a non-negative integer"))
			return
		}
		minAge = time.Duration(ms) * time.Millisecond
	}
	res, err := t.ops.GC(r.Context(), dry, minAge)
	if err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	res.DryRun = dry
	if res.Orphans == nil {
		res.Orphans = []Orphan{}
	}
	writeJSON(w, http.StatusOK, res)
}

func (t *tierAPI) restore(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	if topic == "" {
		httpError(w, http.StatusBadRequest, errors.New("topic is required"))
		return
	}
	s := newStream(w)
	res, err := t.ops.Restore(r.Context(), topic, s.progress)
	s.finish(res, err)
}

// statusOf maps an operation's error to its HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrTierDisabled):
		return http.StatusConflict
	case errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition), errors.Is(err, ErrUnknownSegment):
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

// stream answers a long operation in NDJSON: {"progress":{"done":n,
// "total":m}} lines, then one {"result":…} or {"error":"…"} line. The
// status line is written with the first line, so an operation that fails
// before it reports progress (tiering disabled, an unknown topic) gets a
// plain error with its own status instead of a 200.
type stream struct {
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
}

func newStream(w http.ResponseWriter) *stream {
	return &stream{w: w, enc: json.NewEncoder(w)}
}

func (s *stream) start() {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
	}
}

func (s *stream) progress(done, total int) {
	s.start()
	_ = s.enc.Encode(map[string]any{"progress": map[string]int{"done": done, "total": total}})
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *stream) finish(result any, err error) {
	if err != nil && !s.started {
		httpError(s.w, statusOf(err), err)
		return
	}
	s.start()
	if err != nil {
		_ = s.enc.Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = s.enc.Encode(map[string]any{"result": result})
}
