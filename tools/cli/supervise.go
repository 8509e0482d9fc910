package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// The package's sentinels.
var (
	// errPartStopped is the failure of a part whose run returned nil
	// although nobody asked it to stop.
	errPartStopped = errors.New("stopped on its own")
	// errInterrupted is a startup cut short by a signal: the daemon stops,
	// and that is not a failure.
	errInterrupted = errors.New("stopped by a signal")
	// errUsage marks a command line that names no command, or misses an
	// argument; Main exits 2 for it, as for a bad flag.
	errUsage = errors.New("usage")
)

// supervisor runs the long-lived parts of a daemon (listeners' serve loops,
// the gateways, tierd, the controller agent) and watches them. A part that
// ends on its own has died: the daemon must stop and exit non-zero instead
// of running half-alive, with clients timing out against a port that still
// accepts.
type supervisor struct {
	logger *slog.Logger
	// failed receives the first part to die; later deaths are logged by
	// stop.
	failed chan partFailure
	parts  []*runningPart
}

type partFailure struct {
	name string
	err  error
}

func (f partFailure) Error() string { return fmt.Sprintf("%s: %v", f.name, f.err) }
func (f partFailure) Unwrap() error { return f.err }

type runningPart struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // run's result; read after done is closed
}

func newSupervisor(logger *slog.Logger) *supervisor {
	return &supervisor{logger: logger, failed: make(chan partFailure, 1)}
}

// start runs run in a goroutine of its own until stop cancels its ctx. ctx
// gives the part its values but not its cancellation: a part stops when
// the supervisor says so, in order, not all at once on the signal.
func (s *supervisor) start(ctx context.Context, name string, run func(ctx context.Context) error) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &runningPart{name: name, cancel: cancel, done: make(chan struct{})}
	s.parts = append(s.parts, p)
	go func() {
		defer close(p.done)
		p.err = run(pctx)
		if pctx.Err() != nil {
			return // asked to stop
		}
		err := p.err
		if err == nil {
			err = errPartStopped
		}
		select {
		case s.failed <- partFailure{name: name, err: err}:
		default:
			s.logger.Error("part failed", "part", name, "err", err)
		}
	}()
}

// wait returns nil when ctx ends, or the failure of the first part to die.
func (s *supervisor) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case f := <-s.failed:
		return f
	}
}

// stop stops the parts in the reverse of the order they started, each
// before the next, so that a gateway drains while the parts under it
// still serve, and waits for each to return.
func (s *supervisor) stop() {
	for i := len(s.parts) - 1; i >= 0; i-- {
		p := s.parts[i]
		p.cancel()
		<-p.done
		if p.err != nil && !errors.Is(p.err, context.Canceled) {
			s.logger.Warn("part stopped with an error", "part", p.name, "err", p.err)
		}
	}
	s.parts = nil
}

// openOrStop runs open (a step of startup that takes no ctx) and returns
// its result, or returns at once when ctx ends first: a signal during a
// slow recovery stops the daemon then and there, instead of when the
// recovery finishes. What open yields after that is closed by closeLate.
func openOrStop[T any](ctx context.Context, what string, open func() (T, error), closeLate func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%w before opening %s", errInterrupted, what)
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := open()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.err == nil && closeLate != nil {
				closeLate(r.v)
			}
		}()
		return zero, fmt.Errorf("%w while opening %s", errInterrupted, what)
	}
}
