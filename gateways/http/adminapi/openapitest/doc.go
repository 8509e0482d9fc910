// Package openapitest checks the admin API against docs/openapi.yaml: the
// documented operations, and answers validated against the documented
// response schemas (types, required fields, enums, items, recursively).
// It is for tests; only the subset of OpenAPI 3.0 the file uses is read.
package openapitest
