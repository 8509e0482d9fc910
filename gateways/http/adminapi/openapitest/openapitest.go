package openapitest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Spec is a loaded OpenAPI file.
type Spec struct {
	doc map[string]any
}

// Load reads an OpenAPI file.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := doc["paths"].(map[string]any); !ok {
		return nil, fmt.Errorf("%s: no paths", path)
	}
	return &Spec{doc: doc}, nil
}

var methods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

// Operations lists the documented "METHOD /path" pairs, sorted.
func (s *Spec) Operations() []string {
	var out []string
	for p, v := range s.doc["paths"].(map[string]any) {
		item, _ := v.(map[string]any)
		for _, m := range methods {
			if _, ok := item[m]; ok {
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// operation finds the documented operation serving method and a concrete
// path.
func (s *Spec) operation(method, path string) (map[string]any, error) {
	for p, v := range s.doc["paths"].(map[string]any) {
		rx := "^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$"
		if !regexp.MustCompile(rx).MatchString(path) {
			continue
		}
		item, _ := v.(map[string]any)
		if op, ok := item[strings.ToLower(method)].(map[string]any); ok {
			return op, nil
		}
	}
	return nil, fmt.Errorf("%s %s is not documented", method, path)
}

// Validate checks an answer against the documented response of its
// status (or the default response).
func (s *Spec) Validate(method, path string, status int, body []byte) error {
	op, err := s.operation(method, path)
	if err != nil {
		return err
	}
	resps, _ := op["responses"].(map[string]any)
	resp, ok := resps[strconv.Itoa(status)]
	if !ok {
		if resp, ok = resps["default"]; !ok {
			return fmt.Errorf("%s %s: status %d is not documented", method, path, status)
		}
	}
	r, err := s.resolve(resp)
	if err != nil {
		return err
	}
	content, _ := r["content"].(map[string]any)
	if content == nil {
		if len(strings.TrimSpace(string(body))) != 0 {
			return fmt.Errorf("%s %s %d: a body where none is documented", method, path, status)
		}
		return nil
	}
	mt, _ := content["application/json"].(map[string]any)
	if mt == nil {
		return fmt.Errorf("%s %s %d: no application/json content documented", method, path, status)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s %s %d: not JSON: %v", method, path, status, err)
	}
	return s.check(mt["schema"], v, "$")
}

// resolve follows a $ref.
func (s *Spec) resolve(x any) (map[string]any, error) {
	m, _ := x.(map[string]any)
	for i := 0; m != nil && i < 10; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		var cur any = s.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cm, _ := cur.(map[string]any)
			cur = cm[part]
		}
		if m, _ = cur.(map[string]any); m == nil {
			return nil, fmt.Errorf("unresolved $ref %s", ref)
		}
	}
	if m == nil {
		return nil, fmt.Errorf("not a schema object: %v", x)
	}
	return m, nil
}

func (s *Spec) check(schema any, v any, at string) error {
	sc, err := s.resolve(schema)
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if v == nil {
		if n, _ := sc["nullable"].(bool); n {
			return nil
		}
		return fmt.Errorf("%s: null", at)
	}
	if enum, ok := sc["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || fmt.Sprint(e) == fmt.Sprint(v)
		}
		if !found {
			return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
		}
	}
	typ, _ := sc["type"].(string)
	switch typ {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		req, _ := sc["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: required field %q is missing", at, r)
			}
		}
		props, _ := sc["properties"].(map[string]any)
		for k, pv := range obj {
			if ps, ok := props[k]; ok {
				if err := s.check(ps, pv, at+"."+k); err != nil {
					return err
				}
			} else if ap, ok := sc["additionalProperties"].(map[string]any); ok {
				if err := s.check(ap, pv, at+"."+k); err != nil {
					return err
				}
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		for i, e := range arr {
			if err := s.check(sc["items"], e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", at, v)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an integer", at, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, want a number", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", at, v)
		}
	}
	return nil
}
