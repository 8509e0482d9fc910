package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/controller"
)

// `aerostream role` manages role-based access on top of the ACLs: the
// built-in roles (reader, writer, operator, admin) and custom ones, and
// their bindings to User: and Group: principals, on every resource or on
// one topic, group or transactional id pattern. Users' groups are set
// with `aerostream user set-groups` (or `user create --groups`).

// roleScopeFlags name the resources a binding is scoped to: none means
// every resource.
type roleScopeFlags struct {
	topic, topicPrefix, group, groupPrefix, txnID, txnIDPrefix string
}

func addRoleScopeFlags(cmd *cobra.Command, f *roleScopeFlags) {
	cmd.Flags().StringVar(&f.topic, "topic", "", "scope the binding to this topic")
	cmd.Flags().StringVar(&f.topicPrefix, "topic-prefix", "", "scope the binding to the topics starting with this prefix")
	cmd.Flags().StringVar(&f.group, "group", "", "scope the binding to this consumer group")
	cmd.Flags().StringVar(&f.groupPrefix, "group-prefix", "", "scope the binding to the groups starting with this prefix")
	cmd.Flags().StringVar(&f.txnID, "transactional-id", "", "scope the binding to this transactional id")
	cmd.Flags().StringVar(&f.txnIDPrefix, "transactional-id-prefix", "", "scope the binding to the transactional ids starting with this prefix")
}

// scope returns the binding's resource type, pattern and name; all empty
// for every resource. More than one scope flag is a usage error.
func (f roleScopeFlags) scope() (rt, pattern, name string, err error) {
	type opt struct{ flag, rt, pattern, v string }
	var set []opt
	for _, o := range []opt{
		{"--topic", auth.ResourceTopic, auth.PatternLiteral, f.topic},
		{"--topic-prefix", auth.ResourceTopic, auth.PatternPrefixed, f.topicPrefix},
		{"--group", auth.ResourceGroup, auth.PatternLiteral, f.group},
		{"--group-prefix", auth.ResourceGroup, auth.PatternPrefixed, f.groupPrefix},
		{"--transactional-id", auth.ResourceTransactionalID, auth.PatternLiteral, f.txnID},
		{"--transactional-id-prefix", auth.ResourceTransactionalID, auth.PatternPrefixed, f.txnIDPrefix},
	} {
		if o.v != "" {
			set = append(set, o)
		}
	}
	switch len(set) {
	case 0:
		return "", "", "", nil
	case 1:
		return set[0].rt, set[0].pattern, set[0].v, nil
	}
	return "", "", "", usageError{fmt.Errorf("give at most one of %s and %s (bind twice for two scopes)", set[0].flag, set[1].flag)}
}

// roleBindings builds and checks the bindings of role to each principal.
func roleBindings(role string, principals []string, f roleScopeFlags) ([]auth.RoleBinding, error) {
	if len(principals) == 0 {
		return nil, usageError{errors.New("name who gets the role with --principal User:NAME or Group:NAME")}
	}
	rt, pattern, name, err := f.scope()
	if err != nil {
		return nil, err
	}
	var out []auth.RoleBinding
	for _, p := range principals {
		b := auth.RoleBinding{Role: role, Principal: p, ResourceType: rt, PatternType: pattern, ResourceName: name}
		if err := b.Check(); err != nil {
			return nil, usageError{err}
		}
		out = append(out, b)
	}
	return out, nil
}

func writeBindings(w io.Writer, bs []auth.RoleBinding) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tROLE\tRESOURCE\tNAME\tPATTERN")
	for _, b := range bs {
		rt, name, pattern := b.ResourceType, b.ResourceName, b.PatternType
		if rt == "" {
			rt, name, pattern = "ALL", "*", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Principal, b.Role, rt, name, pattern)
	}
	return tw.Flush()
}

// roleOpFlags are a custom role's operations, one flag per resource type.
type roleOpFlags struct {
	topic, group, cluster, txnID []string
	description                  string
}

