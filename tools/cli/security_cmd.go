package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/controller"
)

// `aerostream user` and `aerostream acl` manage SCRAM users and ACLs
// through the controller's client API (listeners.controller, loopback by
// default), as `aerostream topic` does. A password is read from stdin or
// a file, never from the command line, where ps and shell history would
// show it; only its salted hashes leave this process.

// withController runs fn with a controller client of --controller.
func withController(ctl *clientFlags, fn func(ctx context.Context, cl *controller.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl, err := newClient(cmd.Context(), ctl)
		if err != nil {
			return err
		}
		defer cl.Close()
		return fn(cmd.Context(), cl, args)
	}
}

// maxPasswordBytes bounds what is read as a password.
const maxPasswordBytes = 4096

// readPassword reads a password from r: the first line, without its line
// ending (so both `printf pw |` and `echo pw |` work).
func readPassword(r io.Reader, from string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPasswordBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the password from %s: %w", from, err)
	}
	if len(b) > maxPasswordBytes {
		return "", fmt.Errorf("the password from %s is longer than %d bytes", from, maxPasswordBytes)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("the password from %s is empty", from)
	}
	return line, nil
}

func newUserCmd(env Env, stdin io.Reader) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, delete and list SCRAM users (through the controller)",
	}
	requireSubcommand(cmd)
	ctl := addControllerFlag(cmd)

	var (
		mechanisms    []string
		passwordStdin bool
		passwordFile  string
		iterations    int
		groups        []string
	)
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user, or set its password (from --password-stdin or --password-file)",
		Args:  needArgs("the user NAME", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, m := range mechanisms {
				if !auth.IsScram(m) {
					return usageError{fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", m)}
				}
			}
			var pass string
			var err error
			switch {
			case passwordStdin && passwordFile != "":
				return usageError{errors.New("give --password-stdin or --password-file, not both")}
			case passwordStdin:
				pass, err = readPassword(stdin, "stdin")
			case passwordFile != "":
				var f *os.File
				if f, err = os.Open(passwordFile); err == nil {
					pass, err = readPassword(f, passwordFile)
					f.Close()
				}
			default:
				return usageError{errors.New("the password comes from --password-stdin or --password-file (never the command line)")}
			}
			if err != nil {
				return err
			}
			req := controller.AlterScramRequest{}
			for _, m := range mechanisms {
				c, err := auth.NewScramCredential(m, pass, iterations)
				if err != nil {
					return err
				}
				req.Upserts = append(req.Upserts, controller.ScramUpsert{User: args[0], Mechanism: m, Credential: c})
			}
			setGroups := cmd.Flags().Changed("groups")
			if err := checkGroupNames(groups); err != nil {
				return err
			}
			return withController(ctl, func(ctx context.Context, cl *controller.Client, args []string) error {
				r, err := cl.AlterScramUsers(ctx, req)
				if err != nil {
					return err
				}
				if err := firstErr(r.Errors); err != nil {
					return err
				}
				if _, err = fmt.Fprintf(env.Stdout, "user %s: %s credential set\n", args[0], strings.Join(mechanisms, ", ")); err != nil {
					return err
				}
				if !setGroups {
					return nil
				}
				return setUserGroups(ctx, cl, env.Stdout, args[0], groups)
			})(cmd, args)
		},
	}
	create.Flags().StringSliceVar(&mechanisms, "mechanism", []string{auth.ScramSHA256, auth.ScramSHA512}, "SCRAM mechanisms to set a credential for (comma-separated)")
	create.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from stdin (its first line)")
	create.Flags().StringVar(&passwordFile, "password-file", "", "read the password from this file (its first line)")
	create.Flags().IntVar(&iterations, "iterations", auth.DefaultIterations, fmt.Sprintf("PBKDF2 iterations (%d to %d)", auth.MinIterations, auth.MaxIterations))
	create.Flags().StringSliceVar(&groups, "groups", nil, "the user's groups, for Group:NAME role bindings (comma-separated)")

	var delMechanisms []string
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user's credentials (every mechanism unless --mechanism)",
		Args:  needArgs("the user NAME", 1, 1),
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, args []string) error {
			mechs := delMechanisms
			if len(mechs) == 0 {
				d, err := cl.DescribeScramUsers(ctx, controller.DescribeScramRequest{Users: args})
				if err != nil {
					return err
				}
				if len(d.Users) != 1 || d.Users[0].Error != nil {
					return fmt.Errorf("user %q does not exist", args[0])
				}
				for _, c := range d.Users[0].Credentials {
					mechs = append(mechs, c.Mechanism)
				}
			}
			req := controller.AlterScramRequest{}
			for _, m := range mechs {
				req.Deletions = append(req.Deletions, controller.ScramDeletion{User: args[0], Mechanism: m})
			}
			r, err := cl.AlterScramUsers(ctx, req)
			if err != nil {
				return err
			}
			if err := firstErr(r.Errors); err != nil {
				return err
			}
			_, err = fmt.Fprintf(env.Stdout, "user %s: %s credential deleted\n", args[0], strings.Join(mechs, ", "))
			return err
		}),
	}
	del.Flags().StringSliceVar(&delMechanisms, "mechanism", nil, "delete only these mechanisms' credentials")

	list := &cobra.Command{
		Use:   "list",
		Short: "List users and their mechanisms (never a secret)",
		Args:  cobra.NoArgs,
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
			d, err := cl.DescribeScramUsers(ctx, controller.DescribeScramRequest{})
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "USER\tMECHANISM\tITERATIONS")
			for _, u := range d.Users {
				for _, c := range u.Credentials {
					fmt.Fprintf(w, "%s\t%s\t%d\n", u.User, c.Mechanism, c.Iterations)
				}
			}
			return w.Flush()
		}),
	}
	cmd.AddCommand(create, del, list)
	cmd.AddCommand(newUserGroupsCmds(env, ctl)...)
	return cmd
}

