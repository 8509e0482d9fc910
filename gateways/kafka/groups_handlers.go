package kafka

import (
	"context"
	"errors"
	"net"
)

// awaitGroup runs fn on group id's goroutine (see coordinator.call) and
// waits for the answer fn sends on reply.
func awaitGroup[T any](ctx context.Context, g *Gateway, id string, create bool, fn func(gr *group, reply chan<- T)) (T, error) {
	reply := make(chan T, 1)
	var zero T
	if err := g.groups.call(ctx, id, create, func(gr *group) { fn(gr, reply) }); err != nil {
		return zero, err
	}
	select {
	case v := <-reply:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// clientHost is how Kafka shows a member's host: "/" and the IP.
func clientHost(rc *reqCtx) string {
	if a, ok := rc.s.conn.Remote.(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return "/" + rc.s.conn.Remote.String()
}

// groupGone reports whether err says the group does not exist.
func groupGone(err error) bool { return errors.Is(err, errGroupGone) }
