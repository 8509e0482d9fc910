package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schemas are validated (compiled) with santhosh-tekuri/jsonschema,
// which loads nothing from outside: a $ref reaches only the schemas the
// references name. Compatibility follows Confluent's documented rules on
// the schema documents, asking whether every value the writer's schema
// accepts is accepted by the reader's: types may only widen (integer to
// number), properties of a closed content model may not go, properties
// may not appear in an open one (old data may hold anything under that
// name), required properties may not be added, additionalProperties may
// not close, enums and bounds may not narrow.

// mainJSON is the resource name a schema's own document compiles under.
const mainJSON = "__aerostream_schema__.json"

type jsonSchemaDoc struct {
	doc     any
	compact string
	sorted  string
}

func parseJSONSchema(text string, refs []refSchema) (parsedSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%w: Invalid schema: %v", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file or network access
	if err := c.AddResource(mainJSON, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	for _, r := range refs {
		rd, err := jsonschema.UnmarshalJSON(strings.NewReader(r.schema.Schema))
		if err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidSchema, r.name, err)
		}
		if err := c.AddResource(r.name, rd); err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidSchema, r.name, err)
		}
	}
	if _, err := c.Compile(mainJSON); err != nil {
		return nil, fmt.Errorf("%w: Invalid schema: %v", ErrInvalidSchema, err)
	}
	compact, err := compactJSON(text)
	if err != nil {
		return nil, fmt.Errorf("%w: Invalid schema: %v", ErrInvalidSchema, err)
	}
	sorted, err := json.Marshal(doc) // map keys sorted
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &jsonSchemaDoc{doc: doc, compact: compact, sorted: string(sorted)}, nil
}

func (j *jsonSchemaDoc) fingerprint() string { return j.compact }
func (j *jsonSchemaDoc) normalized() string  { return j.sorted }

func (j *jsonSchemaDoc) readErrors(writer parsedSchema) []string {
	w, ok := writer.(*jsonSchemaDoc)
	if !ok {
		return []string{"not a JSON schema"}
	}
	var out []string
	jsonReadErrors(j.doc, w.doc, "#", func(kind, path string) {
		out = append(out, kind+": "+path)
	})
	return sortedStrings(out)
}

// acceptsAll says whether a schema accepts every value: true, or an
// object with no assertions in it.
func acceptsAll(s any) bool {
	switch s := s.(type) {
	case bool:
		return s
	case map[string]any:
		for k := range s {
			switch k {
			case "$schema", "$id", "id", "title", "description", "$comment", "default", "examples":
			default:
				return false
			}
		}
		return true
	}
	return false
}

