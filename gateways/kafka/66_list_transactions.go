package kafka

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions: v0-v2.
//
// Lists the transactional ids this gateway coordinates, filtered by state
// and producer id, by how long the transaction has been open (v1,
// DurationFilterMillis) and by a regular expression on the id (v2). State
// filters Kafka does not know are returned in UnknownStateFilters; a bad
// pattern is INVALID_REGULAR_EXPRESSION.

func init() { regKey(66, 0, 2, (*Gateway).handleListTransactions) }

var txnStateNames = map[string]bool{"Empty": true, "Ongoing": true, "PrepareCommit": true, "PrepareAbort": true,
	"CompleteCommit": true, "CompleteAbort": true, "Dead": true, "PrepareEpochFence": true}

func (g *Gateway) handleListTransactions(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[string]bool{}
	for _, s := range req.StateFilters {
		if txnStateNames[s] {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	var re *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if re, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = errorCode(fmt.Errorf("%w: %v", kerr.InvalidRegularExpression, err))
			return resp, nil
		}
	}
	list, err := g.txns.list(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	now := time.Now().UnixMilli()
	for _, s := range list {
		switch {
		case len(req.StateFilters) > 0 && !states[s.state.String()]:
		case len(pids) > 0 && !pids[s.pid]:
		case req.DurationFilterMillis >= 0 && req.Version >= 1 && (s.start < 0 || now-s.start < req.DurationFilterMillis):
		case re != nil && !re.MatchString(s.id):
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = s.id, s.pid, s.state.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	return resp, nil
}
