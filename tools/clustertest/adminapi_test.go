package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterAdminAPIOnAStore: a store's REST admin API answers for the
// whole cluster. /api/cluster shows the other stores' disk bytes (they
// report them to the controller with their heartbeats), and the groups
// routes, whose coordinators live in the Kafka gateways, are served
// through the gateways rather than refused.
func TestClusterAdminAPIOnAStore(t *testing.T) {
	bin := gate(t)
	c := newCluster(t, bin, storeIDs[:2], gatewayIDs[:1])
	httpAddr := freeAddr(t)
	const admID = 13
	p := c.newProc(fmt.Sprintf("store-%d", admID), "store", "--controller.node_id", strconv.Itoa(admID),
		"--controller.join", c.ctlAddr, "--ring-listen", freeAddr(t), "--data-dir", c.storeDir(admID),
		"--http-listen", httpAddr, "--kafka-listen", "", "--native-listen", "")
	c.stores[admID] = p
	p.start(t)
	c.waitMembers(90 * time.Second)

	const topic, group = "adm", "adm-group"
	gw := gatewayIDs[0]
	c.createTopic(topic, 3, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := c.kgoClient(gw, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprintf("value-%d", i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	cons := c.kgoClient(gw, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 10 && ctx.Err() == nil {
		got += cons.PollFetches(ctx).NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close() // leaves the group: it is empty, so it may be deleted

	get := func(path string, v any) (int, string) {
		resp, err := c.http.Get("http://" + httpAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if v != nil && resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, v); err != nil {
				return 0, err.Error()
			}
		}
		return resp.StatusCode, string(b)
	}

	holders := map[int32]bool{}
	md := c.mustMetadata()
	for _, tp := range md.Topics {
		if tp.Name == topic {
			for _, pi := range tp.Partitions {
				holders[pi.Leader] = true
			}
		}
	}
	c.waitFor("store 13's /api/cluster to show every holding store's disk bytes", 60*time.Second, func() (bool, string) {
		var cl struct {
			Stores []struct {
				ID        int32 `json:"id"`
				DiskBytes int64 `json:"disk_bytes"`
			} `json:"stores"`
		}
		code, body := get("/api/cluster", &cl)
		if code != http.StatusOK {
			return false, body
		}
		ok := len(cl.Stores) == 3
		for _, s := range cl.Stores {
			if holders[s.ID] && s.DiskBytes == 0 {
				ok = false
			}
		}
		return ok, fmt.Sprintf("holders %v: %s", holders, body)
	})

	c.waitFor("store 13's /api/groups to list the group", 60*time.Second, func() (bool, string) {
		var gs struct {
			Groups []struct {
				Group string `json:"group"`
			} `json:"groups"`
		}
		code, body := get("/api/groups", &gs)
		found := false
		for _, g := range gs.Groups {
			found = found || g.Group == group
		}
		return code == http.StatusOK && found, body
	})
	// Each partition's end comes from the store holding it, or through
	// the gateways for those it does not hold: 10 records each.
	var lag struct {
		Partitions []struct {
			Partition int32 `json:"partition"`
			End       int64 `json:"end"`
		} `json:"partitions"`
	}
	code, body := get("/api/lag?group="+group, &lag)
	if code != http.StatusOK || len(lag.Partitions) == 0 {
		t.Fatalf("/api/lag: %d %s", code, body)
	}
	for _, p := range lag.Partitions {
		if p.End != 10 {
			t.Errorf("/api/lag: partition %d ends at %d, want 10: %s", p.Partition, p.End, body)
		}
	}
	if code, body := get("/api/groups/nope", nil); code != http.StatusNotFound {
		t.Errorf("/api/groups/nope: %d %s, want 404", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://"+httpAddr+"/api/groups/"+group, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /api/groups/%s: %d %s", group, resp.StatusCode, b)
	}
	if code, body := get("/api/groups/"+group, nil); code != http.StatusNotFound {
		t.Errorf("after the delete: %d %s, want 404", code, body)
	}
}
