package valuecodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schema maps by the keywords a column can carry: an object with
// properties becomes a struct (its properties in name order, since JSON
// objects have none), an object with only additionalProperties a
// map<string, V>, an array with one items schema a list; string (format
// date-time: timestamptz, format date: date), integer (long), number
// (double) and boolean their scalars; a type list of null and one other
// type an optional column. What has no single column type (oneOf, anyOf,
// tuples, several types, an object with neither) keeps its JSON text in
// a string column. Local $refs (#/definitions/..., #/$defs/...) and
// references by name resolve; a schema that refers to itself does not
// map. Each value is validated against the schema first, so a value that
// does not match goes to the DLQ table rather than half-filling columns.
// Properties a value carries that the schema does not declare have no
// column and are not stored.

// mainJSON is the resource name a schema's own document compiles under.
const mainJSON = "__aerostream_value__.json"

type jsonKind int

const (
	jsonRaw jsonKind = iota
	jsonString
	jsonTimestamp
	jsonDate
	jsonLong
	jsonDouble
	jsonBool
	jsonObject
	jsonArray
	jsonMap
	jsonNull
)

// jsonNode is one position of the schema, mapped: how a value found there
// converts.
type jsonNode struct {
	kind  jsonKind
	props []jsonProp
	elem  *jsonNode
}

type jsonProp struct {
	name string
	node *jsonNode
}

func compileJSON(s Schema) (*Codec, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s.Text))
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file or network access
	if err := c.AddResource(mainJSON, doc); err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	docs := map[string]any{"": doc}
	for _, r := range s.References {
		rd, err := jsonschema.UnmarshalJSON(strings.NewReader(r.Schema))
		if err != nil {
			return nil, fmt.Errorf("%w: schema %d: reference %q: %v", ErrSchema, s.ID, r.Name, err)
		}
		if err := c.AddResource(r.Name, rd); err != nil {
			return nil, fmt.Errorf("%w: schema %d: reference %q: %v", ErrSchema, s.ID, r.Name, err)
		}
		docs[r.Name] = rd
	}
	validator, err := c.Compile(mainJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	m := jsonMapper{docs: docs, seen: map[string]bool{}}
	root, err := m.node(doc, "", 0)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	if root.kind != jsonObject {
		return nil, fmt.Errorf("%w: schema %d: the top level is not an object with properties", ErrSchema, s.ID)
	}
	var fields []iceberg.NestedField
	for _, p := range root.props {
		if p.node.kind == jsonNull {
			continue
		}
		fields = append(fields, optional(p.name, p.node.icebergType(), ""))
	}
	id := s.ID
	return &Codec{
		fields: fields,
		decode: func(payload []byte) (Row, error) {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
			if err != nil {
				return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
			}
			if err := validator.Validate(v); err != nil {
				return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
			}
			out, err := root.convert(v)
			if err != nil {
				return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
			}
			row, _ := out.(map[string]any)
			return Row(row), nil
		},
	}, nil
}

type jsonMapper struct {
	docs map[string]any
	seen map[string]bool
}

// resolve finds the schema a $ref names: a JSON pointer into the current
// document, or a reference's document (and a pointer into it).
func (m jsonMapper) resolve(ref, doc string) (any, string, error) {
	name, frag, _ := strings.Cut(ref, "#")
	if name == "" {
		name = doc
	}
	d, ok := m.docs[name]
	if !ok {
		return nil, "", fmt.Errorf("$ref %q names no document", ref)
	}
	cur := d
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, "", fmt.Errorf("$ref %q does not resolve", ref)
			}
			if cur, ok = obj[tok]; !ok {
				return nil, "", fmt.Errorf("$ref %q does not resolve", ref)
			}
		}
	}
	return cur, name, nil
}

