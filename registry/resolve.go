package registry

import (
	"context"
	"errors"

	"github.com/aerostream/aerostream/controller"
)

// What a decoder of a topic's values needs from the registry (the
// Iceberg schema modes, wired by tools/): a schema with every schema its
// references import, and a subject's latest version.

// NamedSchema is a schema another imports, under the name its reference
// gives it.
type NamedSchema struct {
	Name   string
	Schema string
}

// Resolved is a schema by id with its references resolved transitively,
// dependencies first.
type Resolved struct {
	ID         int32
	Type       string
	Schema     string
	References []NamedSchema
}

// Resolve returns the schema with id and the schemas it imports.
func (r *Registry) Resolve(ctx context.Context, id int32) (Resolved, error) {
	s, _, err := r.SchemaByID(ctx, id, false, false)
	if err != nil {
		return Resolved{}, err
	}
	return r.resolved(ctx, s)
}

// Latest returns the latest live version of subject, resolved.
func (r *Registry) Latest(ctx context.Context, subject string) (Resolved, error) {
	if err := checkSubject(subject); err != nil {
		return Resolved{}, err
	}
	v, err := r.resolveVersion(ctx, subject, -1, false)
	if err != nil {
		return Resolved{}, err
	}
	return r.resolved(ctx, v.Schema)
}

// Versions returns the live versions of subject, oldest first,
// resolved; a subject without any is a 40401 error.
func (r *Registry) Versions(ctx context.Context, subject string) ([]Resolved, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	vs, err := r.versions(ctx, subject, false)
	if err != nil {
		return nil, err
	}
	var out []Resolved
	for _, v := range vs {
		if v.Deleted || v.Schema == nil {
			continue
		}
		res, err := r.resolved(ctx, v.Schema)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	if len(out) == 0 {
		return nil, subjectNotFound(subject)
	}
	return out, nil
}

func (r *Registry) resolved(ctx context.Context, s *controller.StoredSchema) (Resolved, error) {
	refs, _, err := r.resolveRefs(ctx, s.References)
	if err != nil {
		return Resolved{}, err
	}
	out := Resolved{ID: s.ID, Type: s.Type, Schema: s.Schema}
	if out.Type == "" {
		out.Type = controller.SchemaAvro
	}
	for _, ref := range refs {
		out.References = append(out.References, NamedSchema{Name: ref.name, Schema: ref.schema.Schema})
	}
	return out, nil
}

// NotFound says whether err is the registry's answer for a subject,
// version or schema that does not exist (Confluent's 404 codes), as
// opposed to a failure worth retrying.
func NotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status() == 404
}
