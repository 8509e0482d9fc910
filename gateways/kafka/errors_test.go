package kafka

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore/ring"
)

// sentinelPackages lists, by name, every exported sentinel of the packages
// whose errors reach the gateway. A name is needed to find a value, so the
// list is kept by hand; TestErrorTableCoversSentinels reads each package's
// source to catch a sentinel added there but missing here (and so, most
// likely, from errorTable too).
var sentinelPackages = []struct {
	dir  string // relative to this package
	errs map[string]error
}{
	{"../../controller", map[string]error{
		"ErrTopicExists":              controller.ErrTopicExists,
		"ErrUnknownTopic":             controller.ErrUnknownTopic,
		"ErrUnknownTopicID":           controller.ErrUnknownTopicID,
		"ErrInvalidTopic":             controller.ErrInvalidTopic,
		"ErrInvalidPartitions":        controller.ErrInvalidPartitions,
		"ErrInvalidReplicationFactor": controller.ErrInvalidReplicationFactor,
		"ErrInvalidConfig":            controller.ErrInvalidConfig,
		"ErrInvalidRequest":           controller.ErrInvalidRequest,
		"ErrMalformedCommand":         controller.ErrMalformedCommand,
		"ErrNotLeader":                controller.ErrNotLeader,
		"ErrUnknownNode":              controller.ErrUnknownNode,
		"ErrNodeIDInUse":              controller.ErrNodeIDInUse,
		"ErrTimeout":                  controller.ErrTimeout,
		"ErrClosed":                   controller.ErrClosed,
		"ErrInvalidReplicaAssignment": controller.ErrInvalidReplicaAssignment,
		"ErrNoReassignmentInProgress": controller.ErrNoReassignmentInProgress,
		"ErrStaleRequest":             controller.ErrStaleRequest,
		"ErrIneligibleReplica":        controller.ErrIneligibleReplica,
		"ErrTooManyPartitions":        controller.ErrTooManyPartitions,
		"ErrUnknownUser":              controller.ErrUnknownUser,
		"ErrUnauthenticated":          controller.ErrUnauthenticated,
	}},
	{"../../logstore/ring", map[string]error{
		"ErrProtocol":             ring.ErrProtocol,
		"ErrTLSRequired":          ring.ErrTLSRequired,
		"ErrFrameTooLarge":        ring.ErrFrameTooLarge,
		"ErrConnClosed":           ring.ErrConnClosed,
		"ErrWrongShard":           ring.ErrWrongShard,
		"ErrStaleRing":            ring.ErrStaleRing,
		"ErrUnsupported":          ring.ErrUnsupported,
		"ErrRemote":               ring.ErrRemote,
		"ErrCorruptBatch":         ring.ErrCorruptBatch,
		"ErrBadMagic":             ring.ErrBadMagic,
		"ErrBadCRC":               ring.ErrBadCRC,
		"ErrInvalidProducer":      ring.ErrInvalidProducer,
		"ErrMessageTooLarge":      ring.ErrMessageTooLarge,
		"ErrOffsetOutOfRange":     ring.ErrOffsetOutOfRange,
		"ErrUnknownPartition":     ring.ErrUnknownPartition,
		"ErrPartitionExists":      ring.ErrPartitionExists,
		"ErrCorruptSegment":       ring.ErrCorruptSegment,
		"ErrCorruptIndex":         ring.ErrCorruptIndex,
		"ErrOutOfOrderSequence":   ring.ErrOutOfOrderSequence,
		"ErrInvalidProducerEpoch": ring.ErrInvalidProducerEpoch,
		"ErrColdTier":             ring.ErrColdTier,
		"ErrNotLocal":             ring.ErrNotLocal,
		"ErrStorage":              ring.ErrStorage,
		"ErrTooManyPartitions":    ring.ErrTooManyPartitions,
		"ErrInvalidRequest":       ring.ErrInvalidRequest,
		"ErrClosed":               ring.ErrClosed,
		"ErrNotLeader":            ring.ErrNotLeader,
		"ErrNotEnoughReplicas":    ring.ErrNotEnoughReplicas,
		"ErrFencedLeaderEpoch":    ring.ErrFencedLeaderEpoch,
		"ErrUnknownLeaderEpoch":   ring.ErrUnknownLeaderEpoch,
		"ErrCompactedNoKey":       ring.ErrCompactedNoKey,
	}},
	{".", map[string]error{
		"ErrUnknownTopic":             ErrUnknownTopic,
		"ErrUnknownTopicID":           ErrUnknownTopicID,
		"ErrTopicExists":              ErrTopicExists,
		"ErrInvalidTopic":             ErrInvalidTopic,
		"ErrInvalidPartitions":        ErrInvalidPartitions,
		"ErrInvalidReplicationFactor": ErrInvalidReplicationFactor,
		"ErrInvalidReplicaAssignment": ErrInvalidReplicaAssignment,
		"ErrInvalidConfig":            ErrInvalidConfig,
		"ErrUnknownResource":          ErrUnknownResource,
		"ErrUnavailable":              ErrUnavailable,
	}},
}

// exportedErrVars returns the names of the exported package-level vars
// named Err* declared in dir's non-test Go files, whatever their build tags.
func exportedErrVars(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						seen[n.Name] = true
					}
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestErrorTableCoversSentinels: every sentinel the store, the controller
// or the Cluster contract can return answers with a Kafka code of its own,
// not UNKNOWN_SERVER_ERROR, also when wrapped.
func TestErrorTableCoversSentinels(t *testing.T) {
	for _, sp := range sentinelPackages {
		declared := exportedErrVars(t, sp.dir)
		for _, name := range declared {
			if _, ok := sp.errs[name]; !ok {
				t.Errorf("%s declares %s, which sentinelPackages does not list: give it a row in errorTable and list it here", sp.dir, name)
			}
		}
		for name, e := range sp.errs {
			if !slices.Contains(declared, name) {
				t.Errorf("sentinelPackages lists %s in %s, which does not declare it", name, sp.dir)
			}
			if ke := ErrorFor(fmt.Errorf("wrapped: %w", e)); ke == nil || ke == kerr.UnknownServerError {
				t.Errorf("%s %s (%v) maps to %v; errorTable needs a row for it", sp.dir, name, e, ke)
			}
		}
	}
}

func TestErrorFor(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{nil, nil},
		{errors.New("something else"), kerr.UnknownServerError},
		{fmt.Errorf("%w: bad", kerr.InvalidTopicException), kerr.InvalidTopicException},
		// A cold-tier failure that wraps a corrupt batch is the broker's.
		{fmt.Errorf("%w: %w", ring.ErrColdTier, ring.ErrCorruptBatch), kerr.KafkaStorageError},
		{&controller.NotLeaderError{LeaderID: -1}, kerr.LeaderNotAvailable},
		{fmt.Errorf("create: %w", controller.ErrNodeIDInUse), kerr.DuplicateBrokerRegistration},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
	} {
		if got := ErrorFor(tc.err); got != tc.want {
			t.Errorf("ErrorFor(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if errorCode(nil) != 0 || errorCode(controller.ErrInvalidConfig) != kerr.InvalidConfig.Code {
		t.Error("errorCode")
	}
}
