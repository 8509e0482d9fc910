package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// The native protocol's command-line client: create-topic, produce and
// consume, as the seed product's CLI types them, against a native gateway
// (--server, else AEROSTREAM_NATIVE_ADDR, else 127.0.0.1:9091).

// nativeServer is where the native commands connect.
func nativeServer(env Env, flag string) string {
	if flag != "" {
		return flag
	}
	for _, kv := range env.Environ {
		if v, ok := strings.CutPrefix(kv, "AEROSTREAM_NATIVE_ADDR="); ok && v != "" {
			return v
		}
	}
	return client.DefaultAddr
}

// nativeSecurity holds a native command's TLS and SASL flags, as a Kafka
// client's security.protocol, ssl.ca.location and sasl.* settings.
type nativeSecurity struct {
	tls                           bool
	caFile                        string
	mechanism, user, passwordFile string
}

func dialNative(ctx context.Context, env Env, server string, sec *nativeSecurity) (*client.Client, error) {
	opts := client.Options{ClientID: "aerostream-cli"}
	if sec != nil {
		var err error
		if opts.TLS, opts.SASL, err = sec.options(env); err != nil {
			return nil, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.Dial(dctx, nativeServer(env, server), opts)
}

// addServerFlag adds --server and the security flags.
func addServerFlag(cmd *cobra.Command, server *string, sec *nativeSecurity) {
	cmd.Flags().StringVar(server, "server", "", "native gateway host:port (default $AEROSTREAM_NATIVE_ADDR, else "+client.DefaultAddr+")")
	cmd.Flags().BoolVar(&sec.tls, "tls", false, "connect over TLS (an SSL:// or SASL_SSL:// listener)")
	cmd.Flags().StringVar(&sec.caFile, "tls-ca", "", "PEM CA bundle the gateway's certificate is verified against (implies --tls; default the system roots)")
	cmd.Flags().StringVar(&sec.mechanism, "sasl-mechanism", "", "SASL mechanism: SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN (a SASL_PLAINTEXT:// or SASL_SSL:// listener)")
	cmd.Flags().StringVar(&sec.user, "sasl-user", "", "SASL user name")
	cmd.Flags().StringVar(&sec.passwordFile, "sasl-password-file", "", "read the SASL password from this file (its first line); default $AEROSTREAM_SASL_PASSWORD, never the command line")
}
func parseInt32Arg(what, s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, usageError{fmt.Errorf("%s %q is not a number", what, s)}
	}
	return int32(v), nil
}

func newCreateTopicCmd(env Env) *cobra.Command {
	var server string
	var sec nativeSecurity
	var configs []string
	cmd := &cobra.Command{
		Use:   "create-topic NAME [PARTITIONS [REPLICATION_FACTOR]]",
		Short: "Create a topic through the native gateway",
		Example: `  aerostream create-topic orders 3 1
  aerostream create-topic events 12 3 --config retention.ms=86400000`,
		Args: needArgs("NAME [PARTITIONS [REPLICATION_FACTOR]]", 1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			parts, rf := int32(-1), int32(-1)
			var err error
			if len(args) > 1 {
				if parts, err = parseInt32Arg("partition count", args[1]); err != nil {
					return err
				}
			}
			if len(args) > 2 {
				if rf, err = parseInt32Arg("replication factor", args[2]); err != nil {
					return err
				}
			}
			cfg := map[string]string{}
			for _, c := range configs {
				k, v, ok := strings.Cut(c, "=")
				if !ok {
					return usageError{fmt.Errorf("--config %q: want key=value", c)}
				}
				cfg[k] = v
			}
			cl, err := dialNative(cmd.Context(), env, server, &sec)
			if err != nil {
				return err
			}
			defer cl.Close()
			t, err := cl.CreateTopic(cmd.Context(), args[0], parts, int16(rf), cfg)
			if err != nil {
				return fmt.Errorf("create topic %s: %w", args[0], err)
			}
			_, err = fmt.Fprintf(env.Stdout, "created topic %s: %d partitions, replication factor %d\n", t.Name, t.Partitions, t.ReplicationFactor)
			return err
		},
	}
	addServerFlag(cmd, &server, &sec)
	cmd.Flags().StringArrayVar(&configs, "config", nil, "topic config key=value (repeatable)")
	return cmd
}

func newProduceCmd(env Env) *cobra.Command {
	var (
		server, keySep, key, compression string
		sec                              nativeSecurity
		acks                             int
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC [PARTITION [VALUE]]",
		Short: "Produce records through the native gateway",
		Long: `Produce one record (VALUE given) or one record per line of standard input.
Without PARTITION, records with a key go to the partition of its hash (the
one Kafka's Java clients pick), and records without one are spread over the
partitions. --key-separator splits each input line into key and value at
its first separator.`,
		Example: `  aerostream produce orders 0 '{"order_id": "ORD-1001", "amount": 99.50}'
  seq 1 10 | aerostream produce orders
  printf 'k1:v1\nk2:v2\n' | aerostream produce orders --key-separator ':'`,
		Args: needArgs("TOPIC [PARTITION [VALUE]]", 1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			part := int32(-1)
			if len(args) > 1 {
				p, err := parseInt32Arg("partition", args[1])
				if err != nil {
					return err
				}
				part = p
			}
			codec, err := parseCompression(compression)
			if err != nil {
				return err
			}
			if acks != 0 && acks != 1 && acks != -1 {
				return usageError{fmt.Errorf("--acks %d: want 0, 1 or -1 (all)", acks)}
			}
			cl, err := dialNative(ctx, env, server, &sec)
			if err != nil {
				return err
			}
			defer cl.Close()
			if _, err := cl.Topic(ctx, args[0]); err != nil {
				return err
			}
			p := client.NewProducer(cl, client.ProducerOptions{Acks: int8(acks), AcksSet: true, Compression: codec})
			var (
				failed   error
				produced int
			)
			done := func(_ *client.Record, err error) {
				if err != nil && failed == nil {
					failed = err
				}
			}
			send := func(k, v []byte) {
				if k == nil && key != "" {
					k = []byte(key)
				}
				p.Produce(ctx, &client.Record{Topic: args[0], Partition: part, Key: k, Value: v}, done)
				produced++
			}
			if len(args) == 3 {
				send(nil, []byte(args[2]))
			} else {
				sc := bufio.NewScanner(os.Stdin)
				sc.Buffer(make([]byte, 64<<10), 16<<20)
				for sc.Scan() {
					line := sc.Bytes()
					var k []byte
					if keySep != "" {
						if kk, vv, ok := bytes.Cut(line, []byte(keySep)); ok {
							k, line = bytes.Clone(kk), vv
						}
					}
					send(k, bytes.Clone(line))
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
			}
			if err := p.Close(ctx); err != nil {
				return err
			}
			if failed != nil {
				return fmt.Errorf("produce to %s: %w", args[0], failed)
			}
			if len(args) == 3 {
				return nil
			}
			_, err = fmt.Fprintf(env.Stderr, "produced %d records to %s\n", produced, args[0])
			return err
		},
	}
	addServerFlag(cmd, &server, &sec)
	cmd.Flags().StringVar(&keySep, "key-separator", "", "split each stdin line into key and value at this separator")
	cmd.Flags().StringVarP(&key, "key", "k", "", "key for every record")
	cmd.Flags().IntVar(&acks, "acks", -1, "0, 1 or -1 (all)")
	cmd.Flags().StringVar(&compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	return cmd
}

func parseCompression(s string) (int16, error) {
	switch s {
	case "", "none":
		return client.CompressionNone, nil
	case "gzip":
		return client.CompressionGzip, nil
	case "snappy":
		return client.CompressionSnappy, nil
	case "lz4":
		return client.CompressionLZ4, nil
	case "zstd":
		return client.CompressionZstd, nil
	}
	return 0, usageError{fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)}
}

func newConsumeCmd(env Env) *cobra.Command {
	var (
		server, group, fromTime, format, keySep string
		sec                                     nativeSecurity
		follow, fromBeginning                   bool
		count                                   int
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC [PARTITION [OFFSET]]",
		Short: "Consume records through the native gateway",
		Long: `Print the records of a topic (every partition, or PARTITION) from OFFSET,
--from-beginning, --from-time, or by default: from the beginning, or with
--follow from the end. Without --follow it stops once it has caught up
with the log; with it, it waits for new records until Ctrl-C. -n stops
after that many records.

--group reads as a member of a consumer group: the gateway assigns the
partitions, each starts at the group's committed offset (shared with Kafka
consumers of the group), and offsets are committed as records are printed.
Ctrl-C commits and leaves the group.

--format prints each record through a template: %t topic, %p partition,
%o offset, %k key, %v value, %T timestamp (Unix ms), %K key size, %S value
size, \n newline, \t tab, %% percent. The default is the value and a
newline, or the key, --key-separator and the value when one is given.`,
		Example: `  aerostream consume orders 0 0 --follow
  aerostream consume orders --from-beginning -n 10
  aerostream consume orders --group g1 --follow
  aerostream consume orders --from-time 2026-12-01T10:00:00Z --format '%p %o %k %v\n'`,
		Args: needArgs("TOPIC [PARTITION [OFFSET]]", 1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if group != "" && (len(args) > 1 || fromTime != "") {
				return usageError{errors.New("--group: the group assigns the partitions and starts at its committed offsets; give no PARTITION, OFFSET or --from-time")}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := client.ConsumerOptions{Topic: args[0], Start: client.StartEarliest, StartSet: true}
			if follow {
				opts.Start = client.StartLatest
			}
			if fromBeginning {
				opts.Start = client.StartEarliest
			}
			if len(args) > 1 {
				p, err := parseInt32Arg("partition", args[1])
				if err != nil {
					return err
				}
				opts.Partitions = []int32{p}
			}
			if len(args) > 2 {
				o, err := strconv.ParseInt(args[2], 10, 64)
				if err != nil || o < 0 {
					return usageError{fmt.Errorf("offset %q is not a non-negative number", args[2])}
				}
				opts.Start = o
			}
			if fromTime != "" {
				t, err := time.Parse(time.RFC3339, fromTime)
				if err != nil {
					return usageError{fmt.Errorf("--from-time %q: want RFC 3339, like 2026-12-01T10:00:00Z", fromTime)}
				}
				opts.StartTime = t
			}
			if format == "" {
				format = `%v\n`
				if keySep != "" {
					format = `%k` + strings.ReplaceAll(keySep, "%", "%%") + `%v\n`
				}
			}
			tmpl, err := parseFormat(format)
			if err != nil {
				return usageError{err}
			}
			cl, err := dialNative(ctx, env, server, &sec)
			if err != nil {
				return err
			}
			defer cl.Close()
			if follow {
				// A follower takes records as the gateway pushes them.
				opts.MaxWait, opts.Push = 5*time.Second, true
			}
			var co consumer
			if group != "" {
				gopts := client.GroupOptions{Group: group, Topic: args[0], Start: client.StartEarliest}
				if follow && !fromBeginning {
					gopts.Start = client.StartLatest
				}
				gc, err := client.JoinGroup(ctx, cl, gopts)
				if err != nil {
					return err
				}
				co = groupConsumer{gc}
			} else {
				c, err := client.NewConsumer(ctx, cl, opts)
				if err != nil {
					return err
				}
				co = plainConsumer{c}
			}
			// Whatever ends the loop (Ctrl-C included), the group keeps
			// what was printed and the member leaves at once, so its
			// partitions move to the others without waiting out its
			// session.
			defer func() {
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := co.close(cctx); err != nil {
					fmt.Fprintf(env.Stderr, "aerostream: leaving group %s: %v\n", group, err)
				}
			}()
			w := bufio.NewWriter(env.Stdout)
			defer w.Flush()
			seen := 0
			next := map[int32]int64{}
			commit := func() error {
				if len(next) == 0 {
					return nil
				}
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := co.commit(cctx, next)
				clear(next)
				return err
			}
			for {
				msgs, err := co.poll(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return commit() // Ctrl-C
					}
					return err
				}
				for i := range msgs {
					tmpl.write(w, &msgs[i])
					next[msgs[i].Partition] = msgs[i].Offset + 1
					seen++
					if count > 0 && seen >= count {
						if err := w.Flush(); err != nil {
							return err
						}
						return commit()
					}
				}
				if err := w.Flush(); err != nil {
					return err
				}
				if follow {
					// The commit rides on the next poll's fetch: no
					// round trip of its own. next is kept for the
					// final commit, which covers it either way.
					if err := co.commitOnNextPoll(ctx, next); err != nil {
						return fmt.Errorf("commit for group %s: %w", group, err)
					}
				} else if err := commit(); err != nil {
					return fmt.Errorf("commit for group %s: %w", group, err)
				}
				if !follow && co.caughtUp() {
					return nil
				}
			}
		},
	}
	addServerFlag(cmd, &server, &sec)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "wait for new records until Ctrl-C")
	cmd.Flags().BoolVar(&fromBeginning, "from-beginning", false, "start at each partition's first record")
	cmd.Flags().IntVarP(&count, "count", "n", 0, "stop after this many records")
	cmd.Flags().StringVar(&group, "group", "", "read as a member of this consumer group: the group assigns partitions, and offsets are committed as records are printed")
	cmd.Flags().StringVar(&fromTime, "from-time", "", "start at the first record at or after this RFC 3339 time")
	cmd.Flags().StringVar(&format, "format", "", `output template (%t %p %o %k %v %T %K %S, \n \t %%)`)
	cmd.Flags().StringVar(&keySep, "key-separator", "", "print the key, this separator and the value")
	return cmd
}

// consumer is what consume reads through: a plain consumer, or a group
// member that commits.
type consumer interface {
	poll(ctx context.Context) ([]client.Message, error)
	caughtUp() bool
	commit(ctx context.Context, next map[int32]int64) error
	commitOnNextPoll(ctx context.Context, next map[int32]int64) error
	close(ctx context.Context) error
}

type plainConsumer struct{ c *client.Consumer }

func (p plainConsumer) poll(ctx context.Context) ([]client.Message, error) { return p.c.Poll(ctx) }
func (p plainConsumer) caughtUp() bool                                     { return p.c.CaughtUp() }
func (p plainConsumer) commit(context.Context, map[int32]int64) error      { return nil }
func (p plainConsumer) close(context.Context) error                        { return p.c.Close() }
func (p plainConsumer) commitOnNextPoll(context.Context, map[int32]int64) error {
	return nil
}

type groupConsumer struct{ g *client.GroupConsumer }

func (g groupConsumer) poll(ctx context.Context) ([]client.Message, error) { return g.g.Poll(ctx) }
func (g groupConsumer) caughtUp() bool                                     { return g.g.CaughtUp() }
func (g groupConsumer) commit(ctx context.Context, next map[int32]int64) error {
	return g.g.Commit(ctx, next)
}
func (g groupConsumer) close(ctx context.Context) error { return g.g.Close(ctx) }
func (g groupConsumer) commitOnNextPoll(ctx context.Context, next map[int32]int64) error {
	return g.g.CommitOnNextPoll(ctx, next)
}

// format is a parsed --format template: literal text and fields.
type format []formatPart

type formatPart struct {
	lit   string
	field byte // 0: lit
}

func parseFormat(s string) (format, error) {
	var out format
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, formatPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == '%' || c == '\\') && i+1 < len(s) {
			i++
			n := s[i]
			switch {
			case c == '\\' && n == 'n':
				lit.WriteByte('\n')
			case c == '\\' && n == 't':
				lit.WriteByte('\t')
			case c == '\\' && n == '\\':
				lit.WriteByte('\\')
			case c == '%' && n == '%':
				lit.WriteByte('%')
			case c == '%' && strings.IndexByte("tpokvTKS", n) >= 0:
				flush()
				out = append(out, formatPart{field: n})
			default:
				return nil, fmt.Errorf("--format: unknown %c%c (want %%t %%p %%o %%k %%v %%T %%K %%S, \\n \\t %%%%)", c, n)
			}
			continue
		}
		lit.WriteByte(c)
	}
	flush()
	return out, nil
}

