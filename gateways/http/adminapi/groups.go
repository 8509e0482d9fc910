package adminapi

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

type groupSummaryJSON struct {
	Group    string `json:"group"`
	Type     string `json:"type"`
	State    string `json:"state"`
	Members  int    `json:"members"`
	Protocol string `json:"protocol"`
	TotalLag int64  `json:"total_lag"`
}

type tpKey struct {
	topic     string
	partition int32
}

type offsetLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
}

type groupDetail struct {
	Group   string      `json:"group"`
	Type    string      `json:"type"`
	State   string      `json:"state"`
	Members []Member    `json:"members"`
	Offsets []offsetLag `json:"offsets"`
}

func (a *API) groups() (GroupSource, error) {
	if a.opts.Groups == nil {
		return nil, unavailable("the group coordinator (it runs in the Kafka gateway)")
	}
	return a.opts.Groups, nil
}

func (a *API) listGroups(_ http.ResponseWriter, r *http.Request) (any, error) {
	src, err := a.groups()
	if err != nil {
		return nil, err
	}
	list, err := src.ListGroups(r.Context())
	if err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Group < list[j].Group })
	out := []groupSummaryJSON{}
	ends := map[tpKey]int64{}
	for _, gs := range list {
		ok, err := a.allowed(r, OpDescribe, Resource{ResourceGroup, gs.Group})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		s := groupSummaryJSON{Group: gs.Group, Type: gs.Type, State: gs.State, Protocol: gs.Protocol}
		g, err := src.DescribeGroup(r.Context(), gs.Group)
		if err == nil {
			s.Members = len(g.Members)
			for _, o := range a.lags(r, g.Offsets, ends) {
				s.TotalLag += o.Lag
			}
		}
		out = append(out, s)
	}
	return map[string]any{"groups": out}, nil
}

// describe looks a group up after checking op on it.
func (a *API) describe(r *http.Request, op Operation, id string) (Group, error) {
	if err := a.authorize(r, op, Resource{ResourceGroup, id}); err != nil {
		return Group{}, err
	}
	src, err := a.groups()
	if err != nil {
		return Group{}, err
	}
	if id == "" {
		return Group{}, badParam("the group id is empty")
	}
	return src.DescribeGroup(r.Context(), id)
}

