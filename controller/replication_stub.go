package controller

import (
	"context"
	"fmt"
)

// Placeholders until the replication commands land; the controller helper replaces this file.
var errReplicationTODO = fmt.Errorf("%w: replication is not built yet", ErrInvalidRequest)

func (c *Controller) AlterPartition(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error) {
	return PartitionInfo{}, errReplicationTODO
}

func (c *Controller) AlterPartitionReassignments(ctx context.Context, req ReassignRequest) (ReassignResponse, error) {
	return ReassignResponse{}, errReplicationTODO
}

func (c *Controller) ListPartitionReassignments(ctx context.Context, req ListReassignmentsRequest) (ListReassignmentsResponse, error) {
	return ListReassignmentsResponse{}, errReplicationTODO
}

func (c *Controller) DrainStore(ctx context.Context, req DrainRequest) (DrainStatus, error) {
	return DrainStatus{}, errReplicationTODO
}

func (c *Client) AlterPartition(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error) {
	return PartitionInfo{}, errReplicationTODO
}

func (c *Client) AlterPartitionReassignments(ctx context.Context, req ReassignRequest) (ReassignResponse, error) {
	return ReassignResponse{}, errReplicationTODO
}

func (c *Client) ListPartitionReassignments(ctx context.Context, req ListReassignmentsRequest) (ListReassignmentsResponse, error) {
	return ListReassignmentsResponse{}, errReplicationTODO
}

func (c *Client) DrainStore(ctx context.Context, req DrainRequest) (DrainStatus, error) {
	return DrainStatus{}, errReplicationTODO
}
