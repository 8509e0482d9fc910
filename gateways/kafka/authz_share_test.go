package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// TestShareGroupACLs: the share-group keys need READ on the group (DELETE
// to delete offsets, DESCRIBE to describe) and READ on each topic fetched,
// acknowledged or reset; a denied topic fails only its own partitions.
func TestShareGroupACLs(t *testing.T) {
	e := newSecEnv(t, 0)
	ctx := testCtx(t)
	adm := kadm.NewClient(scramClient(t, e.addr, "admin", "admin-secret"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "orders", "secret"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "orders", "secret")
	if err != nil {
		t.Fatal(err)
	}
	allow := func(rt, name, op string) auth.ACL {
		return auth.ACL{ResourceType: rt, ResourceName: name, PatternType: auth.PatternLiteral, Principal: "User:ANONYMOUS",
			Host: "*", Operation: op, Permission: auth.Allow}
	}
	if _, err := e.sec.CreateACLs(ctx, []auth.ACL{allow(auth.ResourceGroup, "g1", auth.OpRead), allow(auth.ResourceTopic, "orders", auth.OpRead)}); err != nil {
		t.Fatal(err)
	}
	s := &session{g: e.gw}
	ask := func(key int16, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := e.gw.authorized(ctx, &reqCtx{s: s, key: key, version: req.GetVersion(), req: req})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.SubscribedTopicNames = 1, "g2", []string{"orders"}
	if r := ask(76, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("heartbeat to g2: code %d, want GROUP_AUTHORIZATION_FAILED", r.ErrorCode)
	}
	hb.GroupID, hb.SubscribedTopicNames = "g1", []string{"orders", "secret"}
	if r := ask(76, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("heartbeat subscribing to secret: code %d, want TOPIC_AUTHORIZATION_FAILED", r.ErrorCode)
	}

	sf := kmsg.NewPtrShareFetchRequest()
	sf.Version, sf.GroupID = 1, kmsg.StringPtr("g1")
	for _, name := range []string{"orders", "secret"} {
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = td[name].ID
		ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		sf.Topics = append(sf.Topics, ft)
	}
	r := ask(78, sf).(*kmsg.ShareFetchResponse)
	codes := map[[16]byte]int16{}
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			codes[rt.TopicID] = p.ErrorCode
		}
	}
	if codes[td["secret"].ID] != kerr.TopicAuthorizationFailed.Code || codes[td["orders"].ID] == kerr.TopicAuthorizationFailed.Code {
		t.Errorf("share fetch: codes %v, want only secret refused", codes)
	}
	sf.GroupID = kmsg.StringPtr("g2")
	if r := ask(78, sf).(*kmsg.ShareFetchResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("share fetch for g2: code %d", r.ErrorCode)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "g1"
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = "orders"
	del.Topics = append(del.Topics, dt)
	if r := ask(92, del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("delete offsets without DELETE on g1: code %d", r.ErrorCode)
	}

	alt := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alt.GroupID = "g1"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "secret"
	at.Partitions = append(at.Partitions, kmsg.NewAlterShareGroupOffsetsRequestTopicPartition())
	alt.Topics = append(alt.Topics, at)
	ar := ask(91, alt).(*kmsg.AlterShareGroupOffsetsResponse)
	if len(ar.Topics) != 1 || ar.Topics[0].Topic != "secret" || ar.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alter offsets of secret: %+v", ar.Topics)
	}

	desc := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	desc.Groups = append(desc.Groups, kmsg.DescribeShareGroupOffsetsRequestGroup{GroupID: "g1"}, kmsg.DescribeShareGroupOffsetsRequestGroup{GroupID: "g2"})
	dr := ask(90, desc).(*kmsg.DescribeShareGroupOffsetsResponse)
	got := map[string]int16{}
	for _, gr := range dr.Groups {
		got[gr.GroupID] = gr.ErrorCode
	}
	if got["g2"] != kerr.GroupAuthorizationFailed.Code || got["g1"] == kerr.GroupAuthorizationFailed.Code {
		t.Errorf("describe offsets: %v, want only g2 refused (READ implies DESCRIBE on g1)", got)
	}
	sd := kmsg.NewPtrShareGroupDescribeRequest()
	sd.GroupIDs = []string{"g2"}
	if r := ask(77, sd).(*kmsg.ShareGroupDescribeResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("describe g2: %+v", r.Groups)
	}
}
