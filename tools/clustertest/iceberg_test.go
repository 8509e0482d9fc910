package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// An Iceberg topic on three stores that commit through an external
// Iceberg REST catalog: Apache Iceberg's own REST catalog server (the
// iceberg-open-api test fixture, a JDBC catalog on SQLite behind it), the
// warehouse on local disk, which every process here shares.
const (
	icebergNamespace = "aerostream"
	icebergTopic     = "orders"
	icebergRecords   = 30000
)

// restCatalog is the external REST catalog's process.
type restCatalog struct {
	uri  string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startRESTCatalog runs org.apache.iceberg.rest.RESTCatalogServer from the
// jars in lib (`make iceberg-rest-catalog` resolves them) with its tables
// under warehouse, and waits until it answers GET /v1/config.
func startRESTCatalog(t *testing.T, lib, dir, warehouse string) *restCatalog {
	t.Helper()
	addr := freeAddr(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	rc := &restCatalog{uri: "http://" + addr, done: make(chan struct{}), log: filepath.Join(dir, "rest-catalog.log")}
	f, err := os.Create(rc.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc.cmd = exec.Command("java", "-Xmx256m", "-cp", filepath.Join(lib, "*"), "org.apache.iceberg.rest.RESTCatalogServer")
	// The server reads its catalog properties from CATALOG_* variables
	// (CATALOG_REST_PORT is rest.port).
	rc.cmd.Env = append(os.Environ(), "CATALOG_WAREHOUSE="+warehouse, "CATALOG_REST_PORT="+port,
		"CATALOG_URI=jdbc:sqlite:"+filepath.Join(dir, "rest-catalog.db"))
	rc.cmd.Stdout, rc.cmd.Stderr = f, f
	rc.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := rc.cmd.Start(); err != nil {
		t.Fatalf("java: %v", err)
	}
	go func() { _ = rc.cmd.Wait(); close(rc.done) }()
	t.Cleanup(func() {
		_ = rc.cmd.Process.Kill()
		<-rc.done
		if t.Failed() {
			b, _ := os.ReadFile(rc.log)
			t.Logf("--- REST catalog log (last 40 lines; all in %s):\n%s", rc.log, tail(string(b), 40))
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		rsp, err := http.Get(rc.uri + "/v1/config")
		if err == nil {
			rsp.Body.Close()
			if rsp.StatusCode == http.StatusOK {
				return rc
			}
			err = fmt.Errorf("GET /v1/config: %s", rsp.Status)
		}
		select {
		case <-rc.done:
			b, _ := os.ReadFile(rc.log)
			t.Fatalf("the REST catalog exited: %s", tail(string(b), 30))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the REST catalog does not answer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// snapshotInfo is a snapshot of the table as the catalog serves it.
type snapshotInfo struct {
	ID      int64             `json:"snapshot-id"`
	Parent  *int64            `json:"parent-snapshot-id"`
	Summary map[string]string `json:"summary"`
}

// history is the table's snapshots from the current one back through
// its parents (newest first); nil before the first commit.
func (rc *restCatalog) history(ns, tbl string) ([]snapshotInfo, error) {
	rsp, err := http.Get(rc.uri + "/v1/namespaces/" + ns + "/tables/" + tbl)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close()
	if rsp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if rsp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(rsp.Body)
		return nil, fmt.Errorf("load table: %s %s", rsp.Status, b)
	}
	var ltr struct {
		Metadata struct {
			Current   *int64         `json:"current-snapshot-id"`
			Snapshots []snapshotInfo `json:"snapshots"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(rsp.Body).Decode(&ltr); err != nil {
		return nil, err
	}
	byID := map[int64]snapshotInfo{}
	for _, s := range ltr.Metadata.Snapshots {
		byID[s.ID] = s
	}
	var out []snapshotInfo
	for id := ltr.Metadata.Current; id != nil && *id >= 0; {
		s, ok := byID[*id]
		if !ok {
			break // expired
		}
		out = append(out, s)
		id = s.Parent
	}
	return out, nil
}

// offsets is the aerostream.offsets summary of the current snapshot.
func (rc *restCatalog) offsets(ns, tbl string) (map[int32]int64, error) {
	h, err := rc.history(ns, tbl)
	if err != nil || len(h) == 0 {
		return nil, err
	}
	var raw map[string]int64
	if err := json.Unmarshal([]byte(h[0].Summary["aerostream.offsets"]), &raw); err != nil {
		return nil, fmt.Errorf("aerostream.offsets %q: %w", h[0].Summary["aerostream.offsets"], err)
	}
	out := map[int32]int64{}
	for k, v := range raw {
		p, err := strconv.Atoi(k)
		if err != nil {
			return nil, err
		}
		out[int32(p)] = v
	}
	return out, nil
}

// TestClusterIcebergRESTCatalog: an Iceberg topic with 3 partitions at
// RF 3 on three stores whose [iceberg] catalog is the external REST
// catalog (with an OAuth2 client credential). While franz-go produces
// 30,000 keyed records through a gateway, the store committing the table
// is killed with SIGKILL mid-translation and restarted later. pyiceberg,
// reading through the external catalog, must then see exactly the log's
// records (each (partition, offset) once, with its key and value), and
// the table's history must have one committer per leader epoch of
// partition 0, epochs in order: the killed store's snapshots, then its
// successor's.
func TestClusterIcebergRESTCatalog(t *testing.T) {
	bin := gate(t)
	python, lib := os.Getenv("ICEBERG_PYTHON"), os.Getenv("ICEBERG_REST_LIB")
	if python == "" || lib == "" {
		t.Skip("ICEBERG_PYTHON (pyiceberg 0.12) and ICEBERG_REST_LIB (Apache Iceberg's REST catalog jars) are unset: `make test-cluster-iceberg` resolves both and runs this test")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java is not installed: the external REST catalog is Apache Iceberg's Java server")
	}
	dir := t.TempDir()
	warehouse := filepath.Join(dir, "warehouse")
	if err := os.MkdirAll(warehouse, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := startRESTCatalog(t, lib, dir, "file://"+warehouse)

	storeHTTP := map[int32]string{}
	c := newClusterWith(t, bin, storeIDs, gatewayIDs[:1], func(id int32) []string {
		storeHTTP[id] = freeAddr(t)
		return []string{"--http-listen", storeHTTP[id],
			"--iceberg.catalog", "rest", "--iceberg.rest_uri", rc.uri, "--iceberg.rest_credential", "aerostream:secret",
			"--iceberg.warehouse", "file://" + warehouse, "--iceberg.commit_interval_ms", "500"}
	})
	out, err := c.cli(60*time.Second, "topic", "create", icebergTopic, "-p", "3", "-r", "3",
		"--config", "min.insync.replicas=2", "--config", "iceberg.enabled=true", "--controller", c.ctlAddr)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c.waitFor("every partition of "+icebergTopic+" to have a live leader and a full ISR", 60*time.Second, func() (bool, string) {
		return c.healthy(icebergTopic, 3)
	})
	gw := gatewayIDs[0]
	c.waitTopicKafka(gw, icebergTopic, 3, 60*time.Second)

	// A paced producer, so that translation is under way when the
	// committer is killed and goes on while its successor takes over.
	cl := c.kgoClient(gw, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100))
	defer cl.Close()
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		prodErr []string
	)
	produced := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(produced)
		for i := 0; i < icebergRecords; {
			batch := make([]*kgo.Record, 0, 250)
			for ; i < icebergRecords && len(batch) < cap(batch); i++ {
				batch = append(batch, &kgo.Record{Topic: icebergTopic, Key: fmt.Appendf(nil, "key-%06d", i),
					Value: fmt.Appendf(nil, "value-%06d-%x", i, uint32(i)*2654435761)})
			}
			for tries := 0; len(batch) > 0 && tries < 20; tries++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res := cl.ProduceSync(ctx, batch...)
				cancel()
				// What failed goes again: the table must equal the log,
				// whatever the log holds.
				var again []*kgo.Record
				for _, r := range res {
					if r.Err != nil {
						again = append(again, &kgo.Record{Topic: icebergTopic, Key: r.Record.Key, Value: r.Record.Value})
						errMu.Lock()
						prodErr = append(prodErr, r.Err.Error())
						errMu.Unlock()
					}
				}
				batch = again
			}
			if len(batch) > 0 {
				errMu.Lock()
				prodErr = append(prodErr, fmt.Sprintf("%d records never acknowledged", len(batch)))
				errMu.Unlock()
			}
			time.Sleep(100 * time.Millisecond) // pace: about 2,500 records/s, 12 s in all
		}
	}()

	// Kill the store that has committed, once its first rows are in.
	var victim int32
	c.waitFor("the first commit of rows", 2*time.Minute, func() (bool, string) {
		h, err := rc.history(icebergNamespace, icebergTopic)
		if err != nil || len(h) == 0 {
			return false, fmt.Sprint("no snapshot yet: ", err)
		}
		node, err := strconv.Atoi(h[0].Summary["aerostream.committer"])
		if err != nil {
			return false, fmt.Sprintf("current snapshot summary %v", h[0].Summary)
		}
		victim = int32(node)
		return true, ""
	})
	at, _ := rc.offsets(icebergNamespace, icebergTopic)
	var translated int64
	for _, o := range at {
		translated += o
	}
	if translated >= icebergRecords {
		t.Fatalf("the table holds all %d records before the kill (offsets %v): nothing is mid-translation", icebergRecords, at)
	}
	md := c.mustMetadata()
	if l := leaders(md, icebergTopic)[0]; l != victim {
		t.Logf("note: store %d committed, partition 0 is now led by %d", victim, l)
	}
	epoch0 := leaderEpochs(md, icebergTopic)[0]
	c.stores[victim].kill()
	t.Logf("killed store %d (the committer) with SIGKILL at table offsets %v, producer running", victim, at)

	// Its successor must take over the table: a commit by another node.
	var successor int32
	c.waitFor("another store to commit after the kill", 2*time.Minute, func() (bool, string) {
		h, err := rc.history(icebergNamespace, icebergTopic)
		if err != nil || len(h) == 0 {
			return false, fmt.Sprint(err)
		}
		node, _ := strconv.Atoi(h[0].Summary["aerostream.committer"])
		successor = int32(node)
		return successor != victim, fmt.Sprintf("current snapshot by %d", node)
	})
	t.Logf("store %d commits now; restarting store %d", successor, victim)
	c.stores[victim].start(t)
	<-produced
	wg.Wait()
	if len(prodErr) > 0 {
		t.Logf("%d produce errors (retried): %v", len(prodErr), prodErr[:min(len(prodErr), 5)])
	}
	c.waitMembers(90 * time.Second)
	c.waitFor("the topic to be whole again", 2*time.Minute, func() (bool, string) { return c.healthy(icebergTopic, 3) })

	logRows, end := readTopic(t, c.kafka[gw], icebergTopic)
	if len(logRows) < icebergRecords {
		t.Fatalf("the log holds %d records, fewer than the %d acknowledged", len(logRows), icebergRecords)
	}
	c.waitFor("the table to reach the log's end offsets", 3*time.Minute, func() (bool, string) {
		got, err := rc.offsets(icebergNamespace, icebergTopic)
		for p, e := range end {
			if err != nil || got[p] < e {
				return false, fmt.Sprintf("table at %v (err %v), log at %v", got, err, end)
			}
		}
		return true, ""
	})
	tableRows := readTable(t, python, rc.uri)
	sameTable(t, logRows, tableRows)
	t.Logf("%d rows read back exactly by pyiceberg through the external REST catalog", len(tableRows))

	// One committer: per leader epoch of partition 0 a single node, epochs
	// in order, the killed store first and its successor after it.
	h, err := rc.history(icebergNamespace, icebergTopic)
	if err != nil {
		t.Fatal(err)
	}
	type fence struct{ epoch, node int }
	var chain []fence // oldest first
	for i := len(h) - 1; i >= 0; i-- {
		e, err1 := strconv.Atoi(h[i].Summary["aerostream.leader-epoch"])
		n, err2 := strconv.Atoi(h[i].Summary["aerostream.committer"])
		if err1 != nil || err2 != nil {
			t.Fatalf("snapshot %d has no fence: %v", h[i].ID, h[i].Summary)
		}
		chain = append(chain, fence{e, n})
	}
	byEpoch := map[int]int{}
	var nodes []int
	for i, f := range chain {
		if i > 0 && f.epoch < chain[i-1].epoch {
			t.Errorf("snapshot history goes back from epoch %d (node %d) to epoch %d (node %d)", chain[i-1].epoch, chain[i-1].node, f.epoch, f.node)
		}
		if n, ok := byEpoch[f.epoch]; ok && n != f.node {
			t.Errorf("leader epoch %d has two committers, nodes %d and %d", f.epoch, n, f.node)
		}
		byEpoch[f.epoch] = f.node
		if len(nodes) == 0 || nodes[len(nodes)-1] != f.node {
			nodes = append(nodes, f.node)
		}
	}
	if len(nodes) < 2 || nodes[0] != int(victim) || nodes[1] != int(successor) {
		t.Errorf("committers in history order %v; want %d, then %d", nodes, victim, successor)
	}
	if chain[0].epoch > int(epoch0) {
		t.Errorf("the first snapshot is of epoch %d, after the kill's %d", chain[0].epoch, epoch0)
	}

	// And now: exactly one live store commits the topic, partition 0's
	// leader, which the current snapshot names.
	c.waitFor("one committer, partition 0's leader", time.Minute, func() (bool, string) {
		md, err := c.metadata()
		if err != nil {
			return false, err.Error()
		}
		leader := leaders(md, icebergTopic)[0]
		var committers []int32
		for _, id := range storeIDs {
			st, err := c.icebergStatus(storeHTTP[id], icebergTopic)
			if err != nil {
				return false, fmt.Sprintf("store %d: %v", id, err)
			}
			if st.Committer {
				committers = append(committers, id)
			}
		}
		return len(committers) == 1 && committers[0] == leader,
			fmt.Sprintf("committers %v, partition 0 led by %d", committers, leader)
	})
	t.Logf("committers in history order %v over %d snapshots (leader epochs %d..%d)", nodes, len(chain), chain[0].epoch, chain[len(chain)-1].epoch)
}

// icebergStatus is what the test reads of a store's /v1/iceberg/<topic>.
type icebergStatus struct {
	Committer bool `json:"committer"`
}

// icebergStatus reads a store's /v1/iceberg/<topic> entry.
func (c *cluster) icebergStatus(addr, topic string) (icebergStatus, error) {
	var out []icebergStatus
	rsp, err := c.http.Get("http://" + addr + "/v1/iceberg/" + topic)
	if err != nil {
		return icebergStatus{}, err
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(rsp.Body)
		err = fmt.Errorf("%s: %s", rsp.Status, bytes.TrimSpace(b))
	} else if err = json.NewDecoder(rsp.Body).Decode(&out); err == nil && len(out) != 1 {
		err = fmt.Errorf("%d entries for %s", len(out), topic)
	}
	if err != nil {
		return icebergStatus{}, err
	}
	return out[0], nil
}

// tableRow is a record, in the log or in the table: where it is, and its
// key and value in hex.
type tableRow struct {
	p          int32
	o          int64
	key, value string
}

// readTopic reads every record of topic up to its end offsets, as a
// consumer sees them.
func readTopic(t *testing.T, addr, topic string) ([]tableRow, map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	end, from := map[int32]int64{}, map[int32]kgo.Offset{}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		end[o.Partition], from[o.Partition] = o.Offset, kgo.NewOffset().At(0)
		total += o.Offset
	})
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rows []tableRow
	for int64(len(rows)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of the log", len(rows), total)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] {
				rows = append(rows, tableRow{r.Partition, r.Offset, fmt.Sprintf("%x", r.Key), fmt.Sprintf("%x", r.Value)})
			}
		})
	}
	return rows, end
}

// readTable reads the table with pyiceberg through the catalog at uri,
// with tools/icebergtest's reader (read_table.py), which is given nothing
// but the URI.
func readTable(t *testing.T, python, uri string) []tableRow {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rows.txt")
	cmd := exec.Command(python, filepath.Join("..", "icebergtest", "read_table.py"), uri, icebergNamespace, icebergTopic, out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		t.Fatalf("read_table.py: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []tableRow
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r tableRow
		if _, err := fmt.Sscanf(line, "%d %d %s %s", &r.p, &r.o, &r.key, &r.value); err != nil {
			t.Fatalf("row %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// sameTable fails unless table holds exactly log's records: each
// (partition, offset) once, with the log's key and value.
func sameTable(t *testing.T, log, table []tableRow) {
	t.Helper()
	cmp := func(a, b tableRow) int {
		if a.p != b.p {
			return int(a.p - b.p)
		}
		return int(a.o - b.o)
	}
	slices.SortFunc(log, cmp)
	slices.SortFunc(table, cmp)
	for i := 1; i < len(table); i++ {
		if table[i].p == table[i-1].p && table[i].o == table[i-1].o {
			t.Fatalf("duplicate row in the table: partition %d offset %d", table[i].p, table[i].o)
		}
	}
	if len(table) != len(log) {
		t.Fatalf("the table has %d rows, the log %d records", len(table), len(log))
	}
	for i := range log {
		if log[i] != table[i] {
			t.Fatalf("row %d: table %v, log %v", i, table[i], log[i])
		}
	}
}
