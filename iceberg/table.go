package iceberg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// DLQSuffix names a topic's dead-letter table: <topic>~dlq.
const DLQSuffix = "~dlq"

// DefaultPartitionSpec is iceberg.partition_spec's default.
const DefaultPartitionSpec = "hour(aerostream.timestamp)"

// ParsePartitionSpec reads an iceberg.partition_spec value against sc:
// comma-separated terms, each a column (identity) or transform(column)
// with transform one of identity, year, month, day, hour, bucket[N],
// truncate[N] or void; "none" or empty is unpartitioned. Columns are
// dotted names (aerostream.timestamp).
func ParsePartitionSpec(s string, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return *iceberg.UnpartitionedSpec, nil
	}
	var fields []iceberg.PartitionField
	for i, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		col, tname := term, "identity"
		if open := strings.IndexByte(term, '('); open >= 0 {
			if !strings.HasSuffix(term, ")") {
				return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition spec term %q: want transform(column)", ErrConfig, term)
			}
			tname, col = strings.TrimSpace(term[:open]), strings.TrimSpace(term[open+1:len(term)-1])
		}
		tr, err := iceberg.ParseTransform(tname)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition spec term %q: %v", ErrConfig, term, err)
		}
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition spec term %q: no column %q", ErrConfig, term, col)
		}
		name := strings.ReplaceAll(col, ".", "_")
		if tname != "identity" {
			name += "_" + strings.NewReplacer("[", "_", "]", "").Replace(tname)
		}
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000 + i, Name: name, Transform: tr})
	}
	return iceberg.NewPartitionSpec(fields...), nil
}

// tableProps are the properties of the tables AeroStream creates.
func tableProps(topic string) iceberg.Properties {
	p := iceberg.Properties{
		// A conflicting commit must come back to the committer, which
		// re-reads the offsets; iceberg-go's retry would replay the
		// append on top of the other writer's rows.
		"commit.retry.num-retries": "0",
		"aerostream.topic":         topic,
	}
	maps.Copy(p, writeProps)
	return p
}

// writeProps make the Parquet encoding cheap, since it shares the CPU with
// produce: zstd at its fastest level, and no dictionary on the columns
// whose values are nearly all distinct.
var writeProps = iceberg.Properties{
	"write.parquet.compression-codec": "zstd",
	"write.parquet.compression-level": "1",

	noDictionary + MetaColumn + ".offset":    "false",
	noDictionary + MetaColumn + ".timestamp": "false",
	noDictionary + MetaColumn + ".key":       "false",
	noDictionary + "value":                   "false",
}

// noDictionary turns dictionary encoding off for the column (its Parquet
// path) that follows.
const noDictionary = "write.parquet.dict-encoding-enabled.column."

// withWriteProps sets on tbl those of writeProps it lacks (a table created
// before they were chosen); a value someone set is left alone.
func withWriteProps(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	have := tbl.Properties()
	missing := iceberg.Properties{}
	for k, v := range writeProps {
		if _, ok := have[k]; !ok {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return tbl, nil
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(missing); err != nil {
		return nil, fmt.Errorf("table %s: set write properties: %w", tbl.Identifier(), err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("table %s: set write properties: %w", tbl.Identifier(), err)
	}
	return out, nil
}

// ensureTable loads name in ns, creating the namespace and the table (with
// sc and spec) when they do not exist.
func ensureTable(ctx context.Context, cat catalog.Catalog, ns, name, topic string, sc *iceberg.Schema, spec string) (*table.Table, error) {
	ident := table.Identifier{ns, name}
	tbl, err := cat.LoadTable(ctx, ident)
	if err == nil {
		return withWriteProps(ctx, tbl)
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	ps, err := ParsePartitionSpec(spec, sc)
	if err != nil {
		return nil, err
	}
	tbl, err = cat.CreateTable(ctx, ident, sc, catalog.WithPartitionSpec(&ps), catalog.WithProperties(tableProps(topic)))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return cat.LoadTable(ctx, ident)
	}
	if err != nil {
		return nil, fmt.Errorf("create table %s.%s: %w", ns, name, err)
	}
	return tbl, nil
}

// evolveSpec makes spec (an iceberg.partition_spec value) tbl's current
// partition spec, when it is not already: an AlterConfigs of the topic
// restarts its committer, which calls this. Fields are matched by source
// column and transform; those the new spec lacks are removed, new ones
// added, renamed ones renamed. Data files keep the spec they were written
// with, as Iceberg's partition evolution has it: no rewrite.
func evolveSpec(ctx context.Context, tbl *table.Table, spec string) (*table.Table, error) {
	want, err := ParsePartitionSpec(spec, tbl.Schema())
	if err != nil {
		return nil, fmt.Errorf("table %s: iceberg.partition_spec: %w", tbl.Identifier(), err)
	}
	type key struct {
		source    int
		transform string
	}
	keyOf := func(f iceberg.PartitionField) key { return key{f.SourceIDs[0], f.Transform.String()} }
	have := tbl.Spec()
	cur := map[key]iceberg.PartitionField{}
	for _, f := range have.Fields() {
		if len(f.SourceIDs) == 1 {
			cur[keyOf(f)] = f
		}
	}
	txn := tbl.NewTransaction()
	us := txn.UpdateSpec(true)
	changed := len(cur) != have.NumFields()
	wanted := map[key]bool{}
	for _, f := range want.Fields() {
		k := keyOf(f)
		wanted[k] = true
		old, ok := cur[k]
		switch {
		case !ok:
			col, found := tbl.Schema().FindColumnName(k.source)
			if !found {
				return nil, fmt.Errorf("%w: table %s: partition field %s: no column %d", ErrConfig, tbl.Identifier(), f.Name, k.source)
			}
			us.AddField(col, f.Transform, f.Name)
			changed = true
		case old.Name != f.Name:
			us.RenameField(old.Name, f.Name)
			changed = true
		}
	}
	for k, f := range cur {
		if !wanted[k] {
			us.RemoveField(f.Name)
			changed = true
		}
	}
	if !changed {
		return tbl, nil
	}
	if err := us.Commit(); err != nil {
		return nil, fmt.Errorf("%w: table %s: partition spec %q: %v", ErrConfig, tbl.Identifier(), spec, err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("table %s: evolve partition spec: %w", tbl.Identifier(), err)
	}
	return out, nil
}
