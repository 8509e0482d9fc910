package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/controller"
)

// newStoreDrainCmd is `aerostream store drain ID`: it asks the controller to
// move every replica and leadership off the store, then follows the drain
// until the store holds nothing, so that it can be stopped and removed
// without losing an acknowledged record.
func newStoreDrainCmd(env Env) *cobra.Command {
	ctl := &clientFlags{}
	var wait time.Duration
	var noWait, leadershipOnly bool
	cmd := &cobra.Command{
		Use:   "drain ID",
		Short: "Move every replica and leadership off a store, and wait until it holds nothing",
		Long: `Marks the store draining (new partitions are not placed on it) and
reassigns each partition it holds to another live store. The new replicas
catch up from the leaders; once they are in sync, the store drops its copy
and leadership moves away. Progress is printed as it changes; the command
ends when the store holds no replica and leads no partition.

With --leadership-only it is a controlled shutdown instead, for a store
about to stop and come back (a restart, an upgrade): the store's
leaderships move to other in-sync replicas and it is not elected while it
stops, but it keeps its replicas, and the state clears when it registers
again. The command ends when the store leads no partition.`,
		Args: needArgs("the node ID of the store to drain", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id <= 0 {
				return fmt.Errorf("store id %q: want a positive node id", args[0])
			}
			cl, err := newClient(cmd.Context(), ctl)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx := cmd.Context()
			if wait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, wait)
				defer cancel()
			}
			if leadershipOnly {
				return shutdownStore(ctx, env, cl, int32(id), noWait)
			}
			return drainStore(ctx, env, cl, int32(id), noWait)
		},
	}
	cmd.Flags().StringVar(&ctl.addrs, "controller", "127.0.0.1:8001", "controller addresses, comma-separated host:port (any voter; the leader is found)")
	cmd.Flags().DurationVar(&ctl.timeout, "timeout", 15*time.Second, "give up when no controller leader answers for this long")
	cmd.Flags().DurationVar(&wait, "wait", 0, "give up waiting for the drain after this long (0: wait until it ends)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "start the drain and print its progress once, without waiting")
	cmd.Flags().BoolVar(&leadershipOnly, "leadership-only", false, "controlled shutdown: move only leadership off the store, keeping its replicas, until it registers again")
	return cmd
}

// drainPoll is how often the drain's progress is read.
const drainPoll = 500 * time.Millisecond

func drainStore(ctx context.Context, env Env, cl controller.Replication, id int32, noWait bool) error {
	var last *controller.DrainStatus
	for {
		st, err := cl.DrainStore(ctx, controller.DrainRequest{ID: id})
		if err != nil {
			return fmt.Errorf("drain store %d: %w", id, err)
		}
		if last == nil || *last != st {
			fmt.Fprintf(env.Stdout, "store %d: %d replicas and %d leaderships left\n", id, st.Replicas, st.Leaders)
			last = &st
		}
		if st.Replicas == 0 && st.Leaders == 0 {
			fmt.Fprintf(env.Stdout, "store %d is drained: it holds no partition and can be stopped and removed\n", id)
			return nil
		}
		if noWait {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain store %d: still %d replicas and %d leaderships left: %w", id, st.Replicas, st.Leaders, ctx.Err())
		case <-time.After(drainPoll):
		}
	}
}

// shutdownStore is the --leadership-only drain: it asks for the store's
// controlled shutdown and follows it until the store leads nothing. A
// partition whose only in-sync replica is the store keeps it as leader, so
// the wait is what bounds a shutdown that cannot finish.
func shutdownStore(ctx context.Context, env Env, cl controller.Replication, id int32, noWait bool) error {
	last := -1
	for {
		st, err := cl.DrainStore(ctx, controller.DrainRequest{ID: id, LeadershipOnly: true})
		if err != nil {
			return fmt.Errorf("move leadership off store %d: %w", id, err)
		}
		if st.Leaders != last {
			fmt.Fprintf(env.Stdout, "store %d: %d leaderships left\n", id, st.Leaders)
			last = st.Leaders
		}
		if st.Leaders == 0 {
			fmt.Fprintf(env.Stdout, "store %d leads no partition: it can be stopped\n", id)
			return nil
		}
		if noWait {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("move leadership off store %d: still %d leaderships left (partitions whose only in-sync replica it is): %w", id, st.Leaders, ctx.Err())
		case <-time.After(drainPoll):
		}
	}
}
