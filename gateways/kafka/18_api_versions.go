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
// way Kafka does (INVALID_REQUEST on a mismatch). No feature flags are
// advertised: clients find the group protocols by their keys, and the
// other features they gate (KRaft metadata versions, transactions v2) are
// not served.

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
	return resp, nil
}

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
