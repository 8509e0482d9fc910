package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group metadata records. As Kafka does, the coordinator writes a
// GroupMetadataKey/GroupMetadataValue record to __consumer_offsets each
// time a generation settles (the leader's SyncGroup) and when a group
// becomes empty, and a tombstone when the group is deleted or forgotten.
// On restart only the protocol type is read back: membership is soft state
// that the clients rebuild by rejoining, but an empty group must still
// report the protocol type its members joined with ("consumer"), since
// clients take a group without one for a simple (offsets-only) group.

// groupMetadataRecord encodes the group's current state (or, with gr's
// state groupDead, its deletion) as Kafka writes it.
func groupMetadataRecord(gr *group, now time.Time) record {
	k := kmsg.GroupMetadataKey{Version: 2, Group: gr.id}
	r := record{key: k.AppendTo(nil)}
	if gr.state == groupDead {
		return r
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = gr.protocolType, gr.generation, now.UnixMilli()
	if gr.protocol != "" {
		v.Protocol = ptr(gr.protocol)
	}
	if gr.leader != "" {
		v.Leader = ptr(gr.leader)
	}
	for _, m := range gr.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription, vm.Assignment = m.metadataFor(gr.protocol), m.assignment
		v.Members = append(v.Members, vm)
	}
	r.value = v.AppendTo(nil)
	return r
}

// storeMetadata writes the group's metadata record. A failure is logged
// and otherwise ignored: it loses only what a restart would report of an
// empty group, and membership itself is rebuilt by the clients.
func (gr *group) storeMetadata() {
	if gr.protocolType == "" {
		return // a simple group: offsets only, as in Kafka
	}
	ctx, cancel := context.WithTimeout(gr.c.ctx, 30*time.Second)
	defer cancel()
	if err := gr.c.write(ctx, gr.part, []record{groupMetadataRecord(gr, time.Now())}); err != nil {
		gr.c.log.Warn("writing group metadata", "group", gr.id, "err", err)
	}
}

// applyGroupMetadataLocked applies a group metadata record read from
// __consumer_offsets to the dormant state.
func (c *coordinator) applyGroupMetadataLocked(r record) {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(r.key); err != nil {
		c.log.Warn("skipping a malformed group metadata key", "err", err)
		return
	}
	if c.mu.active[k.Group] != nil {
		return
	}
	if r.value == nil {
		delete(c.mu.dormantType, k.Group)
		if offs, ok := c.mu.dormant[k.Group]; ok && len(offs) == 0 {
			delete(c.mu.dormant, k.Group)
			delete(c.mu.emptyAt, k.Group)
		}
		return
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(r.value); err != nil {
		c.log.Warn("skipping a malformed group metadata value", "group", k.Group, "err", err)
		return
	}
	if v.ProtocolType == "" {
		delete(c.mu.dormantType, k.Group)
	} else {
		c.mu.dormantType[k.Group] = v.ProtocolType
	}
	if _, ok := c.mu.dormant[k.Group]; !ok {
		c.mu.dormant[k.Group] = map[tp]committed{}
		c.mu.emptyAt[k.Group] = time.Now()
	}
}

// tombstoneGroup writes the deletion of group id's metadata, so that a
// restart does not bring back a group that was forgotten.
func (c *coordinator) tombstoneGroup(ctx context.Context, id string) error {
	gr := &group{id: id, state: groupDead}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.write(ctx, c.partitionFor(id), []record{groupMetadataRecord(gr, time.Now())})
}
