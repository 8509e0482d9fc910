package controller

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter sends hashicorp/raft's hclog output to slog. Raft narrates
// every state change at Info and every failed RPC to a down peer at Warn or
// Error, several times a second; so Info is demoted to Debug (the controller
// logs leadership changes itself), and the rest keep their level.
type hclogAdapter struct {
	log  *slog.Logger
	name string
	args []any
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHclog(l *slog.Logger) hclog.Logger {
	return &hclogAdapter{log: l.With("component", "raft")}
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	var lv slog.Level
	switch level {
	case hclog.Trace, hclog.Debug, hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		lv = slog.LevelDebug
	case hclog.Warn:
		lv = slog.LevelWarn
	default:
		lv = slog.LevelError
	}
	if !h.log.Enabled(context.Background(), lv) {
		return
	}
	all := make([]any, 0, len(h.args)+len(args)+2)
	if h.name != "" {
		all = append(all, "raft_component", h.name)
	}
	all = append(all, h.args...)
	all = append(all, fixArgs(args)...)
	h.log.Log(context.Background(), lv, msg, all...)
}

// fixArgs turns hclog's key/value pairs into slog's: an odd tail gets a key.
func fixArgs(args []any) []any {
	if len(args)%2 == 1 {
		args = append(args[:len(args)-1:len(args)-1], "extra", args[len(args)-1])
	}
	return args
}

func (h *hclogAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogAdapter) IsTrace() bool { return false }
func (h *hclogAdapter) IsDebug() bool { return h.log.Enabled(context.Background(), slog.LevelDebug) }
func (h *hclogAdapter) IsInfo() bool  { return h.IsDebug() }
func (h *hclogAdapter) IsWarn() bool  { return h.log.Enabled(context.Background(), slog.LevelWarn) }
func (h *hclogAdapter) IsError() bool { return h.log.Enabled(context.Background(), slog.LevelError) }

func (h *hclogAdapter) ImpliedArgs() []any { return h.args }

func (h *hclogAdapter) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any(nil), h.args...), fixArgs(args)...)
	return &c
}

func (h *hclogAdapter) Name() string { return h.name }

func (h *hclogAdapter) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hclogAdapter) SetLevel(hclog.Level) {}

func (h *hclogAdapter) GetLevel() hclog.Level {
	if h.IsDebug() {
		return hclog.Debug
	}
	return hclog.Warn
}

func (h *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(nil), "", 0)
}

func (h *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		h.Log(hclog.Info, strings.TrimSpace(string(p)))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
