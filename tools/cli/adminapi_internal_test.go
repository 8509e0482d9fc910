package cli

import (
	"context"
	"testing"

	"github.com/aerostream/aerostream/controller"
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

// clusterAPI is a controller with two stores, of which only 12 has
// reported its stats.
type clusterAPI struct{ controller.API }

func (clusterAPI) ClusterInfo(context.Context) (controller.ClusterInfo, error) {
	return controller.ClusterInfo{ClusterID: "c", LeaderID: 1, Voters: []controller.Voter{{ID: 1, Address: "a:1", Suffrage: "Voter"}}}, nil
}

func (clusterAPI) ListNodes(context.Context) (controller.NodesResponse, error) {
	return controller.NodesResponse{Nodes: []controller.NodeInfo{
		{ID: 11, Kind: controller.KindStore, Live: true, Addresses: map[string]string{"ring": "s11:1"}},
		{ID: 12, Kind: controller.KindStore, Live: true, Addresses: map[string]string{"ring": "s12:1"},
			Stats: &controller.StoreStats{DiskBytes: 4096, ColdBytes: 8192, Partitions: 2}},
	}}, nil
}

func (clusterAPI) Metadata(context.Context, controller.MetadataRequest) (controller.MetadataResponse, error) {
	return controller.MetadataResponse{}, nil
}

// TestAdminClusterShowsReportedStoreBytes: /api/cluster on a node that is
// neither store shows each store's bytes as the store reported them to the
// controller.
func TestAdminClusterShowsReportedStoreBytes(t *testing.T) {
	s := &adminSources{api: clusterAPI{}, nodeID: 1}
	c, err := s.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32][2]int64{}
	for _, st := range c.Stores {
		got[st.ID] = [2]int64{st.DiskBytes, st.ColdBytes}
	}
	want := map[int32][2]int64{11: {0, 0}, 12: {4096, 8192}}
	if len(got) != 2 || got[11] != want[11] || got[12] != want[12] {
		t.Errorf("stores' disk and cold bytes %v, want %v", got, want)
	}
}
