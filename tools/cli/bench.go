package cli

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/tools/bench"
)

func newBenchCmd(env Env) *cobra.Command {
	cfg := bench.DefaultConfig()
	var (
		jsonPath, cpuProfile string
		mode                 string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a Kafka-compatible broker (OpenMessaging Benchmark workload model)",
		Long: `Run an OpenMessaging Benchmark style workload against any Kafka-compatible
broker (AeroStream, Apache Kafka, Redpanda, ...) through franz-go.

Each of --topics topics has --partitions partitions, --producers producers
and --subscriptions subscriptions of --consumers consumers. A subscription
is a consumer group (--consume-mode group, as OMB's Kafka driver does), or
with --consume-mode assign its consumers split the partitions by direct
assignment (partition p to consumer p mod --consumers; no group, no commits).

Producers share --rate messages per second over a token schedule (0 = as
fast as the broker acknowledges). After --warmup, whose figures are
discarded, the run measures for --duration, then waits up to --drain for
the consumers to catch up.

With --backlog-bytes the consumers start only once that much has been
published (OMB's consumer backlog); the measured phase then runs from
when they are ready until they have read the backlog, or --duration ends.
At --rate 0 the producers stop once the backlog is written, so the run
measures the maximum consume rate alone, as Kafka's ConsumerPerformance
does over a filled topic.

Each message carries its send time, so consumers measure end-to-end
latency. A progress line goes to stderr every second; the summary goes to
stdout and, with --json, the full result (rates, p50/p95/p99/p99.9/max
latencies, per-second series) to a file. With --broker-pid the run also
reports that local process's CPU and RSS over the measured phase.

--protocol native runs the same workload through the native protocol and
its Go SDK against the native gateway at --brokers (topics are created and
deleted there too; consumers split the partitions as in assign mode), so
one machine can compare both doors of the same broker.

Topics that do not exist are created (replication factor
--replication-factor) and, unless --delete-topics=false, deleted at the
end; topics that existed are never deleted. Without --topic-names the
topics get fresh names each run.

SIGINT or SIGTERM ends the measured phase early and reports it; a second
signal exits at once.`,
		Example: `  aerostream bench --brokers 127.0.0.1:9092 --partitions 32 --producers 4 \
      --consumers 4 --message-size 1024 --acks 1 --rate 50000 \
      --warmup 10s --duration 30s --json result.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setGCPercent(benchGCPercent)
			cfg.ConsumeMode = bench.ConsumeMode(mode)
			if cmd.Flags().Changed("topic-names") && !cmd.Flags().Changed("topics") {
				cfg.Topics = 0 // taken from the names
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				// After the first signal, the default action again: a
				// second one ends the process.
				<-ctx.Done()
				stop()
			}()
			if cpuProfile != "" {
				// The client's own profile: on a shared machine its CPU is
				// part of what the run measures.
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			res, err := bench.Run(ctx, cfg, env.Stderr)
			if res != nil {
				if jsonPath != "" {
					if werr := res.WriteJSON(jsonPath); werr != nil {
						return fmt.Errorf("writing result: %w", werr)
					}
				}
				if werr := res.WriteSummary(env.Stdout); werr != nil {
					return werr
				}
			}
			if err == nil && res != nil && res.Interrupted {
				return fmt.Errorf("interrupted: %.1f s measured of %s", res.MeasuredSeconds, cfg.Duration)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringSliceVarP(&cfg.Brokers, "brokers", "b", cfg.Brokers, "bootstrap servers, host:port, comma separated")
	f.StringVar(&cfg.Protocol, "protocol", "kafka", "kafka, or native: the native gateway at the first --brokers address (e.g. 127.0.0.1:9091) through the Go SDK")
	f.IntVar(&cfg.Topics, "topics", cfg.Topics, "number of topics")
	f.StringSliceVar(&cfg.TopicNames, "topic-names", nil, "use these topics (comma separated) instead of fresh ones")
	f.StringToStringVar(&cfg.TopicConfigs, "topic-config", nil, "configs of the topics the run creates, key=value (repeatable), e.g. retention.bytes=1073741824")
	f.StringVar(&cfg.TopicPrefix, "topic-prefix", cfg.TopicPrefix, "prefix of generated topic names")
	f.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions per topic, for topics the run creates")
	f.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "replication factor of topics the run creates")
	f.BoolVar(&cfg.CreateTopics, "create-topics", cfg.CreateTopics, "create topics that do not exist")
	f.BoolVar(&cfg.DeleteTopics, "delete-topics", cfg.DeleteTopics, "delete the topics the run created when it ends")
	f.IntVar(&cfg.Producers, "producers", cfg.Producers, "producers per topic (one client each)")
	f.IntVar(&cfg.Subscriptions, "subscriptions", cfg.Subscriptions, "subscriptions per topic")
	f.IntVar(&cfg.Consumers, "consumers", cfg.Consumers, "consumers per subscription (one client each)")
	f.StringVar(&mode, "consume-mode", string(cfg.ConsumeMode), "group (a consumer group per subscription) or assign (direct partition assignment)")
	f.IntVar(&cfg.MessageSize, "message-size", cfg.MessageSize, "message payload bytes (at least 8: the send timestamp)")
	f.Float64Var(&cfg.Rate, "rate", cfg.Rate, "target publish rate in msg/s over all producers; 0 = max")
	f.BoolVar(&cfg.Sustainable, "sustainable", false, "with --rate 0: find and hold the highest rate the consumers keep up with (OMB's producerRate 0), not publish without limit")
	f.Int64Var(&cfg.BacklogBytes, "backlog-bytes", 0, "OMB's consumer backlog, in payload bytes: publish this much before the consumers start, then measure them draining it; with --rate 0 the producers stop once it is written, so the consume rate is the consumers' maximum")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of the measured phase")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before measuring; its figures are discarded")
	f.DurationVar(&cfg.Drain, "drain", cfg.Drain, "how long consumers may catch up after the producers stop")
	f.StringVar(&cfg.Acks, "acks", cfg.Acks, "producer acks: 0, 1 or all")
	f.BoolVar(&cfg.Idempotent, "idempotent", cfg.Idempotent, "idempotent producer (only with --acks all)")
	f.DurationVar(&cfg.Linger, "linger", cfg.Linger, "producer linger (linger.ms)")
	f.IntVar(&cfg.BatchBytes, "batch-size", cfg.BatchBytes, "largest record batch in bytes (batch.size)")
	f.IntVar(&cfg.MaxInflight, "max-inflight", cfg.MaxInflight, "produce requests in flight per broker (kgo, non-idempotent producers) or per connection (native, at most 5 when idempotent)")
	f.IntVar(&cfg.BufferBytes, "buffer-memory", cfg.BufferBytes, "bytes each producer may hold unacknowledged (buffer.memory)")
	f.StringVar(&cfg.Compression, "compression", cfg.Compression, "none, gzip, snappy, lz4 or zstd")
	f.IntVar(&cfg.BrokerPID, "broker-pid", 0, "local broker process to sample CPU and RSS of (/proc)")
	f.StringVar(&jsonPath, "json", "", "write the result as JSON to this file")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this client (the bench process) to this file")
	f.DurationVar(&cfg.Progress, "progress-interval", cfg.Progress, "interval of the progress line")
	return cmd
}

// benchGCPercent is the load generator's Go GC target when GOGC is not
// set. The bench shares the machine with the broker under test and its GC
// is part of every latency it records, for any broker: at Go's default it
// collected 9 times a second at 50,000 msg/s, and 400 (2 a second) cut the
// publish p99 it reported by about a tenth and the end-to-end p99 by an
// eighth, in paired runs against the same broker. OMB's workers tune their
// JVM's collector for the same reason.
const benchGCPercent = 400
