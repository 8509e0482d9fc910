package cli

import (
	"context"
	"strings"

	"github.com/aerostream/aerostream/logstore/ring"
)

// ProduceBatch counts what a batched produce appends, as Produce does;
// without it the embedded backend's would run uncounted.
func (m *meteredBackend) ProduceBatch(ctx context.Context, parts []ring.ProducePart) {
	var small [32][2]int64
	sizes := small[:0]
	for i := range parts {
		// Counted before the append patches the batch.
		sizes = append(sizes, [2]int64{int64(len(parts[i].Records)), batchRecords(parts[i].Records)})
	}
	m.Backend.ProduceBatch(ctx, parts)
	for i := range parts {
		if parts[i].Err == nil && !strings.HasPrefix(parts[i].Topic, "__") {
			m.produceBytes.Add(float64(sizes[i][0]))
			m.produceRecords.Add(float64(sizes[i][1]))
		}
	}
}
