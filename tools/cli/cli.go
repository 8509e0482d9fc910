package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at link time:
//
//	go build -ldflags "-X github.com/aerostream/aerostream/tools/cli.version=v1.2.3"
var version string

// Version is the binary's version: the link-time value, else the module
// version (go install …@vX), else "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Env is what a command needs from its process, so tests can run commands
// in-process.
type Env struct {
	Stdout, Stderr io.Writer
	Environ        []string // os.Environ form
}

// Exit codes of Main.
const (
	exitOK      = 0
	exitFailure = 1
	// exitUsage is a command line that does not say what to do: an
	// unknown command or flag, a missing argument.
	exitUsage = 2
)

// Main runs the command line args (without the program name) and returns
// the exit code. Failures are reported as one line on stderr.
func Main(ctx context.Context, args []string, env Env) int {
	root := NewRoot(env)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "aerostream: %s\n", oneLine(err.Error()))
		if isUsage(err) {
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

// usageError is a command line that does not say what to do.
type usageError struct{ err error }

func (e usageError) Error() string   { return e.err.Error() }
func (e usageError) Unwrap() []error { return []error{e.err, errUsage} }

// isUsage reports whether err is a usage error: ours, or cobra's for an
// unknown command (which it does not type) or a missing required flag.
func isUsage(err error) bool {
	msg := err.Error()
	return errors.Is(err, errUsage) || strings.HasPrefix(msg, "unknown command ") ||
		strings.HasPrefix(msg, "required flag(s) ")
}

// requireSubcommand makes a command that only groups others refuse any
// argument that is not one of them. Left alone, cobra prints the group's
// help for `topic creat x` and exits 0, so a typo looks like success.
func requireSubcommand(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %q?)", s[0])
		}
		return usageError{errors.New(msg)}
	}
}

// needArgs accepts at least min and at most max (negative: any number)
// arguments, and otherwise names what is missing or extra.
func needArgs(what string, min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return usageError{fmt.Errorf("%s: missing %s (usage: %s)", cmd.CommandPath(), what, cmd.UseLine())}
		case max >= 0 && len(args) > max:
			return usageError{fmt.Errorf("%s: too many arguments: %s takes %s, got %q", cmd.CommandPath(), cmd.Name(), what, args)}
		}
		return nil
	}
}

// NewRoot builds the command tree.
func NewRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "aerostream",
		Short: "AeroStream: a Kafka-compatible event log with tiered storage",
		// Errors are printed once, on one line, by Main; usage only on
		// request, so a failed start does not scroll its reason away.
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newDaemonCmd(env, serveCmd),
		newDaemonCmd(env, storeCmd),
		newControllerCmd(env),
		newGatewayCmd(env),
		newTopicCmd(env),
		newCreateTopicCmd(env),
		newProduceCmd(env),
		newConsumeCmd(env),
		newVersionCmd(env),
		newBenchCmd(env),
		newTierCmd(env),
		newIcebergCmd(env),        // iceberg.go
		newSchemaCmd(env),         // schema.go
		newUserCmd(env, os.Stdin), // security_cmd.go
		newACLCmd(env),
		newRoleCmd(env),   // security_cmd_role.go
		newHealthCmd(env), // health.go
	)
	return root
}

func newVersionCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(env.Stdout, "aerostream %s %s %s/%s\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// oneLine folds an error text (pebble's, cobra's suggestions) onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// osEnv is the Env of the real process.
func osEnv() Env {
	return Env{Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()}
}

// Run is Main for the real process.
func Run() int {
	return Main(context.Background(), os.Args[1:], osEnv())
}
