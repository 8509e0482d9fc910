package cli

import (
	"log/slog"
	"strings"

	"github.com/apache/iceberg-go/table"

	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/aerostream/aerostream/gateways/http/icebergrest"
	"github.com/aerostream/aerostream/iceberg"
)

// icebergREST is the Iceberg REST catalog mounted at /iceberg, behind the
// HTTP Guard's ACLs: each table answers to its topic's (a dead-letter
// table to the topic whose records it holds).
func icebergREST(opts icebergrest.Options, guard *gwhttp.Guard, logger *slog.Logger) *icebergrest.Server {
	opts.Logger = logger
	if guard != nil {
		opts.Authorizer = guard
	}
	opts.Topic = icebergTableTopic
	return icebergrest.New(opts)
}

// icebergTableTopic is the topic a table of AeroStream's namespace
// materializes: its own name, less the dead-letter suffix.
func icebergTableTopic(id table.Identifier) string {
	return strings.TrimSuffix(id[len(id)-1], iceberg.DLQSuffix)
}
