package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/http/adminapi"
)

// remoteGroups serves the admin API's groups routes on a node that runs no
// Kafka gateway (a store, a controller): the group coordinators live in
// the cluster's Kafka gateways, so it asks them with a Kafka admin client,
// as kafka-consumer-groups would, bootstrapped from the gateways the
// controller lists. Resets and deletes go through OffsetCommit and
// DeleteGroups, which the coordinator refuses while the group has
// members, the same code paths as the in-process calls.
type remoteGroups struct {
	api controller.API
	// opts secure the client as listeners.kafka requires; optsErr says
	// why they could not be built (the routes then answer 503 with it).
	opts    []kgo.Opt
	optsErr error
	// refused names the client's principal in an authorization failure.
	refused func(error) error
	log     *slog.Logger

	mu struct {
		sync.Mutex
		kc  *kgo.Client
		adm *kadm.Client
	}
}

// seeds are the Kafka addresses of the live Kafka gateways.
func (r *remoteGroups) seeds(ctx context.Context) ([]string, error) {
	nodes, err := r.api.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes.Nodes {
		if addr := n.Addresses["kafka"]; n.Kind == controller.KindGateway && n.Live && addr != "" {
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out, nil
}

// admin returns the admin client, built on first use; the client then
// follows the gateways through Kafka metadata.
func (r *remoteGroups) admin(ctx context.Context) (*kadm.Client, error) {
	if r.optsErr != nil {
		return nil, fmt.Errorf("%w: this node's Kafka client for the groups: %v", adminapi.ErrUnavailable, r.optsErr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.adm != nil {
		return r.mu.adm, nil
	}
	seeds, err := r.seeds(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: listing the Kafka gateways: %v", adminapi.ErrUnavailable, err)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%w: no Kafka gateway is live, and the group coordinators run in them", adminapi.ErrUnavailable)
	}
	kc, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("aerostream-admin-api")}, r.opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: Kafka client of %v: %v", adminapi.ErrUnavailable, seeds, err)
	}
	r.log.Info("admin API groups through the Kafka gateways", "seeds", seeds)
	r.mu.kc, r.mu.adm = kc, kadm.NewClient(kc)
	return r.mu.adm, nil
}

func (r *remoteGroups) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.kc != nil {
		r.mu.kc.Close()
		r.mu.kc, r.mu.adm = nil, nil
	}
	return nil
}

// remoteErr maps a Kafka admin error onto the API's sentinels, as
// groupErr does the coordinator's, and names this node's principal when
// the Kafka listener refused it.
func (r *remoteGroups) remoteErr(err error) error {
	if err == nil {
		return nil
	}
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		err = se.Errs[0].Err
	}
	if r.refused != nil {
		err = r.refused(err)
	}
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("%w: %v", adminapi.ErrUnknownGroup, err)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Errorf("%w: %v", adminapi.ErrGroupNotEmpty, err)
	case errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.NotCoordinator),
		errors.Is(err, kgo.ErrClientClosed), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", adminapi.ErrUnavailable, err)
	}
	var ne interface{ Temporary() bool } // dial failures to every gateway
	if errors.As(err, &ne) || strings.Contains(err.Error(), "unable to dial") {
		return fmt.Errorf("%w: the Kafka gateways: %v", adminapi.ErrUnavailable, err)
	}
	return err
}

func (r *remoteGroups) list(ctx context.Context, adm *kadm.Client) (kadm.ListedGroups, error) {
	list, err := adm.ListGroups(ctx)
	if err != nil && len(list) == 0 {
		return nil, r.remoteErr(err)
	}
	if err != nil {
		// Some gateways answered: list their groups, and say which did not.
		r.log.Warn("listing groups: some Kafka gateways did not answer", "err", err)
	}
	return list, nil
}