func firstErr(es []*controller.Error) error {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}

// aclFlags are the flags that name ACL bindings, for add, list and
// remove.
type aclFlags struct {
	allow, deny            []string
	operations             []string
	hosts                  []string
	topics, groups, txnIDs []string
	cluster                bool
	pattern                string
}

func addACLFlags(cmd *cobra.Command, f *aclFlags, filter bool) {
	cmd.Flags().StringSliceVar(&f.allow, "allow", nil, "principals (User:NAME, User:*, Group:NAME) the binding allows")
	cmd.Flags().StringSliceVar(&f.deny, "deny", nil, "principals (User:NAME, User:*, Group:NAME) the binding denies")
	cmd.Flags().StringSliceVar(&f.operations, "operation", nil, "operations, comma-separated: "+strings.Join(auth.Operations(), ", "))
	cmd.Flags().StringSliceVar(&f.topics, "topic", nil, "topic names (or prefixes, with --resource-pattern-type prefixed; * for all)")
	cmd.Flags().StringSliceVar(&f.groups, "group", nil, "consumer group ids")
	cmd.Flags().StringSliceVar(&f.txnIDs, "transactional-id", nil, "transactional ids")
	cmd.Flags().BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	def, hosts := "literal", []string{"*"}
	if filter {
		def, hosts = "any", nil
	}
	cmd.Flags().StringVar(&f.pattern, "resource-pattern-type", def, "literal or prefixed"+map[bool]string{true: ", any or match", false: ""}[filter])
	cmd.Flags().StringSliceVar(&f.hosts, "host", hosts, "client IP addresses the binding applies to (* for any)")
}

type aclResource struct{ typ, name string }

func (f *aclFlags) resources() []aclResource {
	var rs []aclResource
	for _, t := range f.topics {
		rs = append(rs, aclResource{auth.ResourceTopic, t})
	}
	for _, g := range f.groups {
		rs = append(rs, aclResource{auth.ResourceGroup, g})
	}
	for _, t := range f.txnIDs {
		rs = append(rs, aclResource{auth.ResourceTransactionalID, t})
	}
	if f.cluster {
		rs = append(rs, aclResource{auth.ResourceCluster, auth.ClusterName})
	}
	return rs
}

func (f *aclFlags) entries() (principals []string, perms []string) {
	for _, p := range f.allow {
		principals, perms = append(principals, p), append(perms, auth.Allow)
	}
	for _, p := range f.deny {
		principals, perms = append(principals, p), append(perms, auth.Deny)
	}
	return
}

// bindings expands the flags into ACLs: every principal, operation, host
// and resource combined.
func (f *aclFlags) bindings() ([]auth.ACL, error) {
	principals, perms := f.entries()
	rs := f.resources()
	switch {
	case len(principals) == 0:
		return nil, usageError{errors.New("name a principal with --allow or --deny")}
	case len(f.operations) == 0:
		return nil, usageError{errors.New("name the operations with --operation")}
	case len(rs) == 0:
		return nil, usageError{errors.New("name a resource with --topic, --group, --transactional-id or --cluster")}
	}
	pattern := strings.ToUpper(f.pattern)
	var out []auth.ACL
	for i, p := range principals {
		for _, op := range f.operations {
			for _, h := range f.hosts {
				for _, r := range rs {
					pt := pattern
					if r.typ == auth.ResourceCluster {
						pt = auth.PatternLiteral
					}
					a := auth.ACL{ResourceType: r.typ, ResourceName: r.name, PatternType: pt, Principal: p, Host: h,
						Operation: strings.ToUpper(strings.ReplaceAll(op, "-", "_")), Permission: perms[i]}
					if err := a.Check(); err != nil {
						return nil, usageError{err}
					}
					out = append(out, a)
				}
			}
		}
	}
	return out, nil
}

