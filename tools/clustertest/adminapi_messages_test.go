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

// TestClusterAdminAPIMessagesOnAStore: a store's message inspector reads
// the partitions other stores hold, through the Kafka gateways, with the
// same JSON (keys, values, headers, offsets) as for its own, bounded by
// limit, by offset or by timestamp; an offset past the log is still a
// 416.
func TestClusterAdminAPIMessagesOnAStore(t *testing.T) {
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

	const topic, parts, perPart = "adm-msgs", 6, 5
	gw := gatewayIDs[0]
	c.createTopic(topic, parts, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := c.kgoClient(gw, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer prod.Close()
	for i := range parts * perPart {
		part := int32(i % parts)
		r := &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprintf("k-%d-%d", part, i/parts)),
			Value:   []byte(fmt.Sprintf("v-%d-%d", part, i/parts)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprintf("hv-%d", i/parts))}}}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// A partition store 13 does not hold (RF 1: its leader is its only
	// replica).
	remote := int32(-1)
	md := c.mustMetadata()
	ti, _ := findTopic(md, topic)
	for _, pi := range ti.Partitions {
		if pi.Leader != admID {
			remote = pi.Partition
			break
		}
	}
	if remote < 0 {
		t.Fatalf("store %d leads every partition of %s: %+v", admID, topic, ti.Partitions)
	}

	type answer struct {
		Messages []struct {
			Offset    int64 `json:"offset"`
			Timestamp int64 `json:"timestamp"`
			Key       struct {
				Encoding string `json:"encoding"`
				Text     string `json:"text"`
			} `json:"key"`
			Value struct {
				Encoding string `json:"encoding"`
				Text     string `json:"text"`
			} `json:"value"`
			Headers []struct {
				Key   string `json:"key"`
				Value struct {
					Text string `json:"text"`
				} `json:"value"`
			} `json:"headers"`
		} `json:"messages"`
		NextOffset    int64 `json:"next_offset"`
		HighWatermark int64 `json:"high_watermark"`
	}
	get := func(query string) (int, answer, string) {
		var a answer
		resp, err := c.http.Get(fmt.Sprintf("http://%s/api/topics/%s/messages?partition=%d&%s", httpAddr, topic, remote, query))
		if err != nil {
			return 0, a, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, &a); err != nil {
				return 0, a, err.Error()
			}
		}
		return resp.StatusCode, a, string(b)
	}

	code, a, body := get("offset=1&limit=3")
	if code != http.StatusOK {
		t.Fatalf("partition %d held by another store: %d %s", remote, code, body)
	}
	if len(a.Messages) != 3 || a.NextOffset != 4 || a.HighWatermark != perPart {
		t.Fatalf("offset=1&limit=3: %d messages, next %d, high watermark %d, want 3, 4, %d: %s",
			len(a.Messages), a.NextOffset, a.HighWatermark, perPart, body)
	}
	for i, m := range a.Messages {
		n := i + 1
		switch {
		case m.Offset != int64(n):
			t.Errorf("message %d: offset %d", i, m.Offset)
		case m.Key.Text != fmt.Sprintf("k-%d-%d", remote, n) || m.Value.Text != fmt.Sprintf("v-%d-%d", remote, n):
			t.Errorf("message %d: key %q value %q", i, m.Key.Text, m.Value.Text)
		case m.Value.Encoding != "utf8":
			t.Errorf("message %d: value encoding %q, want utf8", i, m.Value.Encoding)
		case len(m.Headers) != 1 || m.Headers[0].Key != "h" || m.Headers[0].Value.Text != fmt.Sprintf("hv-%d", n):
			t.Errorf("message %d: headers %+v", i, m.Headers)
		case m.Timestamp <= 0:
			t.Errorf("message %d: timestamp %d", i, m.Timestamp)
		}
	}

	// By time: from the third record's timestamp on.
	code, b, body := get(fmt.Sprintf("timestamp=%d&limit=10", a.Messages[1].Timestamp))
	if code != http.StatusOK || len(b.Messages) == 0 || b.Messages[0].Offset > 2 || b.Messages[len(b.Messages)-1].Offset != perPart-1 {
		t.Errorf("timestamp=%d: %d %s", a.Messages[1].Timestamp, code, body)
	}
	// Without a position, the latest records.
	if code, l, body := get("limit=2"); code != http.StatusOK || len(l.Messages) != 2 || l.Messages[0].Offset != perPart-2 {
		t.Errorf("limit=2: %d %s", code, body)
	}
	if code, _, body := get("offset=100"); code != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("offset=100: %d %s, want 416", code, body)
	}
}
