package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
)

// DefaultFile is read, when it exists in the working directory, if neither
// --config nor AEROSTREAM_CONFIG names a file.
const DefaultFile = "aerostream.toml"

// ErrConfig is wrapped by every error Load returns.
var ErrConfig = errors.New("config")

// Options say where Load looks besides the defaults.
type Options struct {
	// File is the --config value. Empty means: AEROSTREAM_CONFIG, else
	// DefaultFile if it exists, else no file.
	File string
	// Env is the environment in os.Environ form.
	Env []string
	// Flags holds what was given on the command line; nil means no flags.
	Flags *Flags
}

// Loaded is the result of Load.
type Loaded struct {
	Config Config
	// File is the config file that was read, "" if none.
	File string
	// Sources maps each key to where its value came from: "default",
	// "file PATH", "env NAME" or "flag --NAME".
	Sources map[string]string
	// UnknownEnv names AEROSTREAM_* variables that set no key. They are
	// logged, not refused, because other tools (test harnesses, wrappers)
	// share the prefix.
	UnknownEnv []string
}

// Load builds the configuration: defaults, then the file, then the
// environment, then flags, then validation. Every error is one line, names
// the key and wraps ErrConfig.
func Load(opts Options) (*Loaded, error) {
	l := &Loaded{Config: Default(), Sources: map[string]string{}}
	for _, k := range keys {
		l.Sources[k.Name] = "default"
	}
	env := envMap(opts.Env)

	file := opts.File
	if file == "" {
		file = env[EnvConfigFile]
	}
	if file == "" {
		if _, err := os.Stat(DefaultFile); err == nil {
			file = DefaultFile
		}
	}
	if file != "" {
		if err := l.readFile(file); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, oneLine(err))
		}
		l.File = file
	}

	for _, k := range keys {
		v, ok := env[k.Env]
		if !ok {
			continue
		}
		if err := k.set(&l.Config, v); err != nil {
			return nil, fmt.Errorf("%w: %s (env %s): %v", ErrConfig, k.Name, k.Env, err)
		}
		l.Sources[k.Name] = "env " + k.Env
	}
	known := map[string]bool{EnvConfigFile: true, EnvBootstrapPassword: true}
	for _, k := range keys {
		known[k.Env] = true
	}
	for name := range env {
		if strings.HasPrefix(name, EnvPrefix) && !known[name] {
			l.UnknownEnv = append(l.UnknownEnv, name)
		}
	}
	sort.Strings(l.UnknownEnv)

	if opts.Flags != nil {
		for _, k := range keys {
			s := opts.Flags.slots[k.Name]
			if s == nil || !s.set {
				continue
			}
			if err := k.set(&l.Config, s.value); err != nil {
				return nil, fmt.Errorf("%w: %s (flag --%s): %v", ErrConfig, k.Name, s.flag, err)
			}
			l.Sources[k.Name] = "flag --" + s.flag
		}
	}

	if errs := l.Config.validate(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = fmt.Sprintf("%s = %s (%s): %s", e.key, e.value, l.Sources[e.key], e.msg)
		}
		return nil, fmt.Errorf("%w: %s", ErrConfig, strings.Join(msgs, "; "))
	}
	return l, nil
}

// readFile decodes path over l.Config. Keys the file does not set keep
// their defaults.
func (l *Loaded) readFile(path string) error {
	md, err := toml.DecodeFile(path, &l.Config)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: %v", path, pe.Error())
		}
		return err // *fs.PathError already names the file
	}
	if und := md.Undecoded(); len(und) > 0 {
		return fmt.Errorf("%s: unknown key %q", path, und[0].String())
	}
	// The decoder matches keys case-insensitively; the documented spelling
	// is the only one we accept, so that a key reads the same in the file,
	// the README and the flag.
	known := map[string]bool{}
	for _, s := range Sections() {
		known[s] = true
	}
	for _, k := range keys {
		known[k.Name] = true
	}
	for _, k := range md.Keys() {
		if !known[k.String()] {
			return fmt.Errorf("%s: unknown key %q", path, k.String())
		}
	}
	for _, k := range keys {
		if md.IsDefined(strings.Split(k.Name, ".")...) {
			l.Sources[k.Name] = "file " + path
		}
	}
	return nil
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Flags are the command-line flags of a daemon subcommand: --config, one
// --section.key flag per key, and the short listener and data-dir aliases
// that DESIGN §1 promises.
type Flags struct {
	// File is the value of --config.
	File  string
	slots map[string]*flagSlot
}

// Aliases maps each short flag to the key it sets.
var Aliases = []struct{ Flag, Key string }{
	{"data-dir", "data_dir"},
	{"kafka-listen", "listeners.kafka"},
	{"native-listen", "listeners.native"},
	{"http-listen", "listeners.http"},
	{"controller-listen", "listeners.controller"},
	{"ring-listen", "listeners.ring"},
	{"schema-registry-listen", "listeners.schema_registry"},
}

type flagSlot struct {
	key   Key
	value string
	set   bool
	flag  string // the flag name that set value last
}

// flagValue is a pflag.Value bound to one flag name. A key and its alias
// share a slot, so the last one on the command line wins, as with any flag
// given twice.
type flagValue struct {
	slot *flagSlot
	name string
}

func (v *flagValue) String() string { return v.slot.value }
func (v *flagValue) Type() string   { return v.slot.key.TypeName() }
func (v *flagValue) Set(s string) error {
	var scratch Config
	if err := v.slot.key.set(&scratch, s); err != nil {
		return err
	}
	v.slot.value, v.slot.set, v.slot.flag = s, true, v.name
	return nil
}

func (f *Flags) slot(name string) *flagSlot {
	if s := f.slots[name]; s != nil {
		return s
	}
	k, ok := Lookup(name)
	if !ok {
		panic("config: flag for unknown key " + name)
	}
	s := &flagSlot{key: k, value: k.Default()}
	f.slots[name] = s
	return s
}

// AddFlags registers the configuration flags on fs.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{slots: map[string]*flagSlot{}}
	fs.StringVar(&f.File, "config", "", "config file (default: $"+EnvConfigFile+", else ./"+DefaultFile+" if present)")
	// The short aliases first: they are what most command lines use.
	for _, a := range Aliases {
		s := f.slot(a.Key)
		fs.Var(&flagValue{slot: s, name: a.Flag}, a.Flag, "same as --"+a.Key)
	}
	for _, k := range keys {
		s := f.slot(k.Name)
		fl := fs.VarPF(&flagValue{slot: s, name: k.Flag}, k.Flag, "", k.Help+" (env "+k.Env+")")
		if k.Kind == reflect.Bool {
			fl.NoOptDefVal = "true"
		}
	}
	return f
}