func (f format) write(w io.Writer, m *client.Message) {
	var num [24]byte
	for _, p := range f {
		switch p.field {
		case 0:
			_, _ = io.WriteString(w, p.lit)
		case 't':
			_, _ = io.WriteString(w, m.Topic)
		case 'p':
			_, _ = w.Write(strconv.AppendInt(num[:0], int64(m.Partition), 10))
		case 'o':
			_, _ = w.Write(strconv.AppendInt(num[:0], m.Offset, 10))
		case 'k':
			_, _ = w.Write(m.Key)
		case 'v':
			_, _ = w.Write(m.Value)
		case 'T':
			_, _ = w.Write(strconv.AppendInt(num[:0], m.Timestamp.UnixMilli(), 10))
		case 'K':
			_, _ = w.Write(strconv.AppendInt(num[:0], int64(len(m.Key)), 10))
		case 'S':
			_, _ = w.Write(strconv.AppendInt(num[:0], int64(len(m.Value)), 10))
		}
	}
}

// options builds the SDK's TLS and SASL options from the flags.
func (f *nativeSecurity) options(env Env) (*tls.Config, sasl.Mechanism, error) {
	var tc *tls.Config
	if f.tls || f.caFile != "" {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
		if f.caFile != "" {
			pem, err := os.ReadFile(f.caFile)
			if err != nil {
				return nil, nil, fmt.Errorf("--tls-ca: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", f.caFile)
			}
		}
	}
	if f.mechanism == "" {
		if f.user != "" || f.passwordFile != "" {
			return nil, nil, usageError{errors.New("--sasl-user and --sasl-password-file need --sasl-mechanism")}
		}
		return tc, nil, nil
	}
	if f.user == "" {
		return nil, nil, usageError{errors.New("--sasl-mechanism needs --sasl-user")}
	}
	var pass string
	if f.passwordFile != "" {
		b, err := os.Open(f.passwordFile)
		if err != nil {
			return nil, nil, err
		}
		defer b.Close()
		if pass, err = readPassword(b, f.passwordFile); err != nil { // security_cmd.go
			return nil, nil, err
		}
	} else if pass = envValue(env.Environ, "AEROSTREAM_SASL_PASSWORD"); pass == "" {
		return nil, nil, usageError{errors.New("the SASL password comes from --sasl-password-file or AEROSTREAM_SASL_PASSWORD (never the command line)")}
	}
	switch strings.ToUpper(f.mechanism) {
	case "SCRAM-SHA-256":
		return tc, scram.Auth{User: f.user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return tc, scram.Auth{User: f.user, Pass: pass}.AsSha512Mechanism(), nil
	case "PLAIN":
		return tc, plain.Auth{User: f.user, Pass: pass}.AsMechanism(), nil
	}
	return nil, nil, usageError{fmt.Errorf("--sasl-mechanism %q: want SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN", f.mechanism)}
}
