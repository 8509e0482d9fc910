package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicSet is the run's topics with their partition counts as the broker
// reports them, and which ones this run created.
type topicSet struct {
	names      []string
	partitions map[string]int32
	created    map[string]bool
}

// allCreated reports whether every topic is new, so consumers can read
// from the start without missing the first messages.
func (ts *topicSet) allCreated() bool { return len(ts.created) == len(ts.names) }

// ensureTopics creates the missing topics (when allowed) and waits until
// every partition of every topic has a leader.
func ensureTopics(ctx context.Context, adm *kadm.Client, cfg *Config, names []string, timeout time.Duration) (*topicSet, error) {
	ts := &topicSet{names: names, partitions: map[string]int32{}, created: map[string]bool{}}
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var missing []string
	for _, t := range names {
		d, ok := details[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			missing = append(missing, t)
			continue
		}
		if d.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", t, d.Err)
		}
	}
	if len(missing) > 0 {
		if !cfg.CreateTopics {
			return nil, fmt.Errorf("%w: topics %v do not exist and topic creation is off", ErrNotReady, missing)
		}
		var configs map[string]*string
		for k, v := range cfg.TopicConfigs {
			if configs == nil {
				configs = map[string]*string{}
			}
			configs[k] = &v
		}
		resp, err := adm.CreateTopics(ctx, int32(cfg.Partitions), int16(cfg.ReplicationFactor), configs, missing...)
		if err != nil {
			return nil, fmt.Errorf("creating topics: %w", err)
		}
		for _, t := range missing {
			r := resp[t]
			switch {
			case r.Err == nil:
				ts.created[t] = true
			case errors.Is(r.Err, kerr.TopicAlreadyExists):
				// Someone else made it meanwhile: use it, never delete it.
			default:
				return ts, fmt.Errorf("creating topic %s: %w (%s)", t, r.Err, r.ErrMessage)
			}
		}
	}

	deadline := time.Now().Add(timeout)
	for {
		ready, why, err := topicsReady(ctx, adm, ts)
		if err != nil {
			return ts, err
		}
		if ready {
			return ts, nil
		}
		if time.Now().After(deadline) {
			return ts, fmt.Errorf("%w: %s after %s", ErrNotReady, why, timeout)
		}
		select {
		case <-ctx.Done():
			return ts, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// topicsReady records partition counts and reports whether all partitions
// have a leader, and if not, why.
func topicsReady(ctx context.Context, adm *kadm.Client, ts *topicSet) (bool, string, error) {
	details, err := adm.ListTopics(ctx, ts.names...)
	if err != nil {
		return false, "", fmt.Errorf("listing topics: %w", err)
	}
	for _, t := range ts.names {
		d, ok := details[t]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return false, fmt.Sprintf("topic %s has no metadata (%v)", t, d.Err), nil
		}
		for p, pd := range d.Partitions {
			if pd.Err != nil || pd.Leader < 0 {
				return false, fmt.Sprintf("partition %s/%d has no leader (%v)", t, p, pd.Err), nil
			}
		}
		ts.partitions[t] = int32(len(d.Partitions))
	}
	return true, "", nil
}

// deleteCreated deletes the topics this run created.
func deleteCreated(ctx context.Context, adm *kadm.Client, ts *topicSet) error {
	var names []string
	for _, t := range ts.names {
		if ts.created[t] {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return nil
	}
	resp, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("deleting topics: %w", err)
	}
	return resp.Error()
}
