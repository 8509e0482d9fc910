package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aerostream/aerostream/iceberg"
	"github.com/aerostream/aerostream/iceberg/valuecodec"
	"github.com/aerostream/aerostream/registry"
)

// icebergSchemas hands the Iceberg schema modes the registry's schemas
// (iceberg.SchemaSource). The Iceberg manager is built before the
// controller is open, so the registry is made on first use, over the
// daemon's controller then.
type icebergSchemas struct {
	d *daemon

	once sync.Once
	reg  *registry.Registry
	err  error
}

var (
	_ iceberg.SchemaSource = (*icebergSchemas)(nil)
	_ iceberg.LatestSource = (*icebergSchemas)(nil)
)

// errNoRegistry: this node has no controller to hold schemas.
var errNoRegistry = errors.New("no schema registry on this node (no controller)")

func (s *icebergSchemas) registry() (*registry.Registry, error) {
	s.once.Do(func() {
		s.reg, s.err = newSchemaRegistry(s.d.cfg, s.d.members, s.d.logger) // schema_registry.go
		if s.err == nil && s.reg == nil {
			s.err = errNoRegistry
		}
	})
	return s.reg, s.err
}

func toValueSchema(r registry.Resolved) valuecodec.Schema {
	out := valuecodec.Schema{ID: r.ID, Type: r.Type, Text: r.Schema}
	for _, ref := range r.References {
		out.References = append(out.References, valuecodec.Reference{Name: ref.Name, Schema: ref.Schema})
	}
	return out
}

// lookupErr marks the registry's not-found answers for the modes, which
// send such records to the DLQ table rather than retry.
func lookupErr(err error) error {
	if registry.NotFound(err) {
		return fmt.Errorf("%w: %v", valuecodec.ErrUnknownSchema, err)
	}
	return err
}

func (s *icebergSchemas) SchemaByID(ctx context.Context, id int32) (valuecodec.Schema, error) {
	reg, err := s.registry()
	if err != nil {
		return valuecodec.Schema{}, err
	}
	r, err := reg.Resolve(ctx, id)
	if err != nil {
		return valuecodec.Schema{}, lookupErr(err)
	}
	return toValueSchema(r), nil
}

func (s *icebergSchemas) SubjectSchemas(ctx context.Context, subject string) ([]valuecodec.Schema, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	vs, err := reg.Versions(ctx, subject)
	if err != nil {
		return nil, lookupErr(err)
	}
	out := make([]valuecodec.Schema, len(vs))
	for i, v := range vs {
		out[i] = toValueSchema(v)
	}
	return out, nil
}

func (s *icebergSchemas) SubjectHasID(ctx context.Context, subject string, id int32) (bool, error) {
	reg, err := s.registry()
	if err != nil {
		return false, err
	}
	ok, err := reg.SubjectHasID(ctx, subject, id)
	if registry.NotFound(err) {
		return false, nil
	}
	return ok, err
}

// SubjectLatest is iceberg.LatestSource: value_schema_latest asks it
// before each translation step.
func (s *icebergSchemas) SubjectLatest(ctx context.Context, subject string) (valuecodec.Schema, error) {
	reg, err := s.registry()
	if err != nil {
		return valuecodec.Schema{}, err
	}
	r, err := reg.Latest(ctx, subject)
	if err != nil {
		return valuecodec.Schema{}, lookupErr(err)
	}
	return toValueSchema(r), nil
}
