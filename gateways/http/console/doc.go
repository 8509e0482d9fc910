// Package console is AeroStream's web console: a handful of server-rendered
// pages (cluster, topics, one topic, the message inspector, consumer
// groups, one group, Iceberg tables, live throughput) that tools/cli mounts
// at "/" on listeners.http, so that every path no API prefix claims lands
// here.
//
// The pages are shells: html/template renders the navigation and the
// page's skeleton, and one small vanilla script fetches the REST admin API
// under /api/ (gateways/http/adminapi, documented in docs/openapi.yaml) and
// builds the tables. The console reads and changes nothing any other way,
// so it can do no more than the API lets the same caller do, and its
// authentication and ACLs are the API's: the browser's credentials go
// along with each same-origin fetch.
//
// Everything it serves (templates, script, stylesheet) is embedded in the
// binary: no CDN, no npm build, nothing fetched at run time. Keys, values,
// headers and names are user data, so the script only ever puts them into
// the page as text nodes or encoded URL parts, never as markup, and a
// Content-Security-Policy that allows no inline script backs that up.
//
// Imports: the standard library only. It imports no other gateway, not
// even the admin API it calls, because it reaches that API over HTTP from
// the browser like any other client.
package console
