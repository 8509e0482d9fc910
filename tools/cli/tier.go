package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	gwhttp "github.com/aerostream/aerostream/gateways/http"
)

// `aerostream tier …` talks to a running store's tier API (gateways/http,
// on listeners.http): the catalog belongs to the store process.

type tierClient struct {
	env  Env
	base string
	json bool
}

func newTierCmd(env Env) *cobra.Command {
	c := &tierClient{env: env}
	cmd := &cobra.Command{
		Use:   "tier",
		Short: "Inspect and operate the tier catalog of a running store",
		Long: `Inspect and operate the tier catalog (segments on local disk and in the
cold tier) of a running store or serve, through its HTTP admin API.`,
	}
	requireSubcommand(cmd)
	var admin string
	cmd.PersistentFlags().StringVar(&admin, "admin", "127.0.0.1:9001", "the store's HTTP admin address (listeners.http)")
	cmd.PersistentFlags().BoolVar(&c.json, "json", false, "print JSON instead of a table")
	cmd.PersistentPreRun = func(*cobra.Command, []string) {
		c.base = "http://" + strings.TrimPrefix(admin, "http://")
	}
	var topic string
	var partition int32
	var base, from, minAgeMs int64
	var now, dryRun bool

	ls := &cobra.Command{Use: "ls", Short: "List segments per topic and partition: state, location, offsets, size, upload time",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if topic != "" {
				q.Set("topic", topic)
			}
			if cmd.Flags().Changed("partition") {
				q.Set("partition", fmt.Sprint(partition))
			}
			return c.ls(cmd.Context(), q)
		}}
	ls.Flags().StringVar(&topic, "topic", "", "only this topic")
	ls.Flags().Int32Var(&partition, "partition", 0, "only this partition")

	describe := &cobra.Command{Use: "describe", Short: "Show one segment in full", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"topic": {topic}, "partition": {fmt.Sprint(partition)}, "base": {fmt.Sprint(base)}}
			var v map[string]any
			if err := c.getJSON(cmd.Context(), "/v1/tier/segment", q, &v); err != nil {
				return err
			}
			return c.printJSON(v)
		}}
	// No defaults: partition 0 at base 0 is a real segment, and showing it
	// to someone who forgot a flag would answer a question not asked.
	describe.Flags().StringVar(&topic, "topic", "", "topic (required)")
	describe.Flags().Int32Var(&partition, "partition", 0, "partition (required)")
	describe.Flags().Int64Var(&base, "base", 0, "the segment's base offset, as tier ls shows it (required)")
	for _, f := range []string{"topic", "partition", "base"} {
		_ = describe.MarkFlagRequired(f)
	}

	verify := &cobra.Command{Use: "verify", Short: "Re-read remote objects and check them against the catalog's checksums", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if topic != "" {
				q.Set("topic", topic)
			}
			var res []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Base      int64  `json:"base_offset"`
				ObjectKey string `json:"object_key"`
				OK        bool   `json:"ok"`
				Problem   string `json:"problem"`
			}
			if err := c.stream(cmd.Context(), "/v1/tier/verify", q, "verify", &res); err != nil {
				return err
			}
			bad := 0
			for _, r := range res {
				if !r.OK {
					bad++
				}
			}
			if c.json {
				if err := c.printJSON(res); err != nil {
					return err
				}
			} else {
				for _, r := range res {
					if !r.OK {
						fmt.Fprintf(c.env.Stdout, "BAD %s/%d@%d %s: %s\n", r.Topic, r.Partition, r.Base, r.ObjectKey, r.Problem)
					}
				}
				fmt.Fprintf(c.env.Stdout, "%d remote segments checked, %d bad\n", len(res), bad)
			}
			if bad > 0 {
				return fmt.Errorf("%d remote segments failed verification", bad)
			}
			return nil
		}}
	verify.Flags().StringVar(&topic, "topic", "", "only this topic")

	offload := &cobra.Command{Use: "offload", Short: "Seal active segments and upload everything sealed, now", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !now {
				return errors.New("offload uploads at once and needs --now (segments are otherwise offloaded as they roll)")
			}
			q := url.Values{}
			if topic != "" {
				q.Set("topic", topic)
			}
			var res map[string]int
			if err := c.stream(cmd.Context(), "/v1/tier/offload", q, "offload", &res); err != nil {
				return err
			}
			return c.result(res, fmt.Sprintf("%d partitions sealed, %d tier jobs done", res["partitions_rolled"], res["jobs"]))
		}}
	offload.Flags().BoolVar(&now, "now", false, "seal and upload now")
	offload.Flags().StringVar(&topic, "topic", "", "only this topic")

	rehydrate := &cobra.Command{Use: "rehydrate", Short: "Bring an offset range back to local disk", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"topic": {topic}, "partition": {fmt.Sprint(partition)}, "from": {fmt.Sprint(from)}}
			var res map[string]int
			if err := c.stream(cmd.Context(), "/v1/tier/rehydrate", q, "rehydrate", &res); err != nil {
				return err
			}
			return c.result(res, fmt.Sprintf("%d segments brought back to local disk", res["segments"]))
		}}
	rehydrate.Flags().StringVar(&topic, "topic", "", "topic (required)")
	rehydrate.Flags().Int32Var(&partition, "partition", 0, "partition (required)")
	rehydrate.Flags().Int64Var(&from, "from", 0, "first offset to bring back (everything after it comes back too)")
	_ = rehydrate.MarkFlagRequired("topic")
	_ = rehydrate.MarkFlagRequired("partition")

	gc := &cobra.Command{Use: "gc", Short: "Find orphaned objects and, with --dry-run=false, remove them", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"dry_run": {fmt.Sprint(dryRun)}, "min_age_ms": {fmt.Sprint(minAgeMs)}}
			var res struct {
				DryRun  bool `json:"dry_run"`
				Orphans []struct {
					Key     string `json:"key"`
					Size    int64  `json:"size"`
					Deleted bool   `json:"deleted"`
				} `json:"orphans"`
			}
			if err := c.postJSON(cmd.Context(), "/v1/tier/gc", q, &res); err != nil {
				return err
			}
			if c.json {
				return c.printJSON(res)
			}
			for _, o := range res.Orphans {
				verb := "orphan"
				if o.Deleted {
					verb = "deleted"
				}
				fmt.Fprintf(c.env.Stdout, "%s %s (%d bytes)\n", verb, o.Key, o.Size)
			}
			if res.DryRun {
				fmt.Fprintf(c.env.Stdout, "%d orphaned objects (dry run: nothing deleted; --dry-run=false deletes)\n", len(res.Orphans))
			} else {
				fmt.Fprintf(c.env.Stdout, "%d orphaned objects deleted\n", len(res.Orphans))
			}
			return nil
		}}
	gc.Flags().BoolVar(&dryRun, "dry-run", true, "only list orphans")
	gc.Flags().Int64Var(&minAgeMs, "min-age-ms", 3600000, "ignore objects younger than this (uploads in progress)")

	restore := &cobra.Command{Use: "restore", Short: "Rebuild a topic's catalog on an empty node from the bucket (manifests, and segments uploaded after them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res map[string]int
			if err := c.stream(cmd.Context(), "/v1/tier/restore", url.Values{"topic": {topic}}, "restore", &res); err != nil {
				return err
			}
			msg := fmt.Sprintf("restored %d partitions, %d remote segments", res["partitions"], res["segments"])
			if n := res["unlisted_segments"]; n > 0 {
				msg += fmt.Sprintf(" (%d newer than their manifest)", n)
			}
			if n := res["gaps"]; n > 0 {
				msg += fmt.Sprintf("; %d offset gaps where no segment was uploaded (see the node's log)", n)
			}
			return c.result(res, msg)
		}}
	restore.Flags().StringVar(&topic, "topic", "", "topic to restore (required)")
	_ = restore.MarkFlagRequired("topic")

	cmd.AddCommand(ls, describe, verify, offload, rehydrate, gc, restore)
	return cmd
}

