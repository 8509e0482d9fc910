package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd"
)

// The HTTP admin API (listeners.http): /metrics, /debug/pprof, and the tier catalog
// operations behind `aerostream tier …` under /v1/tier/. They run in the
// store process because the catalog (pebble) belongs to one process.
//
// Long operations stream NDJSON: {"progress":{"done":n,"total":m}} lines,
// then one {"result":…} or {"error":"…"} line, so the CLI can draw a
// progress bar without polling.

type adminServer struct {
	st     *logstore.Store
	cat    *catalog.Catalog
	tier   *tierStack // nil when tiered storage is disabled
	reg    *prometheus.Registry
	logger *slog.Logger
	// restore recreates a topic's metadata after its partitions were
	// restored (the controller, when one runs); nil = store only.
	restore func(ctx context.Context, topic string, partitions int32) error
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func (a *adminServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
	// pprof, for profiling the hot paths under `aerostream bench`.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /v1/tier/segments", a.segments)
	mux.HandleFunc("GET /v1/tier/segment", a.segment)
	mux.HandleFunc("POST /v1/tier/verify", a.verify)
	mux.HandleFunc("POST /v1/tier/offload", a.offload)
	mux.HandleFunc("POST /v1/tier/rehydrate", a.rehydrate)
	mux.HandleFunc("POST /v1/tier/gc", a.gc)
	mux.HandleFunc("POST /v1/tier/restore", a.restoreTopic)
	return mux
}

// serve runs the admin API on ln until ctx ends.
func (a *adminServer) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		return nil
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

// stream writes NDJSON progress lines and a final result.
type stream struct {
	w   http.ResponseWriter
	enc *json.Encoder
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	return &stream{w: w, enc: json.NewEncoder(w)}
}

func (s *stream) progress(done, total int) {
	_ = s.enc.Encode(map[string]any{"progress": map[string]int{"done": done, "total": total}})
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *stream) finish(result any, err error) {
	if err != nil {
		_ = s.enc.Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = s.enc.Encode(map[string]any{"result": result})
}

func (a *adminServer) needTier(w http.ResponseWriter) bool {
	if a.tier == nil || a.tier.daemon == nil {
		httpError(w, http.StatusConflict, errors.New("tiered storage is disabled on this node (tiered_storage.enabled = false)"))
		return false
	}
	return true
}

// segmentView is a catalog record as `tier ls`, `tier describe` and the
// admin API show it.
type segmentView struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	BaseOffset   int64  `json:"base_offset"`
	EndOffset    int64  `json:"end_offset"`
	Bytes        int64  `json:"bytes"`
	MinTimestamp int64  `json:"min_timestamp"`
	MaxTimestamp int64  `json:"max_timestamp"`
	State        string `json:"state"`
	Location     string `json:"location"`
	LocalPath    string `json:"local_path,omitempty"`
	SegmentID    string `json:"segment_id,omitempty"`
	ObjectKey    string `json:"object_key,omitempty"`
	ObjectSize   int64  `json:"object_size,omitempty"`
	Checksum     string `json:"checksum,omitempty"`
	ETag         string `json:"etag,omitempty"`
	Epoch        int32  `json:"epoch"`
	UploadedAt   string `json:"uploaded_at,omitempty"`
}

func viewOf(r catalog.Segment) segmentView {
	v := segmentView{Topic: r.Topic, Partition: r.Partition, BaseOffset: r.BaseOffset, EndOffset: r.EndOffset,
		Bytes: r.Bytes, MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp, State: r.State.String(),
		LocalPath: r.LocalPath, SegmentID: r.SegmentID, ObjectKey: r.ObjectKey, ObjectSize: r.ObjectSize,
		Checksum: r.Checksum, ETag: r.ETag, Epoch: r.Epoch}
	switch {
	case r.LocalPath != "" && r.ObjectKey != "":
		v.Location = "local+remote"
	case r.ObjectKey != "":
		v.Location = "remote"
	default:
		v.Location = "local"
	}
	if r.UploadedAt > 0 {
		v.UploadedAt = time.Unix(0, r.UploadedAt).UTC().Format(time.RFC3339)
	}
	return v
}

func (a *adminServer) segments(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	parts, err := a.cat.Partitions()
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	out := []segmentView{}
	for _, p := range parts {
		if topic != "" && p.Topic != topic {
			continue
		}
		if ps := r.URL.Query().Get("partition"); ps != "" && ps != strconv.Itoa(int(p.Partition)) {
			continue
		}
		recs, err := a.st.Segments(r.Context(), p.Topic, p.Partition)
		if err != nil {
			httpError(w, http.StatusInternalServerError, err)
			return
		}
		// The catalog records the active segment when it is created and
		// again when it seals, not on every append; its live end and size
		// come from the partition.
		info, ierr := a.st.DescribePartition(r.Context(), p.Topic, p.Partition)
		var sealedLocal int64
		for _, rec := range recs {
			if rec.State != catalog.StateActive && rec.LocalPath != "" {
				sealedLocal += rec.Bytes
			}
		}
		for _, rec := range recs {
			v := viewOf(rec)
			if rec.State == catalog.StateActive && ierr == nil {
				v.EndOffset, v.Bytes = info.LogEndOffset, info.Size-sealedLocal
			}
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func partitionArgs(r *http.Request) (string, int32, error) {
	topic := r.URL.Query().Get("topic")
	p, err := strconv.ParseInt(r.URL.Query().Get("partition"), 10, 32)
	if topic == "" || err != nil {
		return "", 0, errors.New("topic and partition are required")
	}
	return topic, int32(p), nil
}

func (a *adminServer) segment(w http.ResponseWriter, r *http.Request) {
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
	rec, err := a.cat.GetSegment(topic, p, base)
	if errors.Is(err, catalog.ErrNotFound) {
		httpError(w, http.StatusNotFound, fmt.Errorf("no segment %s/%d@%d", topic, p, base))
		return
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(rec))
}

func (a *adminServer) verify(w http.ResponseWriter, r *http.Request) {
	if !a.needTier(w) {
		return
	}
	s := newStream(w)
	res, err := a.tier.daemon.Verify(r.Context(), r.URL.Query().Get("topic"), s.progress)
	s.finish(res, err)
}

// offload seals the active segment of every partition (of one topic, or
// all), queues their upload and waits until the queue is empty.
func (a *adminServer) offload(w http.ResponseWriter, r *http.Request) {
	if !a.needTier(w) {
		return
	}
	topic := r.URL.Query().Get("topic")
	infos, err := a.st.ListPartitions(r.Context())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	s := newStream(w)
	rolled := 0
	for _, p := range infos {
		if topic != "" && p.Topic != topic {
			continue
		}
		if err := a.st.RollPartition(r.Context(), p.Topic, p.Partition); err != nil {
			s.finish(nil, err)
			return
		}
		rolled++
	}
	d := a.tier.daemon
	d.Rescan(r.Context())
	total := d.Backlog()
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	drained := make(chan error, 1)
	go func() { drained <- d.Drain(ctx) }()
	for {
		select {
		case err := <-drained:
			if err == nil {
				err = a.st.RunRetention(r.Context())
			}
			s.progress(total, total)
			s.finish(map[string]int{"partitions_rolled": rolled, "jobs": total}, err)
			return
		case <-tick.C:
			s.progress(total-d.Backlog(), total)
		}
	}
}

func (a *adminServer) rehydrate(w http.ResponseWriter, r *http.Request) {
	if !a.needTier(w) {
		return
	}
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
	n, err := a.tier.daemon.Rehydrate(r.Context(), a.st, topic, p, from, s.progress)
	s.finish(map[string]int{"segments": n}, err)
}

func (a *adminServer) gc(w http.ResponseWriter, r *http.Request) {
	if !a.needTier(w) {
		return
	}
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
	orphans, err := a.tier.daemon.GC(r.Context(), dry, minAge)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	if orphans == nil {
		orphans = []tierd.Orphan{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"dry_run": dry, "orphans": orphans})
}

// restoreTopic rebuilds a topic's partitions on this (empty) node from the
// bucket: its manifests and the segments uploaded after them
// (tierd.ReadManifests).
func (a *adminServer) restoreTopic(w http.ResponseWriter, r *http.Request) {
	if !a.needTier(w) {
		return
	}
	topic := r.URL.Query().Get("topic")
	if topic == "" {
		httpError(w, http.StatusBadRequest, errors.New("topic is required"))
		return
	}
	s := newStream(w)
	ms, err := a.tier.daemon.Manifests(r.Context(), topic)
	if err == nil && len(ms) == 0 {
		err = fmt.Errorf("nothing of topic %q in the bucket: no manifest, no segment", topic)
	}
	if err != nil {
		s.finish(nil, err)
		return
	}
	segs, unlisted, gaps := 0, 0, 0
	for i, m := range ms {
		if err := a.st.RestorePartition(r.Context(), m.Topic, m.Partition, logstore.PartitionConfig{}, m.LogStartOffset, m.Records()); err != nil {
			s.finish(nil, fmt.Errorf("restore %s/%d: %w", m.Topic, m.Partition, err))
			return
		}
		segs += len(m.Segments)
		unlisted += m.Unlisted
		gaps += len(m.Gaps)
		if m.Unlisted > 0 {
			a.logger.Info("tier restore: segments newer than their manifest taken from the bucket",
				"topic", m.Topic, "partition", m.Partition, "segments", m.Unlisted)
		}
		for _, g := range m.Gaps {
			a.logger.Warn("tier restore: offsets missing from the bucket; consumers skip them",
				"topic", m.Topic, "partition", m.Partition, "from", g.From, "to", g.To)
		}
		s.progress(i+1, len(ms))
	}
	if a.restore != nil {
		if err := a.restore(r.Context(), topic, int32(len(ms))); err != nil {
			s.finish(nil, fmt.Errorf("register topic %s: %w", topic, err))
			return
		}
	}
	s.finish(map[string]int{"partitions": len(ms), "segments": segs, "unlisted_segments": unlisted, "gaps": gaps}, nil)
}