// lags pairs committed offsets with the partitions' high watermarks; ends
// caches those across the groups of one request.
func (a *API) lags(r *http.Request, offs []CommittedOffset, ends map[tpKey]int64) []offsetLag {
	out := make([]offsetLag, 0, len(offs))
	for _, o := range offs {
		key := tpKey{o.Topic, o.Partition}
		end, ok := ends[key]
		if !ok {
			end = -1
			if a.opts.Log != nil {
				if st, err := a.opts.Log.PartitionStats(r.Context(), o.Topic, o.Partition); err == nil {
					end = st.HighWatermark
				}
			}
			ends[key] = end
		}
		l := offsetLag{Topic: o.Topic, Partition: o.Partition, Committed: o.Offset, End: end}
		if end >= 0 && o.Offset >= 0 {
			l.Lag = max(end-o.Offset, 0)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func (a *API) detail(r *http.Request, g Group) groupDetail {
	d := groupDetail{Group: g.Group, Type: g.Type, State: g.State, Members: g.Members,
		Offsets: a.lags(r, g.Offsets, map[tpKey]int64{})}
	if d.Members == nil {
		d.Members = []Member{}
	}
	for i := range d.Members {
		if d.Members[i].Assignments == nil {
			d.Members[i].Assignments = []Assignment{}
		}
		for j := range d.Members[i].Assignments {
			d.Members[i].Assignments[j].Partitions = nonNil(d.Members[i].Assignments[j].Partitions)
		}
	}
	return d
}

func (a *API) getGroup(_ http.ResponseWriter, r *http.Request) (any, error) {
	g, err := a.describe(r, OpDescribe, r.PathValue("g"))
	if err != nil {
		return nil, err
	}
	return a.detail(r, g), nil
}

func (a *API) getLag(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := r.URL.Query().Get("group")
	if id == "" {
		return nil, badParam("group is required: /api/lag?group=<id>")
	}
	g, err := a.describe(r, OpDescribe, id)
	if err != nil {
		return nil, err
	}
	d := a.detail(r, g)
	var total int64
	for _, o := range d.Offsets {
		total += o.Lag
	}
	return map[string]any{"group": g.Group, "total_lag": total, "partitions": d.Offsets}, nil
}

type resetBody struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
	To         string  `json:"to"`
	Offset     *int64  `json:"offset"`
	Timestamp  *int64  `json:"timestamp"`
}

func (a *API) resetGroup(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("g")
	var body resetBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	switch body.To {
	case "earliest", "latest":
	case "offset":
		if body.Offset == nil || *body.Offset < 0 {
			return nil, badParam(`to "offset" needs a non-negative offset`)
		}
	case "timestamp":
		if body.Timestamp == nil || *body.Timestamp < 0 {
			return nil, badParam(`to "timestamp" needs a non-negative timestamp (Unix ms)`)
		}
	default:
		return nil, badParam(`to=%q: expected "earliest", "latest", "offset" or "timestamp"`, body.To)
	}
	if body.Topic == "" {
		return nil, badParam("topic is required")
	}
	g, err := a.describe(r, OpRead, id)
	if err != nil {
		return nil, err
	}
	if len(g.Members) > 0 {
		return nil, errNotEmpty(g)
	}
	t, err := a.topic(r, OpDescribe, body.Topic)
	if err != nil {
		return nil, err
	}
	if a.opts.Log == nil {
		return nil, unavailable("the partition log")
	}
	parts := body.Partitions
	if parts == nil {
		for _, p := range t.Partitions {
			parts = append(parts, p.Partition)
		}
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	ctx := r.Context()
	var offs []CommittedOffset
	for _, p := range parts {
		if p < 0 || int(p) >= len(t.Partitions) {
			return nil, badParam("partition %d: topic %s has partitions 0 to %d", p, t.Name, len(t.Partitions)-1)
		}
		st, err := a.opts.Log.PartitionStats(ctx, t.Name, p)
		if err != nil {
			return nil, err
		}
		var to int64
		switch body.To {
		case "earliest":
			to = st.LogStart
		case "latest":
			to = st.HighWatermark
		case "offset":
			to = *body.Offset
			if to < st.LogStart || to > st.HighWatermark {
				return nil, errOutOfRange(t.Name, p, to, st)
			}
		case "timestamp":
			if to, err = a.opts.Log.OffsetForTimestamp(ctx, t.Name, p, *body.Timestamp); err != nil {
				return nil, err
			}
			if to < 0 {
				to = st.HighWatermark
			}
		}
		offs = append(offs, CommittedOffset{Topic: t.Name, Partition: p, Offset: to})
	}
	if err := a.opts.Groups.CommitOffsets(ctx, g.Group, offs); err != nil {
		return nil, err
	}
	a.log.Info("group offsets reset", "group", g.Group, "topic", t.Name, "partitions", len(offs), "to", body.To)
	if g, err = a.opts.Groups.DescribeGroup(ctx, g.Group); err != nil {
		return nil, err
	}
	return a.detail(r, g), nil
}

func (a *API) deleteGroup(w http.ResponseWriter, r *http.Request) (any, error) {
	g, err := a.describe(r, OpDelete, r.PathValue("g"))
	if err != nil {
		return nil, err
	}
	if len(g.Members) > 0 {
		return nil, errNotEmpty(g)
	}
	if err := a.opts.Groups.DeleteGroup(r.Context(), g.Group); err != nil {
		return nil, err
	}
	a.log.Info("group deleted", "group", g.Group)
	return nil, nil // 204
}

func errNotEmpty(g Group) error {
	ids := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	return &apiError{http.StatusConflict, "group_not_empty",
		"group " + g.Group + " has members (" + strings.Join(ids, ", ") + "); stop its consumers first"}
}

func errOutOfRange(topic string, p int32, off int64, st PartitionStats) error {
	return &apiError{http.StatusRequestedRangeNotSatisfiable, "offset_out_of_range",
		fmt.Sprintf("offset %d is outside the log of %s/%d, [%d, %d]", off, topic, p, st.LogStart, st.HighWatermark)}
}
