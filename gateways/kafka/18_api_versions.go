package kafka

import (
	"context"
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-v4.
//
// Lists every key this gateway serves with its version range (the
// KIP-848 and KIP-932 keys, and the transaction keys, at the versions
// Kafka 4.4 serves), SASL and ACL keys included. A request at a version above v4 gets the KIP-511 answer: a v0
// response (header v0, readable by any client) carrying
// UNSUPPORTED_VERSION and our ApiVersions range, so the client retries at a
// version we serve. v3+ validates the client software name and version the
// way Kafka does (INVALID_REQUEST on a mismatch). From v3 one feature is
// advertised, supported 0-2 and finalized at 2: transaction.version, so
// clients run transactions v2 (KIP-890 part 2: produce v12+ and
// TxnOffsetCommit v5+ add their partitions implicitly, EndTxn v5 bumps the
// epoch; txn_coordinator.go). Clients find the group protocols by their
// keys, and the other features (KRaft metadata versions) gate nothing a
// client sends.

func init() { regKey(18, 0, 4, (*Gateway).handleApiVersions) }

var softwareNameRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (g *Gateway) handleApiVersions(_ context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwareNameRE.MatchString(req.ClientSoftwareName) || !softwareNameRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = servedKeys()
	if req.Version >= 3 {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = txnVersionFeature, 0, txnVersionLevel
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = txnVersionFeature, txnVersionLevel, txnVersionLevel
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		// The level never changes, so one epoch serves: clients keep
		// the finalized features of the highest epoch they have seen.
		resp.FinalizedFeaturesEpoch = 1
	}
	return resp, nil
}

// The transaction.version feature and the level served (transactions v2).
const (
	txnVersionFeature       = "transaction.version"
	txnVersionLevel   int16 = 2
)

// servedKeys lists the served keys in key order.
func servedKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apiKeys))
	for _, ak := range apiKeys {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = ak.key, ak.min, ak.max
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

// apiVersionsUnsupported is the answer to an ApiVersions request at a
// version the gateway does not serve.
func apiVersionsUnsupported(int16) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	ak := apiKeys[18]
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = 18, ak.min, ak.max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
