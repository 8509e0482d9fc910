package adminapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
)

func (a *API) getCluster(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.authorize(r, OpDescribe, Resource{Type: ResourceCluster}); err != nil {
		return nil, err
	}
	if a.opts.Cluster == nil {
		return nil, unavailable("the cluster view")
	}
	c, err := a.opts.Cluster.Cluster(r.Context())
	if err != nil {
		return nil, err
	}
	for _, s := range []*[]Voter{&c.Controller.Voters, &c.Controller.NonVoters} {
		if *s == nil {
			*s = []Voter{}
		}
	}
	if c.Stores == nil {
		c.Stores = []Store{}
	}
	if c.Gateways == nil {
		c.Gateways = []Gateway{}
	}
	if c.Leadership == nil {
		c.Leadership = []Leadership{}
	}
	for i := range c.Leadership {
		c.Leadership[i].Replicas = nonNil(c.Leadership[i].Replicas)
		c.Leadership[i].ISR = nonNil(c.Leadership[i].ISR)
	}
	return c, nil
}

type topicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
	LocalBytes        int64  `json:"local_bytes"`
	ColdBytes         int64  `json:"cold_bytes"`
	TierBacklogBytes  int64  `json:"tier_backlog_bytes"`
	Iceberg           bool   `json:"iceberg"`
}

func (a *API) listTopics(_ http.ResponseWriter, r *http.Request) (any, error) {
	if a.opts.Topics == nil {
		return nil, unavailable("topic metadata")
	}
	ts, err := a.opts.Topics.Topics(r.Context())
	if err != nil {
		return nil, err
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	out := []topicSummary{}
	for _, t := range ts {
		ok, err := a.allowed(r, OpDescribe, Resource{ResourceTopic, t.Name})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		s := topicSummary{Name: t.Name, ID: t.ID, Partitions: len(t.Partitions), ReplicationFactor: t.ReplicationFactor,
			Internal: t.Internal, Iceberg: t.Iceberg}
		for _, p := range t.Partitions {
			st := a.stats(r, t.Name, p.Partition)
			s.LocalBytes += st.LocalBytes
			s.ColdBytes += st.ColdBytes
			s.TierBacklogBytes += st.TierBacklogBytes
		}
		out = append(out, s)
	}
	return map[string]any{"topics": out}, nil
}

// stats are a partition's log figures, zero when this node cannot read
// them (a partition of another store): a listing shows what it knows.
func (a *API) stats(r *http.Request, topic string, p int32) PartitionStats {
	if a.opts.Log == nil {
		return PartitionStats{}
	}
	st, err := a.opts.Log.PartitionStats(r.Context(), topic, p)
	if err != nil {
		a.log.Debug("partition stats", "topic", topic, "partition", p, "err", err)
		return PartitionStats{}
	}
	return st
}

type topicDetail struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal"`
	Configs    []Config          `json:"configs"`
	Partitions []partitionDetail `json:"partitions"`
}

type partitionDetail struct {
	Partition        int32   `json:"partition"`
	Leader           int32   `json:"leader"`
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	LogStart         int64   `json:"log_start"`
	HighWatermark    int64   `json:"high_watermark"`
	LastStable       int64   `json:"last_stable"`
	LocalBytes       int64   `json:"local_bytes"`
	ColdBytes        int64   `json:"cold_bytes"`
	TierBacklogBytes int64   `json:"tier_backlog_bytes"`
}

// topic looks a topic up after checking op on it.
func (a *API) topic(r *http.Request, op Operation, name string) (TopicMeta, error) {
	if err := a.authorize(r, op, Resource{ResourceTopic, name}); err != nil {
		return TopicMeta{}, err
	}
	if a.opts.Topics == nil {
		return TopicMeta{}, unavailable("topic metadata")
	}
	t, err := a.opts.Topics.Topic(r.Context(), name)
	if err != nil {
		return TopicMeta{}, err
	}
	return t, nil
}

func (a *API) getTopic(_ http.ResponseWriter, r *http.Request) (any, error) {
	t, err := a.topic(r, OpDescribe, r.PathValue("t"))
	if err != nil {
		return nil, err
	}
	return a.topicDetail(r, t)
}

func (a *API) topicDetail(r *http.Request, t TopicMeta) (any, error) {
	cfgs, err := a.opts.Topics.Configs(r.Context(), t.Name)
	if err != nil {
		return nil, err
	}
	if cfgs == nil {
		cfgs = []Config{}
	}
	d := topicDetail{Name: t.Name, ID: t.ID, Internal: t.Internal, Configs: cfgs, Partitions: []partitionDetail{}}
	for _, p := range t.Partitions {
		st := a.stats(r, t.Name, p.Partition)
		d.Partitions = append(d.Partitions, partitionDetail{
			Partition: p.Partition, Leader: p.Leader, Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR),
			LogStart: st.LogStart, HighWatermark: st.HighWatermark, LastStable: st.LastStable,
			LocalBytes: st.LocalBytes, ColdBytes: st.ColdBytes, TierBacklogBytes: st.TierBacklogBytes,
		})
	}
	return d, nil
}

// maxBodyBytes bounds a request body; the API's bodies are small.
const maxBodyBytes = 1 << 20

// decodeBody reads a JSON body into v, refusing unknown fields so that a
// typo is an error rather than a silent no-op.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return badParam("the request body is empty; a JSON object is expected")
		}
		return badParam("the request body is not the expected JSON: %v", err)
	}
	return nil
}

func (a *API) patchConfigs(_ http.ResponseWriter, r *http.Request) (any, error) {
	t, err := a.topic(r, OpAlterConfigs, r.PathValue("t"))
	if err != nil {
		return nil, err
	}
	var body struct {
		Configs map[string]*string `json:"configs"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if len(body.Configs) == 0 {
		return nil, badParam("configs is empty: give at least one name and value")
	}
	set := make(map[string]string, len(body.Configs))
	for k, v := range body.Configs {
		if v == nil {
			return nil, badParam("config %s: the value is null; give a string", k)
		}
		set[k] = *v
	}
	// Refuse a read-only config here, with its name, before anything is
	// changed.
	cfgs, err := a.opts.Topics.Configs(r.Context(), t.Name)
	if err != nil {
		return nil, err
	}
	known := make(map[string]Config, len(cfgs))
	for _, c := range cfgs {
		known[c.Name] = c
	}
	for k := range set {
		c, ok := known[k]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: %s is not a topic config", ErrBadConfig, k)
		case !c.Dynamic:
			return nil, fmt.Errorf("%w: %s cannot change on an existing topic", ErrNotDynamic, k)
		}
	}
	if err := a.opts.Topics.AlterConfigs(r.Context(), t.Name, set); err != nil {
		return nil, err
	}
	return a.topicDetail(r, t)
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