func typeSet(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonReadErrors reports through add what keeps reader r from accepting
// every value writer w accepts, at path.
func jsonReadErrors(r, w any, path string, add func(kind, path string)) {
	if acceptsAll(r) || w == false {
		return
	}
	if r == false {
		add("TYPE_NARROWED", path)
		return
	}
	rm, rok := r.(map[string]any)
	wm, wok := w.(map[string]any)
	if !rok {
		return
	}
	if !wok { // w accepts everything (true); r does not
		add("TYPE_NARROWED", path)
		return
	}
	if rt := typeSet(rm); rt != nil {
		wt := typeSet(wm)
		if wt == nil {
			add("TYPE_NARROWED", path)
		}
		for _, t := range wt {
			if !slices.Contains(rt, t) && !(t == "integer" && slices.Contains(rt, "number")) {
				add("TYPE_CHANGED", fmt.Sprintf("%s (%s)", path, t))
			}
		}
	}
	if re, ok := rm["enum"].([]any); ok {
		we, wok := wm["enum"].([]any)
		if !wok {
			add("ENUM_ARRAY_NARROWED", path)
		} else {
			have := map[string]bool{}
			for _, v := range re {
				have[canonical(v)] = true
			}
			for _, v := range we {
				if !have[canonical(v)] {
					add("ENUM_ARRAY_NARROWED", path)
					break
				}
			}
		}
	}
	if rc, ok := rm["const"]; ok {
		if wc, ok := wm["const"]; !ok || canonical(wc) != canonical(rc) {
			add("CONST_CHANGED", path)
		}
	}
	for _, k := range []string{"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"} {
		if rv, ok := number(rm[k]); ok {
			if wv, ok := number(wm[k]); !ok || wv > rv {
				add(strings.ToUpper(k)+"_DECREASED", path)
			}
		}
	}
	for _, k := range []string{"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"} {
		if rv, ok := number(rm[k]); ok {
			if wv, ok := number(wm[k]); !ok || wv < rv {
				add(strings.ToUpper(k)+"_INCREASED", path)
			}
		}
	}
	if rp, ok := rm["pattern"]; ok && canonical(rp) != canonical(wm["pattern"]) {
		add("PATTERN_CHANGED", path)
	}
	jsonObjectErrors(rm, wm, path, add)
	if ri, ok := rm["items"]; ok {
		if wi, ok := wm["items"]; ok {
			jsonReadErrors(ri, wi, path+"/items", add)
		} else if !acceptsAll(ri) {
			add("ITEMS_NARROWED", path+"/items")
		}
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "not", "$ref"} {
		rv, rok := rm[k]
		wv, wok := wm[k]
		switch {
		case !rok:
		case !wok:
			add("COMBINED_TYPE_ADDED", path+"/"+k)
		case canonical(rv) != canonical(wv):
			rs, rok := rv.([]any)
			ws, wok := wv.([]any)
			if k == "allOf" || k == "not" || k == "$ref" || !rok || !wok || len(rs) < len(ws) {
				add("COMBINED_TYPE_CHANGED", path+"/"+k)
				continue
			}
			// oneOf/anyOf: each writer branch must fit some reader branch.
			for i, wb := range ws {
				fits := false
				for _, rb := range rs {
					var errs int
					jsonReadErrors(rb, wb, "", func(string, string) { errs++ })
					if errs == 0 {
						fits = true
						break
					}
				}
				if !fits {
					add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", fmt.Sprintf("%s/%s/%d", path, k, i))
				}
			}
		}
	}
}

// openModel says whether an object schema lets properties it does not
// name through, and with what schema (nil for any).
func openModel(m map[string]any) (bool, any) {
	switch a := m["additionalProperties"].(type) {
	case nil:
		return true, nil
	case bool:
		return a, nil
	default:
		return true, a
	}
}

func jsonObjectErrors(rm, wm map[string]any, path string, add func(kind, path string)) {
	rp, _ := rm["properties"].(map[string]any)
	wp, _ := wm["properties"].(map[string]any)
	rOpen, rAdd := openModel(rm)
	wOpen, wAdd := openModel(wm)
	for _, name := range sortedKeys(wp) {
		at := path + "/properties/" + name
		if rs, ok := rp[name]; ok {
			jsonReadErrors(rs, wp[name], at, add)
			continue
		}
		switch {
		case !rOpen:
			add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", at)
		case rAdd != nil:
			jsonReadErrors(rAdd, wp[name], at, add)
		}
	}
	for _, name := range sortedKeys(rp) {
		if _, ok := wp[name]; ok {
			continue
		}
		at := path + "/properties/" + name
		switch {
		case !wOpen:
		case wAdd != nil:
			jsonReadErrors(rp[name], wAdd, at, add)
		case !acceptsAll(rp[name]):
			add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", at)
		}
	}
	wreq := map[string]bool{}
	if l, ok := wm["required"].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				wreq[s] = true
			}
		}
	}
	if l, ok := rm["required"].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok && !wreq[s] {
				add("REQUIRED_PROPERTY_ADDED", path+"/required/"+s)
			}
		}
	}
	switch {
	case !rOpen && wOpen:
		add("ADDITIONAL_PROPERTIES_REMOVED", path)
	case rOpen && rAdd != nil && wOpen && wAdd == nil:
		add("ADDITIONAL_PROPERTIES_NARROWED", path)
	case rAdd != nil && wAdd != nil:
		jsonReadErrors(rAdd, wAdd, path+"/additionalProperties", add)
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sortedStrings sorts and dedups messages, so answers are stable.
func sortedStrings(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