// ListGroups implements adminapi.GroupSource.
func (r *remoteGroups) ListGroups(ctx context.Context) ([]adminapi.GroupSummary, error) {
	adm, err := r.admin(ctx)
	if err != nil {
		return nil, err
	}
	list, err := r.list(ctx, adm)
	if err != nil {
		return nil, err
	}
	out := make([]adminapi.GroupSummary, 0, len(list))
	for _, g := range list.Sorted() {
		out = append(out, adminapi.GroupSummary{Group: g.Group, Type: groupType(g.GroupType), State: g.State, Protocol: g.ProtocolType})
	}
	return out, nil
}

// groupType is ListGroups' group type, classic when a broker leaves it
// out (before v5).
func groupType(t string) string {
	if t == "" {
		return "classic"
	}
	return strings.ToLower(t)
}

// DescribeGroup implements adminapi.GroupSource: the group's type from
// ListGroups picks the describe call (DescribeGroups, ConsumerGroupDescribe
// or ShareGroupDescribe), and the offsets come from OffsetFetch (a share
// group's start offsets from DescribeShareGroupOffsets).
func (r *remoteGroups) DescribeGroup(ctx context.Context, id string) (adminapi.Group, error) {
	adm, err := r.admin(ctx)
	if err != nil {
		return adminapi.Group{}, err
	}
	list, err := r.list(ctx, adm)
	if err != nil {
		return adminapi.Group{}, err
	}
	lg, ok := list[id]
	if !ok {
		return adminapi.Group{}, fmt.Errorf("%w: group %s", adminapi.ErrUnknownGroup, id)
	}
	out := adminapi.Group{Group: id, Type: groupType(lg.GroupType), State: lg.State, Protocol: lg.ProtocolType}
	switch out.Type {
	case "share":
		ds, err := adm.DescribeShareGroups(ctx, id)
		if err != nil {
			return adminapi.Group{}, r.remoteErr(err)
		}
		d := ds[id]
		if d.Err != nil {
			return adminapi.Group{}, r.remoteErr(d.Err)
		}
		out.State, out.Protocol = d.GroupState, d.Assignor
		for _, m := range d.Members {
			out.Members = append(out.Members, adminapi.Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignments: assignments(m.Assignment)})
		}
		so, err := adm.DescribeShareGroupOffsets(ctx, id)
		if err != nil {
			return adminapi.Group{}, r.remoteErr(err)
		}
		for t, ps := range so[id].Offsets {
			for p, o := range ps {
				if o.Err == nil && o.StartOffset >= 0 {
					out.Offsets = append(out.Offsets, adminapi.CommittedOffset{Topic: t, Partition: p, Offset: o.StartOffset})
				}
			}
		}
		return out, nil
	case "consumer":
		ds, err := adm.DescribeConsumerGroups(ctx, id)
		if err != nil {
			return adminapi.Group{}, r.remoteErr(err)
		}
		d := ds[id]
		if d.Err != nil {
			return adminapi.Group{}, r.remoteErr(d.Err)
		}
		out.State, out.Protocol = d.State, d.AssignorName
		for _, m := range d.Members {
			out.Members = append(out.Members, adminapi.Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignments: assignments(m.Assignment)})
		}
	default:
		ds, err := adm.DescribeGroups(ctx, id)
		if err != nil {
			return adminapi.Group{}, r.remoteErr(err)
		}
		d := ds[id]
		if d.Err != nil {
			return adminapi.Group{}, r.remoteErr(d.Err)
		}
		out.State, out.Protocol = d.State, d.Protocol
		for _, m := range d.Members {
			am := adminapi.Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					am.Assignments = append(am.Assignments, adminapi.Assignment{Topic: t.Topic, Partitions: slices.Clone(t.Partitions)})
				}
			}
			out.Members = append(out.Members, am)
		}
	}
	offs, err := adm.FetchOffsets(ctx, id)
	if err != nil {
		return adminapi.Group{}, r.remoteErr(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out.Offsets = append(out.Offsets, adminapi.CommittedOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.At})
		}
	})
	return out, nil
}

