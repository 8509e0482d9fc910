package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions: v0.
//
// Describes transactional ids this gateway coordinates: state, timeout,
// start time, producer id and epoch, and the partitions of the open
// transaction. An id coordinated elsewhere is NOT_COORDINATOR, one never
// seen TRANSACTIONAL_ID_NOT_FOUND.

func init() { regKey(65, 0, 0, (*Gateway).handleDescribeTransactions) }

func (g *Gateway) handleDescribeTransactions(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		v, ok, err := g.txns.describe(ctx, id)
		switch {
		case err != nil:
			st.ErrorCode = errorCode(err)
		case !ok:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.State = v.state.String()
			st.TimeoutMillis = int32(v.timeout.Milliseconds())
			st.StartTimestamp, st.ProducerID, st.ProducerEpoch = v.start, v.pid, v.epoch
			byTopic := map[string][]int32{}
			for k := range v.parts {
				byTopic[k.topic] = append(byTopic[k.topic], k.partition)
			}
			for name, ps := range byTopic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				t.Topic, t.Partitions = name, ps
				st.Topics = append(st.Topics, t)
			}
			sort.Slice(st.Topics, func(i, j int) bool { return st.Topics[i].Topic < st.Topics[j].Topic })
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