func (c *tierClient) printJSON(v any) error {
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *tierClient) result(v any, line string) error {
	if c.json {
		return c.printJSON(v)
	}
	_, err := fmt.Fprintln(c.env.Stdout, line)
	return err
}

func (c *tierClient) do(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		body, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("admin API: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return resp, nil
}

func (c *tierClient) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func (c *tierClient) postJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.do(ctx, http.MethodPost, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// stream reads an NDJSON operation, drawing a progress bar on stderr, and
// decodes its result into v.
func (c *tierClient) stream(ctx context.Context, path string, q url.Values, what string, v any) error {
	resp, err := c.do(ctx, http.MethodPost, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	bar := newProgressBar(c.env.Stderr, what, !c.json)
	defer bar.done()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var line struct {
			Progress *struct{ Done, Total int } `json:"progress"`
			Result   json.RawMessage            `json:"result"`
			Error    string                     `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("admin API sent %q: %w", sc.Text(), err)
		}
		switch {
		case line.Error != "":
			return errors.New(line.Error)
		case line.Progress != nil:
			bar.set(line.Progress.Done, line.Progress.Total)
		case line.Result != nil:
			return json.Unmarshal(line.Result, v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("admin API closed the stream without a result")
}

func (c *tierClient) ls(ctx context.Context, q url.Values) error {
	var segs []gwhttp.SegmentView
	if err := c.getJSON(ctx, "/v1/tier/segments", q, &segs); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(segs)
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPART\tBASE\tEND\tBYTES\tSTATE\tLOCATION\tUPLOADED")
	for _, s := range segs {
		up := s.UploadedAt
		if up == "" {
			up = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", s.Topic, s.Partition, s.BaseOffset, s.EndOffset, s.Bytes, s.State, s.Location, up)
	}
	return tw.Flush()
}

// progressBar is a one-line bar on stderr, redrawn at most 10 times a
// second; off when output is JSON so that scripts see clean streams.
type progressBar struct {
	w    io.Writer
	what string
	on   bool
	last time.Time
	drew bool
}

func newProgressBar(w io.Writer, what string, on bool) *progressBar {
	return &progressBar{w: w, what: what, on: on}
}

func (b *progressBar) set(done, total int) {
	if !b.on || total <= 0 || (time.Since(b.last) < 100*time.Millisecond && done < total) {
		return
	}
	b.last = time.Now()
	const width = 30
	filled := width * done / total
	fmt.Fprintf(b.w, "\r%s [%s%s] %d/%d", b.what, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
	b.drew = true
}

func (b *progressBar) done() {
	if b.drew {
		fmt.Fprintln(b.w)
	}
}