// assignments lists a member's partitions by topic.
func assignments(ts kadm.TopicsSet) []adminapi.Assignment {
	var out []adminapi.Assignment
	for _, t := range ts.Sorted() {
		out = append(out, adminapi.Assignment{Topic: t.Topic, Partitions: t.Partitions})
	}
	return out
}

// CommitOffsets implements adminapi.GroupSource: OffsetCommit with
// generation -1, as kafka-consumer-groups --reset-offsets does (for a
// share group, AlterShareGroupOffsets). The coordinator refuses it while
// the group has members.
func (r *remoteGroups) CommitOffsets(ctx context.Context, id string, offs []adminapi.CommittedOffset) error {
	adm, err := r.admin(ctx)
	if err != nil {
		return err
	}
	var os kadm.Offsets
	for _, o := range offs {
		os.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	}
	list, err := r.list(ctx, adm)
	if err != nil {
		return err
	}
	if lg, ok := list[id]; ok && groupType(lg.GroupType) == "share" {
		resp, err := adm.AlterShareGroupOffsets(ctx, id, os)
		if err != nil {
			return r.remoteErr(err)
		}
		for _, ps := range resp {
			for _, p := range ps {
				if p != nil {
					return r.remoteErr(p)
				}
			}
		}
		return nil
	}
	resp, err := adm.CommitOffsets(ctx, id, os)
	if err != nil {
		return r.remoteErr(err)
	}
	return r.remoteErr(resp.Error())
}

// DeleteGroup implements adminapi.GroupSource through DeleteGroups.
func (r *remoteGroups) DeleteGroup(ctx context.Context, id string) error {
	adm, err := r.admin(ctx)
	if err != nil {
		return err
	}
	resp, err := adm.DeleteGroup(ctx, id)
	if err != nil {
		return r.remoteErr(err)
	}
	return r.remoteErr(resp.Err)
}

// partitionOffsets is a partition's log start, high watermark and last
// stable offset as the Kafka gateways list them, for a partition this
// node does not hold: lags and resets on a store need every partition's
// offsets, not only its own. Sizes are not known this way and stay 0.
func (r *remoteGroups) partitionOffsets(ctx context.Context, topic string, partition int32) (adminapi.PartitionStats, error) {
	adm, err := r.admin(ctx)
	if err != nil {
		return adminapi.PartitionStats{}, err
	}
	var st adminapi.PartitionStats
	for _, q := range []struct {
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
		to   *int64
	}{{adm.ListStartOffsets, &st.LogStart}, {adm.ListEndOffsets, &st.HighWatermark}, {adm.ListCommittedOffsets, &st.LastStable}} {
		offs, err := q.list(ctx, topic)
		if err != nil {
			return adminapi.PartitionStats{}, r.remoteErr(err)
		}
		o, ok := offs.Lookup(topic, partition)
		switch {
		case !ok:
			return adminapi.PartitionStats{}, fmt.Errorf("%w: %s/%d", adminapi.ErrUnknownTopic, topic, partition)
		case o.Err != nil:
			return adminapi.PartitionStats{}, fmt.Errorf("%w: %s/%d: %v", adminapi.ErrUnavailable, topic, partition, o.Err)
		}
		*q.to = o.Offset
	}
	return st, nil
}

// offsetAfter is the first offset of the partition at or after ts (Unix
// ms), -1 for none, as the Kafka gateways list it.
func (r *remoteGroups) offsetAfter(ctx context.Context, topic string, partition int32, ts int64) (int64, error) {
	adm, err := r.admin(ctx)
	if err != nil {
		return 0, err
	}
	offs, err := adm.ListOffsetsAfterMilli(ctx, ts, topic)
	if err != nil {
		return 0, r.remoteErr(err)
	}
	o, ok := offs.Lookup(topic, partition)
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: %s/%d", adminapi.ErrUnknownTopic, topic, partition)
	case o.Err != nil:
		return 0, fmt.Errorf("%w: %s/%d: %v", adminapi.ErrUnavailable, topic, partition, o.Err)
	}
	return o.Offset, nil
}