// filters turns the flags into filters: what is not given matches all.
func (f *aclFlags) filters() []auth.ACLFilter {
	base := auth.ACLFilter{PatternType: strings.ToUpper(f.pattern)}
	var out []auth.ACLFilter
	principals, perms := f.entries()
	if len(principals) == 0 {
		principals, perms = []string{""}, []string{auth.Any}
	}
	ops := f.operations
	if len(ops) == 0 {
		ops = []string{auth.Any}
	}
	hosts := f.hosts
	if len(hosts) == 0 {
		hosts = []string{""}
	}
	rs := f.resources()
	if len(rs) == 0 {
		rs = []aclResource{{auth.Any, ""}}
	}
	for i, p := range principals {
		for _, op := range ops {
			for _, h := range hosts {
				for _, r := range rs {
					fl := base
					fl.Principal, fl.Permission, fl.Operation, fl.Host = p, perms[i], strings.ToUpper(op), h
					fl.ResourceType, fl.ResourceName = r.typ, r.name
					out = append(out, fl)
				}
			}
		}
	}
	return out
}

func writeACLs(w io.Writer, acls []auth.ACL) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tNAME\tPATTERN\tHOST")
	for _, a := range acls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Principal, a.Permission, a.Operation, a.ResourceType, a.ResourceName, a.PatternType, a.Host)
	}
	return tw.Flush()
}

func newACLCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Add, list and remove ACLs (through the controller)",
	}
	requireSubcommand(cmd)
	ctl := addControllerFlag(cmd)

	var addF aclFlags
	add := &cobra.Command{
		Use:   "add",
		Short: "Add ACL bindings: every --allow/--deny principal gets every --operation on every resource",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			acls, err := addF.bindings()
			if err != nil {
				return err
			}
			return withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
				r, err := cl.CreateACLs(ctx, controller.CreateACLsRequest{ACLs: acls})
				if err != nil {
					return err
				}
				if err := firstErr(r.Errors); err != nil {
					return err
				}
				return writeACLs(env.Stdout, acls)
			})(cmd, args)
		},
	}
	addACLFlags(add, &addF, false)

	var listF aclFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the ACL bindings the flags select (all without flags), and the entries role bindings expand to (host role-binding:ROLE)",
		Args:  cobra.NoArgs,
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
			seen := map[auth.ACL]bool{}
			var out []auth.ACL
			for _, f := range listF.filters() {
				r, err := cl.DescribeACLs(ctx, controller.DescribeACLsRequest{Filter: f, Bindings: true})
				if err != nil {
					return err
				}
				for _, a := range r.ACLs {
					if !seen[a] {
						seen[a] = true
						out = append(out, a)
					}
				}
				for _, b := range r.Bindings {
					if a := b.Listed(); !seen[a] {
						seen[a] = true
						out = append(out, a)
					}
				}
			}
			return writeACLs(env.Stdout, out)
		}),
	}
	addACLFlags(list, &listF, true)

	var rmF aclFlags
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Remove the ACL bindings the flags select",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(rmF.resources()) == 0 && len(rmF.allow)+len(rmF.deny) == 0 {
				return usageError{errors.New("name a principal or a resource (--allow, --deny, --topic, --group, --transactional-id, --cluster): remove does not take every ACL at once")}
			}
			return withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
				r, err := cl.DeleteACLs(ctx, controller.DeleteACLsRequest{Filters: rmF.filters()})
				if err != nil {
					return err
				}
				var gone []auth.ACL
				for _, d := range r.Deleted {
					gone = append(gone, d...)
				}
				var kept []auth.RoleBinding
				for _, bs := range r.Bindings {
					for _, b := range bs {
						if !slices.Contains(kept, b) {
							kept = append(kept, b)
						}
					}
				}
				if len(gone) == 0 && len(kept) > 0 {
					return auth.ErrBindingEntries(kept)
				}
				for _, b := range kept {
					fmt.Fprintf(env.Stderr, "kept the entries of role binding %s: remove it with: %s\n", b, b.UnbindCommand())
				}
				return writeACLs(env.Stdout, gone)
			})(cmd, args)
		},
	}
	addACLFlags(remove, &rmF, true)
	cmd.AddCommand(add, list, remove)
	return cmd
}
