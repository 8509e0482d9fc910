package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminGroupsView: the admin view lists and describes classic,
// consumer and share groups with their members, assignments and offsets;
// a reset and a delete go through while a group has no members and are
// refused (NON_EMPTY_GROUP) while it has some.
func TestAdminGroupsView(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "av", 2)
	produceN(t, cl, "av", 0, 10)
	listGroups(t, cl) // the coordinator has loaded
	ctx := testCtx(t)
	g := e.gw

	topic, err := e.cluster.Topic(ctx, "av")
	if err != nil {
		t.Fatal(err)
	}
	// A classic group of offsets only, committed as a client would.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "classic", -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic, ot.TopicID = "av", topic.ID
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset = 0, 3
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	if resp, err := oc.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetCommit: %v %+v", err, resp)
	}

	// A consumer-protocol group with one member holding both partitions.
	c := &cgClient{t: t, cl: cl, group: "kip848", ids: map[string][16]byte{"av": topic.ID}}
	if r := c.beat("A", 0, []string{"av"}, nil); c.assigned(r).size() != 2 {
		t.Fatalf("consumer member: %+v", r)
	}

	// A share group with a start offset and no members.
	as := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	as.GroupID = "shared"
	st := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	st.Topic = "av"
	sp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	sp.Partition, sp.StartOffset = 1, 2
	st.Partitions = append(st.Partitions, sp)
	as.Topics = append(as.Topics, st)
	if resp, err := as.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterShareGroupOffsets: %v %+v", err, resp)
	}

	list, err := g.AdminListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, v := range list {
		types[v.ID] = v.Type
	}
	if types["classic"] != "classic" || types["kip848"] != "consumer" || types["shared"] != "share" {
		t.Errorf("listed types: %v", types)
	}

	v, err := g.AdminDescribeGroup(ctx, "kip848")
	if err != nil {
		t.Fatal(err)
	}
	if v.Type != "consumer" || len(v.Members) != 1 || v.Members[0].ID != "A" || len(v.Members[0].Assigned["av"]) != 2 {
		t.Errorf("consumer group: %+v", v)
	}
	if err := g.AdminCommitOffsets(ctx, "kip848", []GroupOffset{{"av", 0, 1}}); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("reset of a group with a member: %v, want NON_EMPTY_GROUP", err)
	}
	if err := g.AdminDeleteGroup(ctx, "kip848"); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("delete of a group with a member: %v, want NON_EMPTY_GROUP", err)
	}

	if err := g.AdminCommitOffsets(ctx, "classic", []GroupOffset{{"av", 0, 7}, {"av", 1, 1}}); err != nil {
		t.Fatal(err)
	}
	v, err = g.AdminDescribeGroup(ctx, "classic")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]int64{}
	for _, o := range v.Offsets {
		got[o.Partition] = o.Offset
	}
	if v.Type != "classic" || len(v.Members) != 0 || got[0] != 7 || got[1] != 1 {
		t.Errorf("classic group after the reset: %+v", v)
	}

	if err := g.AdminCommitOffsets(ctx, "shared", []GroupOffset{{"av", 1, 5}}); err != nil {
		t.Fatal(err)
	}
	v, err = g.AdminDescribeGroup(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if v.Type != "share" || len(v.Offsets) != 1 || v.Offsets[0] != (GroupOffset{"av", 1, 5}) {
		t.Errorf("share group after the reset: %+v", v)
	}

	for _, id := range []string{"classic", "shared"} {
		if err := g.AdminDeleteGroup(ctx, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
		if _, err := g.AdminDescribeGroup(ctx, id); !errors.Is(err, kerr.GroupIDNotFound) {
			t.Errorf("%s after the delete: %v, want GROUP_ID_NOT_FOUND", id, err)
		}
	}
	if err := g.AdminDeleteGroup(ctx, "never"); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("delete of an unknown group: %v", err)
	}
}