func (m jsonMapper) node(s any, doc string, depth int) (*jsonNode, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("schemas nest deeper than %d", maxDepth)
	}
	obj, ok := s.(map[string]any)
	if !ok {
		return &jsonNode{kind: jsonRaw}, nil // true, false
	}
	if ref, ok := obj["$ref"].(string); ok {
		key := doc + "\x00" + ref
		if m.seen[key] {
			return nil, fmt.Errorf("$ref %q refers to itself, which no Iceberg column can hold", ref)
		}
		target, tdoc, err := m.resolve(ref, doc)
		if err != nil {
			return nil, err
		}
		m.seen[key] = true
		defer delete(m.seen, key)
		return m.node(target, tdoc, depth+1)
	}
	var types []string
	switch t := obj["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
		if len(types) == 0 {
			return &jsonNode{kind: jsonNull}, nil
		}
	case nil:
		switch {
		case obj["properties"] != nil:
			types = []string{"object"}
		case obj["items"] != nil:
			types = []string{"array"}
		}
	}
	if len(types) != 1 {
		if enum, ok := obj["enum"].([]any); ok && allStrings(enum) {
			return &jsonNode{kind: jsonString}, nil
		}
		return &jsonNode{kind: jsonRaw}, nil
	}
	switch types[0] {
	case "null":
		return &jsonNode{kind: jsonNull}, nil
	case "boolean":
		return &jsonNode{kind: jsonBool}, nil
	case "integer":
		return &jsonNode{kind: jsonLong}, nil
	case "number":
		return &jsonNode{kind: jsonDouble}, nil
	case "string":
		switch obj["format"] {
		case "date-time":
			return &jsonNode{kind: jsonTimestamp}, nil
		case "date":
			return &jsonNode{kind: jsonDate}, nil
		}
		return &jsonNode{kind: jsonString}, nil
	case "array":
		items, ok := obj["items"].(map[string]any)
		if !ok {
			return &jsonNode{kind: jsonRaw}, nil
		}
		e, err := m.node(items, doc, depth+1)
		if err != nil {
			return nil, err
		}
		if e.kind == jsonNull {
			return &jsonNode{kind: jsonRaw}, nil
		}
		return &jsonNode{kind: jsonArray, elem: e}, nil
	case "object":
		props, _ := obj["properties"].(map[string]any)
		if len(props) == 0 {
			if ap, ok := obj["additionalProperties"].(map[string]any); ok {
				e, err := m.node(ap, doc, depth+1)
				if err != nil {
					return nil, err
				}
				if e.kind != jsonNull {
					return &jsonNode{kind: jsonMap, elem: e}, nil
				}
			}
			return &jsonNode{kind: jsonRaw}, nil
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		slices.Sort(names)
		n := &jsonNode{kind: jsonObject}
		for _, k := range names {
			c, err := m.node(props[k], doc, depth+1)
			if err != nil {
				return nil, fmt.Errorf("property %s: %w", k, err)
			}
			if c.kind != jsonNull {
				n.props = append(n.props, jsonProp{name: k, node: c})
			}
		}
		if len(n.props) == 0 {
			return &jsonNode{kind: jsonRaw}, nil
		}
		return n, nil
	}
	return &jsonNode{kind: jsonRaw}, nil
}

func allStrings(l []any) bool {
	for _, e := range l {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return len(l) > 0
}

func (n *jsonNode) icebergType() iceberg.Type {
	switch n.kind {
	case jsonTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz
	case jsonDate:
		return iceberg.PrimitiveTypes.Date
	case jsonLong:
		return iceberg.PrimitiveTypes.Int64
	case jsonDouble:
		return iceberg.PrimitiveTypes.Float64
	case jsonBool:
		return iceberg.PrimitiveTypes.Bool
	case jsonObject:
		fs := make([]iceberg.NestedField, len(n.props))
		for i, p := range n.props {
			fs[i] = optional(p.name, p.node.icebergType(), "")
		}
		return &iceberg.StructType{FieldList: fs}
	case jsonArray:
		return &iceberg.ListType{Element: n.elem.icebergType()}
	case jsonMap:
		return &iceberg.MapType{KeyType: iceberg.PrimitiveTypes.String, ValueType: n.elem.icebergType()}
	}
	return iceberg.PrimitiveTypes.String
}

// convert turns a validated JSON value into the appender's values.
func (n *jsonNode) convert(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch n.kind {
	case jsonRaw:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	case jsonString:
		if s, ok := v.(string); ok {
			return s, nil
		}
		b, err := json.Marshal(v) // an enum of strings can hold others via other keywords
		return string(b), err
	case jsonTimestamp:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("a %T is not a date-time", v)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
		return t, nil
	case jsonDate:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("a %T is not a date", v)
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a date", s)
		}
		return t, nil
	case jsonLong:
		num, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("a %T is not an integer", v)
		}
		if i, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			return i, nil
		}
		r, ok := new(big.Rat).SetString(string(num))
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return nil, fmt.Errorf("%s is not an integer that fits a long", num)
		}
		return r.Num().Int64(), nil
	case jsonDouble:
		num, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("a %T is not a number", v)
		}
		f, err := num.Float64()
		if err != nil {
			return nil, fmt.Errorf("%s is not a double", num)
		}
		return f, nil
	case jsonBool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("a %T is not a boolean", v)
		}
		return b, nil
	case jsonObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a %T is not an object", v)
		}
		out := make(map[string]any, len(n.props))
		for _, p := range n.props {
			c, err := p.node.convert(obj[p.name])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			out[p.name] = c
		}
		return out, nil
	case jsonArray:
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("a %T is not an array", v)
		}
		out := make([]any, len(l))
		for i, e := range l {
			c, err := n.elem.convert(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = c
		}
		return out, nil
	case jsonMap:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a %T is not an object", v)
		}
		out := make(map[string]any, len(obj))
		for k, e := range obj {
			c, err := n.elem.convert(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, nil
}
