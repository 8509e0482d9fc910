package cli

import (
	"context"
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

// Main runs the command line args (without the program name) and returns
// the exit code. Failures are reported as one line on stderr.
func Main(ctx context.Context, args []string, env Env) int {
	root := NewRoot(env)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "aerostream: %s\n", oneLine(err.Error()))
		return 1
	}
	return 0
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
	root.AddCommand(
		newDaemonCmd(env, serveCmd),
		newDaemonCmd(env, storeCmd),
		newControllerCmd(env),
		newGatewayCmd(env),
		newTopicCmd(env),
		newVersionCmd(env),
		newBenchCmd(env),
		newTierCmd(env),
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
