package cli

import (
	"context"
	"testing"

	"github.com/aerostream/aerostream/gateways/http/adminapi"
	"github.com/aerostream/aerostream/iceberg"
)

// TestAdminIcebergTables: /api/iceberg lists nothing until the node's
// Iceberg manager is set, then what the manager reports.
func TestAdminIcebergTables(t *testing.T) {
	s := &adminSources{}
	src := adminIceberg{s}
	ts, err := src.Tables(context.Background())
	if err != nil || len(ts) != 0 {
		t.Fatalf("without a manager: %v %v", ts, err)
	}
	s.setIceberg(icebergTables{iceberg.NewManager(iceberg.ManagerOptions{})})
	if ts, err = src.Tables(context.Background()); err != nil || len(ts) != 0 {
		t.Fatalf("a manager with no topics: %v %v", ts, err)
	}
	var _ adminapi.IcebergSource = icebergTables{}
}
