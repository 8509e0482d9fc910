package cli

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore"
)

// storeStatsEvery is how often a store recounts what it reports with its
// heartbeats: the sums walk every partition's catalog records, too much
// work for each heartbeat, and the console needs no fresher figures.
const storeStatsEvery = 10 * time.Second

// storeStats keeps the figures a store reports to the controller with its
// heartbeats (controller.HeartbeatRequest.Stats), so that every node's
// /api/cluster shows every store's disk and cold bytes.
type storeStats struct {
	st   *logstore.Store
	cat  *catalog.Catalog
	log  *slog.Logger
	last atomic.Pointer[controller.StoreStats]
}

// get is MemberOptions.Stats: the last count, nil before the first.
func (s *storeStats) get() *controller.StoreStats { return s.last.Load() }

// run recounts every storeStatsEvery until ctx ends.
func (s *storeStats) run(ctx context.Context) error {
	t := time.NewTicker(storeStatsEvery)
	defer t.Stop()
	for {
		if err := s.count(ctx); err != nil && ctx.Err() == nil {
			s.log.Debug("counting the store's bytes", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *storeStats) count(ctx context.Context) error {
	parts, err := s.st.ListPartitions(ctx)
	if err != nil {
		return err
	}
	st := controller.StoreStats{Partitions: len(parts)}
	for _, p := range parts {
		st.DiskBytes += p.Size
		cold, _ := tierBytes(s.cat, false, p.Topic, p.Partition)
		st.ColdBytes += cold
	}
	s.last.Store(&st)
	return nil
}

// tierBytes sums a partition's catalog records: the bytes in the cold tier
// and, when tiering runs, those sealed but not uploaded yet (the tiering
// backlog).
func tierBytes(cat *catalog.Catalog, tiering bool, topic string, partition int32) (cold, backlog int64) {
	if cat == nil {
		return 0, 0
	}
	segs, err := cat.Segments(topic, partition)
	if err != nil {
		return 0, 0
	}
	for _, sg := range segs {
		switch sg.State {
		case catalog.StateRemote, catalog.StateLocalRemote:
			cold += sg.Bytes
		case catalog.StateSealed, catalog.StateUploading:
			if tiering {
				backlog += sg.Bytes
			}
		}
	}
	return cold, backlog
}
