// Package authtest makes what security tests need: a throwaway CA and
// server certificates, written as PEM files. It imports no other
// aerostream package and is imported only by tests.
package authtest