func (f roleOpFlags) role(name string) (auth.Role, error) {
	r := auth.Role{Name: name, Description: f.description}
	for _, p := range []struct {
		rt  string
		ops []string
	}{
		{auth.ResourceTopic, f.topic}, {auth.ResourceGroup, f.group},
		{auth.ResourceCluster, f.cluster}, {auth.ResourceTransactionalID, f.txnID},
	} {
		if len(p.ops) == 0 {
			continue
		}
		perm := auth.RolePermission{ResourceType: p.rt}
		for _, op := range p.ops {
			perm.Operations = append(perm.Operations, strings.ToUpper(strings.ReplaceAll(op, "-", "_")))
		}
		r.Permissions = append(r.Permissions, perm)
	}
	if len(r.Permissions) == 0 {
		return r, usageError{errors.New("name the role's operations with --topic-operation, --group-operation, --cluster-operation or --transactional-id-operation")}
	}
	if err := r.Check(); err != nil {
		return r, usageError{err}
	}
	return r, nil
}

func newRoleCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "role",
		Short: "List roles, create custom ones, and bind them to users and groups (through the controller)",
	}
	requireSubcommand(cmd)
	ctl := addControllerFlag(cmd)

	list := &cobra.Command{
		Use:   "list",
		Short: "List the roles, built-in and custom, with their binding counts",
		Args:  cobra.NoArgs,
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
			d, err := cl.DescribeRBAC(ctx, controller.RBACRequest{})
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ROLE\tKIND\tBINDINGS\tDESCRIPTION")
			for _, r := range d.Roles {
				kind := "custom"
				if r.BuiltIn {
					kind = "built-in"
				}
				n := 0
				for _, b := range d.Bindings {
					if b.Role == r.Name {
						n++
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Name, kind, n, r.Description)
			}
			return tw.Flush()
		}),
	}

	describe := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a role's operations per resource type, and its bindings",
		Args:  needArgs("the role NAME", 1, 1),
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, args []string) error {
			d, err := cl.DescribeRBAC(ctx, controller.RBACRequest{})
			if err != nil {
				return err
			}
			i := slices.IndexFunc(d.Roles, func(r auth.Role) bool { return r.Name == args[0] })
			if i < 0 {
				return fmt.Errorf("no role %q (aerostream role list shows them)", args[0])
			}
			r := d.Roles[i]
			kind := "custom"
			if r.BuiltIn {
				kind = "built-in"
			}
			fmt.Fprintf(env.Stdout, "role %s (%s): %s\n", r.Name, kind, r.Description)
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RESOURCE\tOPERATIONS")
			for _, p := range r.Permissions {
				fmt.Fprintf(tw, "%s\t%s\n", p.ResourceType, strings.Join(p.Operations, ","))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			var bs []auth.RoleBinding
			for _, b := range d.Bindings {
				if b.Role == r.Name {
					bs = append(bs, b)
				}
			}
			fmt.Fprintln(env.Stdout)
			return writeBindings(env.Stdout, bs)
		}),
	}

	var createF roleOpFlags
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a custom role, or replace its operations",
		Args:  needArgs("the role NAME", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := createF.role(args[0])
			if err != nil {
				return err
			}
			return withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
				w, err := cl.PutRoles(ctx, controller.PutRolesRequest{Roles: []auth.Role{r}})
				if err != nil {
					return err
				}
				if err := firstErr(w.Errors); err != nil {
					return err
				}
				_, err = fmt.Fprintf(env.Stdout, "role %s set\n", r.Name)
				return err
			})(cmd, args)
		},
	}
	ops := strings.Join(auth.Operations(), ", ")
	create.Flags().StringSliceVar(&createF.topic, "topic-operation", nil, "operations on topics: "+ops)
	create.Flags().StringSliceVar(&createF.group, "group-operation", nil, "operations on consumer groups")
	create.Flags().StringSliceVar(&createF.cluster, "cluster-operation", nil, "operations on the cluster")
	create.Flags().StringSliceVar(&createF.txnID, "transactional-id-operation", nil, "operations on transactional ids")
	create.Flags().StringVar(&createF.description, "description", "", "what the role is for")

	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a custom role that is bound to nobody",
		Args:  needArgs("the role NAME", 1, 1),
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, args []string) error {
			w, err := cl.DeleteRoles(ctx, controller.DeleteRolesRequest{Names: args})
			if err != nil {
				return err
			}
			if err := firstErr(w.Errors); err != nil {
				return err
			}
			_, err = fmt.Fprintf(env.Stdout, "role %s deleted\n", args[0])
			return err
		}),
	}

	bindCmd := func(use, short string, unbind bool) *cobra.Command {
		var principals []string
		var scope roleScopeFlags
		c := &cobra.Command{
			Use:   use + " NAME --principal User:NAME|Group:NAME",
			Short: short,
			Args:  needArgs("the role NAME", 1, 1),
			RunE: func(cmd *cobra.Command, args []string) error {
				bs, err := roleBindings(args[0], principals, scope)
				if err != nil {
					return err
				}
				return withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
					call := cl.BindRoles
					if unbind {
						call = cl.UnbindRoles
					}
					w, err := call(ctx, controller.RoleBindingsRequest{Bindings: bs})
					if err != nil {
						return err
					}
					if err := firstErr(w.Errors); err != nil {
						return err
					}
					return writeBindings(env.Stdout, bs)
				})(cmd, args)
			},
		}
		c.Flags().StringSliceVar(&principals, "principal", nil, "who: User:NAME, User:* or Group:NAME (repeatable, comma-separated)")
		addRoleScopeFlags(c, &scope)
		return c
	}
	bind := bindCmd("bind", "Bind a role to principals, on every resource or on one topic, group or transactional id pattern", false)
	unbind := bindCmd("unbind", "Remove a binding (the same principal and scope it was bound with)", true)

	var bPrincipal, bRole string
	bindings := &cobra.Command{
		Use:   "bindings",
		Short: "List the role bindings (of --principal, of --role; all without them)",
		Args:  cobra.NoArgs,
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
			d, err := cl.DescribeRBAC(ctx, controller.RBACRequest{})
			if err != nil {
				return err
			}
			var out []auth.RoleBinding
			for _, b := range d.Bindings {
				if (bPrincipal == "" || b.Principal == bPrincipal) && (bRole == "" || b.Role == bRole) {
					out = append(out, b)
				}
			}
			return writeBindings(env.Stdout, out)
		}),
	}
	bindings.Flags().StringVar(&bPrincipal, "principal", "", "only this principal's bindings")
	bindings.Flags().StringVar(&bRole, "role", "", "only this role's bindings")

	cmd.AddCommand(list, describe, create, del, bind, unbind, bindings)
	return cmd
}

