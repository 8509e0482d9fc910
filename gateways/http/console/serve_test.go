package console

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The real node: `aerostream serve` built from this tree and run as a
// process (this package may not import tools/), with data produced and a
// group committed through franz-go on its Kafka port.

var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func buildAerostream(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "aerostream-console-bin-")
		if binary.err != nil {
			return
		}
		afterAll = append(afterAll, func() { os.RemoveAll(binary.dir) })
		binary.path = filepath.Join(binary.dir, "aerostream")
		cmd := exec.Command("go", "build", "-o", binary.path, "github.com/aerostream/aerostream/tools/aerostream")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("building aerostream: %w\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// node is a running `aerostream serve`.
type node struct {
	httpURL, kafkaAddr string
	mu                 sync.Mutex
	log                []string
}

func (n *node) logText() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.log, "\n")
}

// serve starts `aerostream serve` on loopback ports and waits until its
// Kafka gateway has loaded committed offsets, the last part to come up.
func serve(t *testing.T) *node {
	t.Helper()
	bin := buildAerostream(t)
	n := &node{kafkaAddr: freeAddr(t)}
	cmd := exec.Command(bin, "serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--ring-listen", "127.0.0.1:0",
		"--controller-listen", freeAddr(t), "--kafka-listen", n.kafkaAddr, "--native-listen", freeAddr(t))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AEROSTREAM_LISTENERS_HTTP=127.0.0.1:0", "AEROSTREAM_LISTENERS_SCHEMA_REGISTRY=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	httpRe := regexp.MustCompile(`msg=running .*http_addr=(\S+)`)
	ready := make(chan struct{})
	exited := make(chan error, 1)
	var httpAddr string
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		loaded, running := false, false
		for sc.Scan() {
			line := sc.Text()
			n.mu.Lock()
			n.log = append(n.log, line)
			n.mu.Unlock()
			if m := httpRe.FindStringSubmatch(line); m != nil && !running {
				httpAddr, running = m[1], true
			}
			if strings.Contains(line, `msg="committed offsets loaded"`) {
				loaded = true
			}
			if loaded && running && ready != nil {
				close(ready)
				ready = nil
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	wait := ready
	select {
	case <-wait:
	case err := <-exited:
		exited <- err
		t.Fatalf("serve exited (%v) before it was ready:\n%s", err, n.logText())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve not ready within two minutes:\n%s", n.logText())
	}
	n.httpURL = "http://" + httpAddr
	return n
}

// seed creates topic orders (3 partitions), produces 5 records to
// partition 0 and 2 to partition 1, and commits group billing at 2 and 1:
// a lag of 3 and 1.
func seed(t *testing.T, ctx context.Context, kafkaAddr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatalf("create topic orders: %v", err)
	}
	recs := []*kgo.Record{
		{Partition: 0, Value: []byte(xss)},
		{Partition: 0, Key: []byte("customer-7"), Value: []byte(`{"order_id":"ORD-1001","amount":99.5}`),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc-123")}}},
		{Partition: 0, Value: []byte{0x00, 0xff, 0x10}},
		{Partition: 0, Value: []byte("order-3")},
		{Partition: 0, Value: []byte("order-4")},
		{Partition: 1, Value: []byte("p1-0")},
		{Partition: 1, Value: []byte("p1-1")},
	}
	for _, r := range recs {
		r.Topic = "orders"
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	var offs kadm.Offsets
	offs.AddOffset("orders", 0, 2, -1)
	offs.AddOffset("orders", 1, 1, -1)
	resp, err := adm.CommitOffsets(ctx, "billing", offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit group billing: %v", err)
	}
	return adm
}

// lagByPartition reads the group page's offsets table as partition -> lag.
func lagByPartition(tb *tab) map[string]string {
	tb.t.Helper()
	rows := evalAs[[][]string](tb, `Array.from(document.querySelectorAll('table.offsets tbody tr')).map(function (tr) {
		return [tr.querySelector('td[data-col=topic]').textContent, tr.querySelector('td[data-col=partition]').textContent, tr.querySelector('td[data-col=lag]').textContent];
	})`)
	out := map[string]string{}
	for _, r := range rows {
		if r[0] == "orders" {
			out[r[1]] = r[2]
		}
	}
	return out
}

// TestConsoleAgainstServe loads every page against a real `aerostream
// serve` with data and checks what an operator looks for: the node and
// its leadership, the topic, a message's value, the group's lag as a
// number; then changes a config, resets the group and deletes it from the
// pages and checks the node through Kafka's own admin API.
func TestConsoleAgainstServe(t *testing.T) {
	if os.Getenv("CONSOLE_TESTS") == "" {
		t.Skip("builds and runs aerostream serve in a browser: make test-console runs it (CONSOLE_TESTS=1), so make test-unit does not repeat it")
	}
	markFailed(t)
	start := time.Now()
	tb := newTab(t, "")
	buildAerostream(t)
	t.Logf("aerostream built in %v", time.Since(start).Round(time.Millisecond))
	n := serve(t)
	t.Logf("serve ready after %v", time.Since(start).Round(time.Millisecond))
	tb.base = n.httpURL
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := seed(t, ctx, n.kafkaAddr)
	defer func() {
		if t.Failed() {
			t.Logf("serve log:\n%s", n.logText())
		}
	}()

	page := func(path string) {
		t.Helper()
		if st := tb.open(path); st != "ready" {
			tb.shot("failed")
			t.Fatalf("%s: %s: %s", path, st, tb.text("#error"))
		}
	}

	page("/")
	if live := tb.column("stores", "live"); len(live) == 0 || live[0] != "yes" {
		t.Errorf("stores live: %q", live)
	}
	if topics := tb.column("leadership", "topic"); !contains(topics, "orders") {
		t.Errorf("leadership lists %q, not orders", topics)
	}
	tb.shot("cluster")
	tb.checkClean("cluster page")

	page("/topics")
	if names := tb.column("topics", "name"); !contains(names, "orders") {
		t.Errorf("topics page lists %q, not orders", names)
	}
	tb.shot("topics")
	tb.checkClean("topics page")

	page("/topics/orders")
	if hw := tb.column("partitions", "high_watermark"); strings.Join(hw, ",") != "5,2,0" {
		t.Errorf("high watermarks %q, want 5,2,0", hw)
	}
	tb.do("edit retention.ms",
		chromedp.Click(chromedp.CSS(`button[data-edit="retention.ms"]`)),
		chromedp.SetValue(chromedp.CSS(`input[data-input="retention.ms"]`), "3600000"),
		chromedp.Click(chromedp.CSS(`button[data-save="retention.ms"]`)))
	if st := tb.settle("patch retention.ms"); st != "ready" {
		t.Fatalf("patch retention.ms: %s: %s", st, tb.text("#error"))
	}
	if got := tb.text(`.config-value[data-config="retention.ms"]`); got != "3600000" {
		t.Errorf("retention.ms shows %q after the edit", got)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := rc.On("orders", nil); err != nil {
		t.Error(err)
	} else {
		for _, c := range cfg.Configs {
			if c.Key == "retention.ms" && (c.Value == nil || *c.Value != "3600000") {
				t.Errorf("Kafka's DescribeConfigs has retention.ms %v after the console set it", c.MaybeValue())
			}
		}
	}
	tb.shot("topic")
	tb.checkClean("topic page")

	page("/messages?topic=orders&partition=0&offset=0&limit=3")
	if offs := tb.column("messages", "offset"); strings.Join(offs, ",") != "0,1,2" {
		t.Errorf("offsets %q, want 0,1,2", offs)
	}
	vals := tb.column("messages", "value")
	if len(vals) != 3 || !strings.HasSuffix(vals[0], " "+xss) ||
		!strings.Contains(vals[1], `"order_id":"ORD-1001"`) || vals[2] != "hex 00ff10" {
		t.Errorf("values %q", vals)
	}
	if n := evalAs[int](tb, `document.querySelectorAll('img, main script').length`); n != 0 {
		t.Errorf("a message value became %d elements", n)
	}
	if keys := tb.column("messages", "key"); len(keys) != 3 || !strings.HasSuffix(keys[1], " customer-7") {
		t.Errorf("keys %q", keys)
	}
	if h := tb.column("messages", "headers"); len(h) != 3 || !strings.HasPrefix(h[1], "trace: ") || !strings.HasSuffix(h[1], " abc-123") {
		t.Errorf("headers %q", h)
	}
	tb.shot("messages")
	tb.do("next page", chromedp.Click(chromedp.CSS("#next-page")))
	tb.settle("next page")
	if offs := tb.column("messages", "offset"); strings.Join(offs, ",") != "3,4" {
		t.Errorf("next page offsets %q, want 3,4", offs)
	}
	// By time: from the epoch is from the first record.
	page("/messages?topic=orders&partition=1&timestamp=0&limit=5")
	if offs, vals := tb.column("messages", "offset"), tb.column("messages", "value"); strings.Join(offs, ",") != "0,1" ||
		len(vals) != 2 || !strings.HasSuffix(vals[0], " p1-0") {
		t.Errorf("partition 1 from time 0: offsets %q, values %q", offs, vals)
	}
	if st := tb.open("/messages?topic=orders&partition=0&offset=99"); st != "error" || !strings.Contains(tb.text("#error"), "offset_out_of_range") {
		t.Errorf("offset beyond the log: %s %q", st, tb.text("#error"))
	}
	tb.shot("messages-out-of-range")
	tb.checkClean("messages page")

	page("/groups")
	groups, lags := tb.column("groups", "group"), tb.column("groups", "total_lag")
	found := false
	for i, g := range groups {
		if g == "billing" {
			found = true
			if i >= len(lags) || lags[i] != "4" {
				t.Errorf("billing's total lag %q, want 4", lags)
			}
		}
	}
	if !found {
		t.Errorf("groups page lists %q, not billing", groups)
	}
	tb.shot("groups")
	tb.checkClean("groups page")

	page("/groups/billing")
	if lag := lagByPartition(tb); lag["0"] != "3" || lag["1"] != "1" {
		t.Errorf("billing's lag per partition %v, want 0:3 1:1", lag)
	}
	tb.shot("group")
	tb.do("reset to earliest",
		chromedp.Click(chromedp.CSS("#reset")),
		chromedp.WaitVisible(chromedp.CSS("#confirm[open]")),
		chromedp.Click(chromedp.CSS("#confirm-ok")))
	tb.waitFor("reset done", `document.body.getAttribute('data-state') !== 'loading' && (!document.getElementById('notice').hidden || !document.getElementById('error').hidden)`)
	if st := tb.settle("reset"); st != "ready" {
		t.Fatalf("reset: %s: %s", st, tb.text("#error"))
	}
	if lag := lagByPartition(tb); lag["0"] != "5" || lag["1"] != "2" {
		t.Errorf("lag after reset to earliest %v, want 0:5 1:2", lag)
	}
	offs, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("orders", 0); !ok || o.At != 0 {
		t.Errorf("Kafka's OffsetFetch after the reset: %+v", o)
	}
	tb.shot("group-reset")
	tb.do("delete",
		chromedp.Click(chromedp.CSS("#delete")),
		chromedp.WaitVisible(chromedp.CSS("#confirm[open]")),
		chromedp.Click(chromedp.CSS("#confirm-ok")))
	tb.waitFor("delete done", `(location.pathname === '/groups' && document.body.getAttribute('data-state') === 'ready') || document.body.getAttribute('data-state') === 'error'`)
	if !strings.HasPrefix(tb.text("#notice"), "Deleted group billing") {
		t.Errorf("after delete: notice %q, error %q", tb.text("#notice"), tb.text("#error"))
	}
	if groups := tb.column("groups", "group"); contains(groups, "billing") {
		t.Errorf("billing still listed after delete: %q", groups)
	}
	if st := tb.open("/groups/billing"); st != "error" || !strings.Contains(tb.text("#error"), "unknown_group") {
		t.Errorf("deleted group's page: %s %q", st, tb.text("#error"))
	}
	tb.shot("group-deleted")
	tb.checkClean("group pages")

	// A group with a live member: its member and assignment are shown,
	// and a delete is refused with the API's 409, shown on the page.
	live, err := kgo.NewClient(kgo.SeedBrokers(n.kafkaAddr), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("console-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	for got := 0; got < 7; {
		fs := live.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming as group live: %v", err)
		}
		got += fs.NumRecords()
	}
	page("/groups/live")
	if clients, assigned := tb.column("members", "client_id"), tb.column("members", "assignments"); len(clients) != 1 ||
		clients[0] != "console-test" || len(assigned) != 1 || assigned[0] != "orders: 0, 1, 2" {
		t.Errorf("group live's members: clients %q, assignments %q", clients, assigned)
	}
	// The dialog's close event, which starts the delete, comes a moment
	// after the click: forget the page's state so that settle waits for
	// the delete's.
	tb.unsettle()
	tb.do("delete a live group",
		chromedp.Click(chromedp.CSS("#delete")),
		chromedp.WaitVisible(chromedp.CSS("#confirm[open]")),
		chromedp.Click(chromedp.CSS("#confirm-ok")))
	if st := tb.settle("delete a live group"); st != "error" || !strings.Contains(tb.text("#error"), ": 409 ") {
		t.Errorf("deleting a group with a member: %s %q", st, tb.text("#error"))
	}
	tb.shot("group-live-delete-refused")
	tb.checkClean("live group page")

	page("/tables")
	// This serve has no Iceberg topics: the page says so.
	if got := tb.text("#tables"); got != "No Iceberg topics on this cluster." && !strings.Contains(got, "orders") {
		t.Errorf("tables page: %q", got)
	}
	tb.shot("tables")
	tb.checkClean("tables page")

	page("/throughput")
	t.Logf("pages checked after %v", time.Since(start).Round(time.Millisecond))
	tb.waitFor("a throughput sample", `Number(document.body.getAttribute('data-samples')) >= 1`)
	t.Logf("first throughput sample after %v", time.Since(start).Round(time.Millisecond))
	if got := tb.text("#tp-latest"); !strings.HasPrefix(got, "Latest (") {
		t.Errorf("throughput summary %q", got)
	}
	tb.shot("throughput")
	tb.checkClean("throughput page")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