// checkGroupNames validates group names before anything is dialled.
func checkGroupNames(groups []string) error {
	for _, g := range groups {
		if err := auth.CheckGroupName(g); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// setUserGroups stores a user's groups, for Group: role bindings.
func setUserGroups(ctx context.Context, cl *controller.Client, w io.Writer, user string, groups []string) error {
	r, err := cl.SetUserGroups(ctx, controller.SetUserGroupsRequest{Users: []controller.UserGroups{{User: user, Groups: groups}}})
	if err != nil {
		return err
	}
	if err := firstErr(r.Errors); err != nil {
		return err
	}
	if len(groups) == 0 {
		_, err = fmt.Fprintf(w, "user %s: groups cleared\n", user)
	} else {
		_, err = fmt.Fprintf(w, "user %s: groups %s\n", user, strings.Join(groups, ", "))
	}
	return err
}

// newUserGroupsCmds are `user set-groups` and `user groups`.
func newUserGroupsCmds(env Env, ctl *clientFlags) []*cobra.Command {
	var groups []string
	set := &cobra.Command{
		Use:   "set-groups NAME --groups G1,G2",
		Short: "Set a user's groups, for Group:NAME role bindings (--groups '' clears them)",
		Args:  needArgs("the user NAME", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("groups") {
				return usageError{errors.New("give the groups with --groups (--groups '' clears them)")}
			}
			if err := checkGroupNames(groups); err != nil {
				return err
			}
			return withController(ctl, func(ctx context.Context, cl *controller.Client, args []string) error {
				return setUserGroups(ctx, cl, env.Stdout, args[0], groups)
			})(cmd, args)
		},
	}
	set.Flags().StringSliceVar(&groups, "groups", nil, "the groups (comma-separated)")

	list := &cobra.Command{
		Use:   "groups",
		Short: "List the users that have groups, and their groups",
		Args:  cobra.NoArgs,
		RunE: withController(ctl, func(ctx context.Context, cl *controller.Client, _ []string) error {
			d, err := cl.DescribeRBAC(ctx, controller.RBACRequest{})
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tGROUPS")
			users := make([]string, 0, len(d.UserGroups))
			for u := range d.UserGroups {
				users = append(users, u)
			}
			slices.Sort(users)
			for _, u := range users {
				fmt.Fprintf(tw, "%s\t%s\n", u, strings.Join(d.UserGroups[u], ","))
			}
			return tw.Flush()
		}),
	}
	return []*cobra.Command{set, list}
}
